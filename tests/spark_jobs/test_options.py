"""Option parsing and range splitting of the ``weir`` source: pure functions, no cluster."""

from __future__ import annotations

from itertools import pairwise

import pytest

from spark_jobs.offsets import OffsetRange, from_json_offsets, split_ranges, to_json_offsets
from spark_jobs.options import EARLIEST, LATEST, SourceOptionError, SourceOptions

BOOT = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def test_defaults_follow_spark_batch_earliest_to_latest_streaming_latest() -> None:
    batch = SourceOptions.parse({**BOOT, "subscribe": "a, b"}, streaming=False)
    assert batch.topics == ("a", "b")
    assert (batch.starting.kind, batch.ending.kind) == ("earliest", "latest")
    assert not batch.include_headers
    stream = SourceOptions.parse({**BOOT, "subscribe": "a"}, streaming=True)
    assert stream.starting.kind == "latest"


def test_option_names_are_case_insensitive_and_kafka_options_pass_through() -> None:
    opts = SourceOptions.parse(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubscribePattern": "t.*",
            "kafka.fetch.max.bytes": "1000",
            "includeheaders": "TRUE",
        },
        streaming=False,
    )
    assert opts.bootstrap_servers == "h:1"
    assert opts.pattern == "t.*"
    assert opts.kafka == {"fetch.max.bytes": "1000"}
    assert opts.include_headers


def test_json_offsets_keep_spark_sentinels() -> None:
    opts = SourceOptions.parse(
        {
            **BOOT,
            "assign": '{"t": [1, 0]}',
            "startingOffsets": '{"t": {"0": 23, "1": -2}}',
            "endingOffsets": '{"t": {"0": 50, "1": -1}}',
        },
        streaming=False,
    )
    assert opts.assign == {"t": (0, 1)}
    assert opts.starting.offsets == {"t": {0: 23, 1: EARLIEST}}
    assert opts.ending.offsets == {"t": {0: 50, 1: LATEST}}


def test_starting_timestamp_wins_over_starting_offsets() -> None:
    opts = SourceOptions.parse(
        {**BOOT, "subscribe": "t", "startingOffsets": "earliest", "startingTimestamp": "1000"},
        streaming=False,
    )
    assert (opts.starting.kind, opts.starting.timestamp) == ("timestamp", 1000)


@pytest.mark.parametrize(
    ("options", "streaming", "names"),
    [
        ({"subscribe": "t"}, False, "kafka.bootstrap.servers"),
        (BOOT, False, "subscribe, subscribePattern, assign"),
        ({**BOOT, "subscribe": "t", "assign": '{"t":[0]}'}, False, "subscribe, assign"),
        ({**BOOT, "subscribe": "t", "startingOffsets": "latest"}, False, "startingOffsets"),
        ({**BOOT, "subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'}, False, "startingOffsets"),
        ({**BOOT, "subscribe": "t", "endingOffsets": "earliest"}, False, "endingOffsets"),
        ({**BOOT, "subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'}, False, "endingOffsets"),
        ({**BOOT, "subscribe": "t", "endingOffsets": "latest"}, True, "endingOffsets"),
        ({**BOOT, "assign": "[0, 1]"}, False, "assign"),
        ({**BOOT, "assign": "{not json"}, False, "assign"),
        ({**BOOT, "subscribePattern": "("}, False, "subscribePattern"),
        ({**BOOT, "subscribe": "t", "minPartitions": "0"}, False, "minPartitions"),
        ({**BOOT, "subscribe": "t", "includeHeaders": "yes"}, False, "includeHeaders"),
        (
            {**BOOT, "subscribe": "t", "kafka.auto.offset.reset": "earliest"},
            False,
            "startingOffsets",
        ),
        ({**BOOT, "subscribe": "t", "startingTimestamp": "soon"}, False, "startingTimestamp"),
        (
            {**BOOT, "subscribe": "t", "kafka.isolation.level": "read_committed"},
            False,
            "kafka.isolation.level",
        ),
    ],
)
def test_bad_options_name_the_option(options: dict, streaming: bool, names: str) -> None:
    with pytest.raises(SourceOptionError, match=names):
        SourceOptions.parse(options, streaming=streaming)


def test_split_respects_max_records_and_covers_every_offset_once() -> None:
    ranges = [OffsetRange("t", 0, 10, 1010), OffsetRange("t", 1, 5, 5), OffsetRange("t", 2, 0, 7)]
    pieces = split_ranges(ranges, min_partitions=None, max_records=300)
    assert [p for p in pieces if p.partition == 2] == [OffsetRange("t", 2, 0, 7)]
    zero = [p for p in pieces if p.partition == 0]
    assert len(zero) == 4 and all(p.size <= 300 for p in zero)
    assert zero[0].start == 10 and zero[-1].end == 1010
    assert all(a.end == b.start for a, b in pairwise(zero))


def test_min_partitions_cuts_ranges_in_proportion_to_size() -> None:
    ranges = [OffsetRange("t", 0, 0, 900), OffsetRange("t", 1, 0, 100)]
    pieces = split_ranges(ranges, min_partitions=10, max_records=100_000)
    assert sum(1 for p in pieces if p.partition == 0) == 9
    assert sum(1 for p in pieces if p.partition == 1) == 1
    assert sum(p.size for p in pieces) == 1000


def test_json_offsets_round_trip() -> None:
    offsets = {("a", 0): 5, ("a", 10): 7, ("b", 1): 0}
    as_json = to_json_offsets(offsets)
    assert as_json == {"a": {"0": 5, "10": 7}, "b": {"1": 0}}
    assert from_json_offsets(as_json) == offsets


def test_readers_are_read_uncommitted_as_sparks_are() -> None:
    from spark_jobs.fetch import consumer_config

    options = SourceOptions.parse({**BOOT, "subscribe": "t"}, streaming=False)
    assert consumer_config(options)["isolation.level"] == "read_uncommitted"
    explicit = {**BOOT, "subscribe": "t", "kafka.isolation.level": "read_uncommitted"}
    assert SourceOptions.parse(explicit, streaming=False).kafka["isolation.level"] == (
        "read_uncommitted"
    )

"""ListOffsets support: offset_for_timestamp and max_timestamp_offset at record level."""

from __future__ import annotations

import random

import pytest

from weir.log.log import Log, LogConfig

from .conftest import COMPRESSORS, START_MS, FakeClock, LogFactory, append, make_batch

CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=300)


def build(log: Log, codec: str, batches: int = 30, seed: int = 7) -> list[tuple[int, int]]:
    """Append batches whose record timestamps wander up and down; returns (offset, ts)."""
    rng = random.Random(seed)
    records: list[tuple[int, int]] = []
    clock_ts = START_MS
    for _ in range(batches):
        count = rng.randint(1, 6)
        timestamps = []
        for _ in range(count):
            clock_ts += rng.randint(0, 40)
            timestamps.append(clock_ts - rng.randint(0, 100))  # some out of order
        values = [rng.randbytes(rng.randint(5, 120)) for _ in range(count)]
        result = append(log, make_batch(values, timestamps=timestamps, codec=codec))
        records += [(result.base_offset + i, ts) for i, ts in enumerate(timestamps)]
    return records


def reference(
    records: list[tuple[int, int]], target: int, start: int = 0
) -> tuple[int, int] | None:
    return next(((o, t) for o, t in records if t >= target and o >= start), None)


@pytest.mark.parametrize("codec", sorted(COMPRESSORS))
def test_offset_for_timestamp_finds_the_first_record_at_or_after_target(
    open_log: LogFactory, codec: str
) -> None:
    log = open_log(CONFIG)
    records = build(log, codec)
    assert len(log.segments) > 2
    timestamps = sorted({t for _, t in records})
    for target in [timestamps[0] - 1, *timestamps, *(t + 1 for t in timestamps)]:
        assert log.offset_for_timestamp(target) == reference(records, target), target


def test_offset_for_timestamp_uses_the_indexes_written_to_disk(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    records = build(log, "lz4")
    log.close()
    log = open_log(CONFIG)
    for _, target in records:
        assert log.offset_for_timestamp(target) == reference(records, target)


def test_offset_for_timestamp_beyond_every_record_is_none(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    records = build(log, "none")
    assert log.offset_for_timestamp(max(t for _, t in records) + 1) is None
    assert open_log.opened[0].offset_for_timestamp(0) == records[0]


def test_offset_for_timestamp_skips_records_below_the_log_start_offset(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    records = build(log, "gzip")
    start = records[len(records) // 2][0] + 1  # mid-batch, mid-segment
    log.delete_records_before(start)
    assert log.offset_for_timestamp(0) == reference(records, 0, start)
    for _, target in records:
        assert log.offset_for_timestamp(target) == reference(records, target, start)


def test_offset_for_timestamp_with_log_append_time_uses_the_append_time(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(LogConfig(message_timestamp_type="LogAppendTime"))
    append(log, make_batch(count=3, timestamps=[9, 8, 7]))
    clock.advance(100)
    append(log, make_batch(count=2, timestamps=[1, 2], codec="snappy"))
    assert log.offset_for_timestamp(0) == (0, START_MS)
    assert log.offset_for_timestamp(START_MS + 1) == (3, START_MS + 100)


@pytest.mark.parametrize("codec", ["none", "zstd", "snappy-xerial"])
def test_max_timestamp_offset_is_the_first_record_with_the_largest_timestamp(
    open_log: LogFactory, codec: str
) -> None:
    log = open_log(CONFIG)
    records = build(log, codec)
    best = max(t for _, t in records)
    assert log.max_timestamp_offset() == next((o, t) for o, t in records if t == best)


def test_max_timestamp_offset_of_an_empty_log_is_none(open_log: LogFactory) -> None:
    assert open_log().max_timestamp_offset() is None
    assert open_log.opened[0].offset_for_timestamp(0) is None

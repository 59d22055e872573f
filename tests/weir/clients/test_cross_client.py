"""Every client reads what every other client wrote, in every codec, through one broker.

Each writer (confluent-kafka, kafka-python, aiokafka, kcat) fills its own topic with one
chunk of records per codec; each reader then verifies every record: offset, key, value,
headers and CreateTime timestamp (kcat cannot set timestamps, so its records are checked
against the wall clock around the write). Null keys and tombstones come from the writers
that can express them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import pytest

from tests.weir.clients.helpers import (
    CODEC_IDS,
    CODECS,
    Rec,
    consume_aiokafka,
    consume_confluent,
    consume_kafka_python,
    consume_kcat,
    create_topic,
    make_records,
    produce_aiokafka,
    produce_confluent,
    produce_kafka_python,
    produce_kcat,
    stored_batches,
)
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration

PER_CODEC = 60
WRITERS: dict[str, Callable[..., object]] = {
    "confluent": produce_confluent,
    "kafka_python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
    "kcat": produce_kcat,
}
READERS: dict[str, Callable[[str, str, int], list[tuple[int, Rec]]]] = {
    "confluent": consume_confluent,
    "kafka_python": consume_kafka_python,
    "aiokafka": consume_aiokafka,
    "kcat": lambda bootstrap, topic, _count: consume_kcat(bootstrap, topic),
}


@dataclass(frozen=True)
class Written:
    writer: str
    topic: str
    expected: list[Rec]
    # Offsets written per codec, and the wall-clock window for writers that cannot stamp.
    chunks: dict[str, range]
    wall_clock: tuple[int, int] | None


def chunk_records(writer: str, codec: str, index: int) -> list[Rec]:
    base = 1_700_000_000_000 + index * 10_000
    if writer == "kcat":  # one set of headers per run, no nulls
        headers = (("writer", b"kcat"), ("codec", codec.encode()))
        return make_records(
            f"kcat-{codec}",
            PER_CODEC,
            base_timestamp=base,
            headers=headers,
            null_keys=False,
            tombstones=False,
        )
    return make_records(f"{writer}-{codec}", PER_CODEC, base_timestamp=base)


def write(broker: ThreadedBroker, writer: str) -> Written:
    topic = create_topic(broker.bootstrap, f"cross-{writer}")
    expected: list[Rec] = []
    chunks: dict[str, range] = {}
    before = int(time.time() * 1000)
    for index, codec in enumerate(CODECS):
        records = chunk_records(writer, codec, index)
        offsets = WRITERS[writer](broker.bootstrap, topic, records, codec=codec)
        start = len(expected)
        if offsets is not None:  # kcat does not report offsets
            assert offsets == list(range(start, start + len(records)))
        chunks[codec] = range(start, start + len(records))
        expected += records
    after = int(time.time() * 1000)
    return Written(writer, topic, expected, chunks, (before, after) if writer == "kcat" else None)


@pytest.fixture(scope="module")
def written_by(module_broker: ThreadedBroker) -> Callable[[str], Written]:
    """``written_by(writer)``: that writer's topic, filled on first use."""
    cache: dict[str, Written] = {}

    def get(writer: str) -> Written:
        if writer not in cache:
            cache[writer] = write(module_broker, writer)
        return cache[writer]

    return get


@pytest.mark.parametrize(
    ("writer", "reader"),
    [(w, r) for w in WRITERS for r in READERS],
    ids=[f"{w}-to-{r}" for w in WRITERS for r in READERS],
)
def test_reader_sees_every_record_the_writer_wrote(
    module_broker: ThreadedBroker, written_by: Callable[[str], Written], writer: str, reader: str
) -> None:
    written = written_by(writer)
    received = READERS[reader](module_broker.bootstrap, written.topic, len(written.expected))
    assert [offset for offset, _ in received] == list(range(len(written.expected)))
    records = [rec for _, rec in received]
    if written.wall_clock is not None:
        low, high = written.wall_clock
        assert all(low <= rec.timestamp <= high for rec in records)
        records = [
            replace(rec, timestamp=want.timestamp)
            for rec, want in zip(records, written.expected, strict=True)
        ]
    for offset, (got, want) in enumerate(zip(records, written.expected, strict=True)):
        assert got == want, f"offset {offset}"


# librdkafka 2.0.2 (Debian's kcat) enables gzip/snappy/lz4 only if Produce v0 is advertised
# (librdkafka#4956); otherwise it silently sends uncompressed batches. Weir, like Kafka 4.0,
# starts at Produce v3. (Current librdkafka also wants FindCoordinator for lz4: advertised
# since consumer groups exist, so confluent-kafka's lz4 is checked like every other codec.)
NO_PRODUCE_V0 = pytest.mark.xfail(
    strict=True, reason="no Produce v0 advertised: librdkafka 2.0.2 disables gzip/snappy/lz4"
)
EXPECTED_FALLBACKS = {
    ("kcat", "gzip"): NO_PRODUCE_V0,
    ("kcat", "snappy"): NO_PRODUCE_V0,
    ("kcat", "lz4"): NO_PRODUCE_V0,
}


@pytest.mark.parametrize(
    ("writer", "codec"),
    [
        pytest.param(w, c, marks=EXPECTED_FALLBACKS.get((w, c), ()), id=f"{w}-{c}")
        for w in WRITERS
        for c in CODECS
        if c != "none"
    ],
)
def test_writer_batches_reach_the_disk_in_the_codec_asked_for(
    module_broker: ThreadedBroker, written_by: Callable[[str], Written], writer: str, codec: str
) -> None:
    written = written_by(writer)
    chunk = written.chunks[codec]
    batches = [
        b
        for b in stored_batches(module_broker.data_dir, written.topic)
        if chunk.start <= b.base_offset < chunk.stop
    ]
    assert sum(b.records_count for b in batches) == len(chunk)
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}

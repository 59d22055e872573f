"""A real client reads a compacted partition: librdkafka over a real Weir broker.

confluent-kafka produces keyed records (every codec) to a topic with small segments; the
broker stops, the partition is cleaned on disk, the broker starts again on the same data,
and a consumer reading from offset 0 gets exactly the compacted records at their original
offsets (sparse offsets, batches holding fewer records than their offset range,
recompressed batches).
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from weir.log.cleaner import commit_clean, prepare_clean
from weir.log.log import Log, LogConfig

from ..clients.conftest import BrokerProcess
from ..clients.helpers import Rec, consume_confluent, create_topic, produce_confluent
from .conftest import FakeClock

pytestmark = pytest.mark.integration

CODECS = ("gzip", "snappy", "lz4", "zstd")
SEGMENT_BYTES = 4096


def history(codec: str) -> list[Rec]:
    records = []
    for i in range(300):
        key = None if i % 17 == 16 else b"key-%d" % (i % 11)
        # Incompressible values, so that compressed batches still fill several segments.
        value = None if i % 23 == 22 else random.Random(f"{codec}-{i}").randbytes(60)
        records.append(Rec(key, value, (("i", str(i).encode()),), 1_700_000_000_000 + i))
    return records


def test_confluent_kafka_reads_a_compacted_partition(redis_server: str, tmp_path: Path) -> None:
    broker = BrokerProcess(
        broker_id=1,
        data_dir=tmp_path / "broker-1",
        redis_url=redis_server,
        cluster_id=f"test-{uuid.uuid4().hex[:12]}",
        configs=[],
        log_path=tmp_path / "broker-1.log",
    )
    broker.start()
    written: dict[str, list[tuple[int, Rec]]] = {}
    try:
        for codec in CODECS:
            topic = f"compacted-{codec}"
            create_topic(broker.bootstrap, topic, **{"segment.bytes": str(SEGMENT_BYTES)})
            records = history(codec)
            offsets = produce_confluent(
                broker.bootstrap, topic, records, codec=codec, linger_ms=0, batch_size=1000
            )
            written[codec] = list(zip(offsets, records, strict=True))
    finally:
        assert broker.stop() == 0
    expected: dict[str, list[tuple[int, Rec]]] = {}
    for codec in CODECS:
        directory = broker.data_dir / f"compacted-{codec}-0"
        config = LogConfig(segment_bytes=SEGMENT_BYTES)
        log = Log.open(directory, config=config, time_ms=FakeClock())
        try:
            assert len(log.segments) > 3
            end = log.active_segment.base_offset
            commit_clean(
                log,
                prepare_clean(log, clean_offset=0, end_offset=end, now_ms=0, delete_retention_ms=1),
            )
        finally:
            log.close()
        latest = {rec.key: offset for offset, rec in written[codec] if offset < end}
        expected[codec] = [
            (offset, rec)
            for offset, rec in written[codec]
            if offset >= end or rec.key is None or latest[rec.key] == offset
        ]
        assert len(expected[codec]) < len(written[codec])
    broker.start()
    try:
        for codec in CODECS:
            got = consume_confluent(broker.bootstrap, f"compacted-{codec}", len(expected[codec]))
            assert got == expected[codec], codec
    finally:
        broker.stop()

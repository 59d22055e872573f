"""compression.type: the leader keeps the producer's codec or recompresses to the topic's.

Kafka's LogValidator: ``producer`` (the default) keeps each batch as produced; a codec makes
the broker write every batch in that codec, keeping offsets, timestamps and producer fields.
A batch already in the topic's codec is never decoded.
"""

from __future__ import annotations

import random

import crc32c
import pytest

from weir.log.errors import InvalidRecordError, RecordTooLargeError
from weir.log.log import LogConfig
from weir.protocol.inflate import iter_records
from weir.protocol.records import BatchHeader, iter_batches

from .conftest import START_MS, LogFactory, append, disk_headers, make_batch, payload

SOURCES = ("none", "gzip", "snappy", "snappy-xerial", "lz4", "zstd")
TARGETS = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TIMESTAMPS = [START_MS + 50, START_MS, START_MS + 20, START_MS - 5]  # out of order


def _records(log_bytes: bytes) -> list[tuple[int, int, bytes | None, bytes | None]]:
    return [
        (r.offset, r.timestamp, r.key, r.value)
        for position, _ in iter_batches(log_bytes)
        for r in iter_records(log_bytes, position)
    ]


def _batch(codec: str, sequence: int = 0) -> bytes:
    values = [b"value-%d " % i * 20 for i in range(len(TIMESTAMPS))]
    keys = [b"k%d" % i for i in range(len(TIMESTAMPS))]
    return make_batch(
        values,
        keys=keys,
        timestamps=TIMESTAMPS,
        codec=codec,
        producer_id=7,
        producer_epoch=3,
        base_sequence=sequence,
    )


def _fields(header: BatchHeader) -> tuple[int, ...]:
    """What recompression must keep (everything but the codec bits, length and CRC)."""
    return (
        header.base_offset,
        header.partition_leader_epoch,
        header.attributes & ~0x07,
        header.last_offset_delta,
        header.base_timestamp,
        header.max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        header.records_count,
    )


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("source", SOURCES)
def test_a_topic_codec_recompresses_keeping_offsets_timestamps_and_producer(
    open_log: LogFactory, source: str, target: str
) -> None:
    reference = open_log(LogConfig())
    append(reference, _batch("none"), epoch=4)  # one batch first: base offsets above zero
    append(reference, _batch(source, 4), epoch=4)
    expected_records = _records(reference.active_segment.log_path.read_bytes())
    expected_fields = [_fields(h) for h in disk_headers(reference)]
    reference.close()
    for path in reference.directory.iterdir():
        path.unlink()

    log = open_log(LogConfig(compression_type=target))
    append(log, _batch("none"), epoch=4)
    result = append(log, _batch(source, 4), epoch=4)

    assert result.base_offset == len(TIMESTAMPS)
    headers = disk_headers(log)
    assert [h.compression for h in headers] == [TARGETS[target]] * 2
    assert [_fields(h) for h in headers] == expected_fields
    assert _records(log.active_segment.log_path.read_bytes()) == expected_records
    # The idempotent producer's state follows the recompressed batch: a retry is a duplicate.
    assert append(log, _batch(source, 4), epoch=4).duplicate


def test_producer_and_a_matching_codec_write_the_batch_as_produced(
    open_log: LogFactory,
) -> None:
    """Nothing is decoded: a batch whose records section is not valid for its codec (its
    CRC is right) is stored byte for byte, as the produce path always stored it."""
    garbage = make_batch([b"x" * 40], codec="none")
    garbage = _with_codec(garbage, 3)  # claims lz4, holds raw records
    for config in (LogConfig(), LogConfig(compression_type="lz4")):
        log = open_log(config)
        append(log, garbage)
        # From the magic byte on (the leader stamps base offset and leader epoch before it).
        assert log.active_segment.log_path.read_bytes()[16:] == garbage[16:]
        log.close()
        for path in log.directory.iterdir():
            path.unlink()
    log = open_log(LogConfig(compression_type="gzip"))
    with pytest.raises(InvalidRecordError, match="cannot recompress"):
        append(log, garbage)
    assert log.log_end_offset == 0


def _with_codec(batch: bytes, codec: int) -> bytes:
    """``batch`` with its codec bits set to ``codec`` and its CRC fixed."""
    out = bytearray(batch)
    out[22] = (out[22] & ~0x07) | codec
    out[17:21] = crc32c.crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def test_recompression_that_outgrows_max_message_bytes_is_message_too_large(
    open_log: LogFactory,
) -> None:
    """Kafka checks the sizes again after validation changed them."""
    batch = make_batch([random.Random(1).randbytes(2000)], codec="none")
    log = open_log(LogConfig(compression_type="gzip", max_message_bytes=len(batch)))
    buf, parsed = payload(batch)
    with pytest.raises(RecordTooLargeError, match=r"exceeds max\.message\.bytes"):
        log.append(buf, parsed, leader_epoch=0)
    assert log.log_end_offset == 0

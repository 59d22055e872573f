"""Record batches (magic v2) as the broker sees them: opaque bytes with a parsed header.

Theory of operation
-------------------
The broker never decodes the records inside a batch on the produce or fetch path. It reads
the fixed 61-byte header, checks the CRC-32C (which covers everything from ``attributes`` to
the end of the batch), stamps the fields the broker owns (``baseOffset`` and
``partitionLeaderEpoch``, both outside the CRC'd region) and stores the bytes as received, so
every compression codec passes through untouched. Only ``LogAppendTime`` topics rewrite a
CRC'd field (``maxTimestamp`` and the timestamp-type bit), and then the CRC is recomputed.

Layout (big-endian)::

    offset  size  field
         0     8  baseOffset
         8     4  batchLength            (bytes after this field)
        12     4  partitionLeaderEpoch
        16     1  magic                  (2)
        17     4  crc                    (CRC-32C of bytes 21..end)
        21     2  attributes             (bits 0-2 codec, 3 timestampType, 4 txn, 5 control)
        23     4  lastOffsetDelta
        27     8  baseTimestamp
        35     8  maxTimestamp
        43     8  producerId
        51     2  producerEpoch
        53     4  baseSequence
        57     4  recordsCount
        61        records...
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "BatchHeader",
    "CorruptBatchError",
    "compute_crc",
    "iter_batches",
    "parse_header",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "validate_batches",
]

BATCH_HEADER_SIZE = 61
# baseOffset + batchLength: the bytes in front of ``batchLength``'s count.
LOG_OVERHEAD = 12
CRC_START = 21
MAGIC_V2 = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class CorruptBatchError(ValueError):
    """A record batch failed framing, magic or CRC checks (Kafka's CORRUPT_MESSAGE)."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The 61-byte header of a v2 record batch, plus where it sits in its buffer."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Total bytes of the batch on the wire and on disk."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        # Sequences wrap at int32 max, as in Kafka's DefaultRecordBatch.
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def parse_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header of the batch starting at ``pos``; raises CorruptBatchError."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise CorruptBatchError(
            f"record batch header at byte {pos} is truncated "
            f"({len(buf) - pos} of {BATCH_HEADER_SIZE} bytes)"
        )
    header = BatchHeader(*_HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC_V2:
        raise CorruptBatchError(
            f"record batch at byte {pos} has magic {header.magic}; only v2 is supported"
        )
    if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptBatchError(
            f"record batch at byte {pos} declares length {header.batch_length}, "
            f"below the header size"
        )
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptBatchError(f"record batch at byte {pos} has negative counts")
    return header


def compute_crc(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC-32C over the CRC'd region of the batch at ``pos`` that is ``size`` bytes long."""
    view = memoryview(buf)[pos + CRC_START : pos + size]
    return crc32c.crc32c(view)


def iter_batches(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = True, start: int = 0
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each whole batch in ``buf``.

    Raises CorruptBatchError on a truncated batch, a bad magic byte or (with
    ``check_crc``) a CRC mismatch, naming the byte position.
    """
    pos = start
    end = len(buf)
    while pos < end:
        header = parse_header(buf, pos)
        size = header.size
        if pos + size > end:
            raise CorruptBatchError(
                f"record batch at byte {pos} is truncated ({end - pos} of {size} bytes)"
            )
        if check_crc and compute_crc(buf, pos, size) != header.crc:
            raise CorruptBatchError(f"record batch at byte {pos} failed its CRC-32C check")
        yield pos, header
        pos += size


def validate_batches(buf: bytes | bytearray | memoryview) -> list[tuple[int, BatchHeader]]:
    """All batches of a produce payload, checked; an empty payload is corrupt too."""
    batches = list(iter_batches(buf))
    if not batches:
        raise CorruptBatchError("produce payload holds no record batch")
    return batches


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Stamp ``baseOffset`` in place (outside the CRC'd region)."""
    _I64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Stamp ``partitionLeaderEpoch`` in place (outside the CRC'd region)."""
    _I32.pack_into(buf, pos + 12, epoch)


def set_log_append_time(
    buf: bytearray | memoryview, pos: int, size: int, timestamp_ms: int
) -> None:
    """Mark the batch LogAppendTime with ``timestamp_ms`` and recompute its CRC.

    Kafka keeps the records' own timestamp deltas and sets ``maxTimestamp`` (which
    consumers then read as every record's timestamp) plus the timestamp-type bit.
    """
    (attributes,) = _I16.unpack_from(buf, pos + 21)
    _I16.pack_into(buf, pos + 21, attributes | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + 35, timestamp_ms)
    _U32.pack_into(buf, pos + 17, compute_crc(buf, pos, size))

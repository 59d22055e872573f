"""Inflating record batches: decompress and decode the records inside a v2 batch.

Theory of operation
-------------------
Storage keeps batches *deflated* (wire bytes). A few features must look inside one batch:
ListOffsets by timestamp needs each record's timestamp, and later compaction and the REST
proxy need keys and values. This module is that one place. It never runs on the produce or
fetch path.

Records section (after the 61-byte batch header, compressed as a whole when the codec bits
are set; varints are zigzag-encoded as in protobuf)::

    length          varint   bytes of the record after this field
    attributes      int8     (unused)
    timestampDelta  varlong  timestamp - batch baseTimestamp
    offsetDelta     varint   offset - batch baseOffset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value
    value           bytes
    headerCount     varint
    headers         [keyLength varint, key, valueLength varint, value] * headerCount

Codecs: 1 gzip, 2 snappy (raw, or the xerial framing the Java client writes), 3 lz4 (frame
format), 4 zstd. For LogAppendTime batches every record's timestamp is the batch's
``maxTimestamp``, as Kafka's consumers read it.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import cramjam

from weir.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    parse_header,
)

__all__ = [
    "CODEC_GZIP",
    "CODEC_LZ4",
    "CODEC_NONE",
    "CODEC_SNAPPY",
    "CODEC_ZSTD",
    "Record",
    "RecordPlace",
    "decompress",
    "iter_offsets_and_timestamps",
    "iter_records",
    "read_varint",
    "records_section",
    "walk_records",
]

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic + version int32 + compatible-version int32
_U32 = struct.Struct(">I")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def _snappy_decompress(data: bytes | memoryview) -> bytes:
    if bytes(data[: len(_XERIAL_MAGIC)]) != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(data))
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    end = len(data)
    while pos < end:
        if end - pos < 4:
            raise CorruptBatchError("xerial snappy block length is truncated")
        (size,) = _U32.unpack_from(data, pos)
        pos += 4
        if pos + size > end:
            raise CorruptBatchError("xerial snappy block is truncated")
        out += cramjam.snappy.decompress_raw(data[pos : pos + size])
        pos += size
    return bytes(out)


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """Decompress a records section compressed with ``codec``; CorruptBatchError on failure."""
    try:
        if codec == CODEC_NONE:
            return bytes(data)
        if codec == CODEC_GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == CODEC_SNAPPY:
            return _snappy_decompress(data)
        if codec == CODEC_LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == CODEC_ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise CorruptBatchError(f"cannot decompress records (codec {codec}): {exc}") from exc
    raise CorruptBatchError(f"unknown compression codec {codec}")


def records_section(batch: bytes | memoryview, header: BatchHeader, pos: int = 0) -> bytes:
    """The decompressed records of the batch at ``pos`` in ``batch``."""
    body = memoryview(batch)[pos + BATCH_HEADER_SIZE : pos + header.size]
    return decompress(header.compression, body)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zigzag varint/varlong at ``pos``; returns ``(value, next position)``."""
    result = 0
    shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise CorruptBatchError(f"varint at byte {pos} is longer than 10 bytes")


def _blob(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(buf):
        raise CorruptBatchError(f"record field at byte {pos} overruns the batch")
    return buf[pos:end], end


def _walk(batch: bytes | memoryview, pos: int, decode: Callable[[RecordPlace], T]) -> Iterator[T]:
    """``walk_records`` over the batch at ``pos``; a record cut short is a
    ``CorruptBatchError``."""
    header = parse_header(batch, pos)
    data = records_section(batch, header, pos)
    try:
        yield from walk_records(data, header, decode)
    except IndexError as exc:
        raise CorruptBatchError(
            f"records of the batch at offset {header.base_offset} are truncated"
        ) from exc


def walk_records(
    data: bytes, header: BatchHeader, decode: Callable[[RecordPlace], T]
) -> Iterator[T]:
    """``decode`` applied to each record of a decompressed records section, in order.

    The record's length, timestamp and offset deltas are read here (the one reading of the
    record framing); ``decode`` reads what it needs from ``at`` (the key length) on. A
    record cut short raises ``IndexError``: each caller says what that means to it.
    """
    cursor = 0
    for _ in range(header.records_count):
        length, body = read_varint(data, cursor)
        timestamp_delta, at = read_varint(data, body + 1)  # past the attributes byte
        offset_delta, at = read_varint(data, at)
        start, cursor = cursor, body + length
        yield decode(
            RecordPlace(data, header, offset_delta, timestamp_delta, start, body, at, cursor)
        )


@dataclass(frozen=True, slots=True)
class RecordPlace:
    """Where one record stands in a decompressed records section, and its deltas."""

    data: bytes
    header: BatchHeader
    offset_delta: int
    timestamp_delta: int
    start: int
    """Start of the record (its length varint)."""
    body: int
    """Start of the record after its length."""
    at: int
    """Start of the key length."""
    end: int

    @property
    def offset(self) -> int:
        return self.header.base_offset + self.offset_delta

    @property
    def timestamp(self) -> int:
        """As consumers read it: the batch's max timestamp for LogAppendTime batches."""
        if self.header.is_log_append_time:
            return self.header.max_timestamp
        return self.header.base_timestamp + self.timestamp_delta


def iter_offsets_and_timestamps(
    batch: bytes | memoryview, pos: int = 0
) -> Iterator[tuple[int, int]]:
    """Yield ``(offset, timestamp)`` of each record of the batch at ``pos``, in order.

    Only the fields in front of the key are decoded; each record is then skipped by its
    length, so this is cheap even for large values.
    """
    return _walk(batch, pos, lambda place: (place.offset, place.timestamp))


def iter_records(batch: bytes | memoryview, pos: int = 0) -> Iterator[Record]:
    """Yield every record of the batch at ``pos``, fully decoded."""
    return _walk(batch, pos, _decode)


def _decode(place: RecordPlace) -> Record:
    data, at = place.data, place.at
    key, at = _blob(data, at)
    value, at = _blob(data, at)
    count, at = read_varint(data, at)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        name, at = _blob(data, at)
        header_value, at = _blob(data, at)
        headers.append(((name or b"").decode("utf-8", "replace"), header_value))
    if at != place.end:
        raise CorruptBatchError(
            f"record at offset {place.offset} declares "
            f"{place.end - place.body} bytes but holds {at - place.body}"
        )
    return Record(
        offset=place.offset,
        timestamp=place.timestamp,
        key=key,
        value=value,
        headers=tuple(headers),
    )

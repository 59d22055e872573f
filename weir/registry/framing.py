"""Confluent's wire framing of a record's key or value (pure; no I/O, only ``struct``, so
Spark's Python workers import it without the registry's parsers).

Confluent's serializers (and every client that speaks Schema Registry) write::

    byte 0      magic byte, always 0
    bytes 1-4   the schema's global id, big-endian signed 32-bit
    PROTOBUF    the message indexes: a zigzag varint count, then that many zigzag varints,
                the path from the file's top-level messages to the record's message
                (a single 0 byte is the shorthand for ``[0]``, the file's first message)
    rest        the payload: Avro binary, JSON text or Protobuf binary

:func:`parse_frame` returns the id, the indexes and the payload, or raises
:class:`NotFramed` saying what is wrong with the bytes; it never looks inside the payload.
:func:`frame` builds the same bytes (tests, and anyone producing framed records by hand).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAGIC",
    "Frame",
    "NotFramed",
    "frame",
    "message_indexes",
    "parse_frame",
    "read_message_indexes",
]

MAGIC = 0
_HEADER = struct.Struct(">bi")  # magic byte, schema id


class NotFramed(ValueError):
    """The bytes are not a Confluent-framed record."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One framed record: the schema it names and its payload."""

    schema_id: int
    payload: bytes
    indexes: tuple[int, ...] = ()  # PROTOBUF only: the message's path in the file


def parse_frame(data: bytes | None, *, protobuf: bool = False) -> Frame:
    """Split ``data`` into schema id, message indexes (``protobuf=True``) and payload."""
    if data is None:
        raise NotFramed("the record has no bytes (null)")
    data = bytes(data)
    if len(data) < _HEADER.size:
        raise NotFramed(f"{len(data)} bytes are too few for Confluent's 5-byte header")
    magic, schema_id = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise NotFramed(f"the first byte is {data[0]}, not Confluent's magic byte 0")
    pos = _HEADER.size
    indexes: tuple[int, ...] = ()
    if protobuf:
        indexes, pos = read_message_indexes(data, pos)
    return Frame(schema_id, data[pos:], indexes)


def frame(schema_id: int, payload: bytes, indexes: Sequence[int] | None = None) -> bytes:
    """Confluent's framing of ``payload``; ``indexes`` only for PROTOBUF (``[0]`` → 0 byte)."""
    head = _HEADER.pack(MAGIC, schema_id)
    return head + payload if indexes is None else head + message_indexes(indexes) + payload


def message_indexes(indexes: Sequence[int]) -> bytes:
    """Confluent's encoding of a Protobuf message's path in its file: ``[0]`` (the first
    message) is the single byte 0, anything else the count and each index, zigzag varints."""
    if list(indexes) == [0]:
        return b"\x00"
    return _put_zigzag(len(indexes)) + b"".join(_put_zigzag(i) for i in indexes)


def read_message_indexes(data: bytes, pos: int) -> tuple[tuple[int, ...], int]:
    """The message indexes starting at ``pos`` and the position after them;
    :class:`NotFramed` when they are truncated or impossible."""
    count, pos = _zigzag_varint(data, pos)
    if count < 0 or count > len(data):
        raise NotFramed(f"message index count {count} is impossible")
    if count == 0:
        return (0,), pos  # the shorthand: the file's first message
    found = []
    for _ in range(count):
        index, pos = _zigzag_varint(data, pos)
        found.append(index)
    return tuple(found), pos


def _zigzag_varint(data: bytes, pos: int) -> tuple[int, int]:
    """One zigzag-encoded varint at ``pos`` (as Java's ``ByteUtils.readVarint``)."""
    shift = 0
    raw = 0
    while True:
        if pos >= len(data):
            raise NotFramed("the message indexes run past the end of the record")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 28:
            raise NotFramed("a message index varint is longer than 5 bytes")


def _put_zigzag(value: int) -> bytes:
    raw = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while raw & ~0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)

"""The Produce request body (v3-v9) read without copying its record batches.

kio's native readers return every ``bytes`` field as a new ``bytes`` object, so decoding a
Produce request with kio copies each payload once more than the broker needs: the log must
stamp ``baseOffset`` into the batches anyway, and a ``bytes`` copy is read-only. This reader
walks the same fields kio would (the schema is small and stable: a transactional id, acks,
the timeout, then topics of partitions of records) and hands each partition's ``records`` as
a ``memoryview`` slice of the frame. Given a ``bytearray`` frame the view is writable and
the log stamps and writes it in place. Everything else comes out as kio's own entities, so
handlers cannot tell the difference.

Malformed input raises ``ValueError`` (the codec turns it into ``ProtocolError``). Tagged
fields (v9) are skipped: Produce defines none. ``tests/weir/protocol`` checks the result
against kio's decoding for every captured client frame and every truncation of them.
"""

from __future__ import annotations

import struct
import sys
from datetime import timedelta
from functools import cache
from typing import Any

from kio.index import load_request_schema

from weir.protocol.api_keys import ApiKey

__all__ = ["FIRST_FLEXIBLE_VERSION", "read_produce_request"]

FIRST_FLEXIBLE_VERSION = 9
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")


@cache
def _types(version: int) -> tuple[Any, Any, Any]:
    request = load_request_schema(ApiKey.PRODUCE, version)
    module = sys.modules[request.__module__]
    return request, module.TopicProduceData, module.PartitionProduceData


class _Reader:
    """A cursor over one frame; every read checks the bounds."""

    __slots__ = ("end", "pos", "view")

    def __init__(self, view: memoryview, pos: int) -> None:
        self.view = view
        self.pos = pos
        self.end = len(view)

    def take(self, size: int) -> memoryview:
        start = self.pos
        if size < 0 or start + size > self.end:
            raise ValueError(f"field of {size} bytes at byte {start} overruns the frame")
        self.pos = start + size
        return self.view[start : self.pos]

    def int16(self) -> int:
        return _I16.unpack(self.take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self.take(4))[0]

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            (byte,) = self.take(1)
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError(f"unsigned varint at byte {self.pos} is too long")

    def string(self, flexible: bool, *, nullable: bool = False) -> str | None:
        size = self.uvarint() - 1 if flexible else self.int16()
        if size < 0:
            if size == -1 and nullable:
                return None
            raise ValueError(f"string length {size} at byte {self.pos}")
        return str(self.take(size), "utf-8")

    def array_length(self, flexible: bool) -> int:
        size = self.uvarint() - 1 if flexible else self.int32()
        if size < 0:
            raise ValueError(f"array length {size} at byte {self.pos}")
        return size

    def records(self, flexible: bool) -> memoryview | None:
        size = self.uvarint() - 1 if flexible else self.int32()
        if size == -1:
            return None
        return self.take(size)

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # the tag
            self.take(self.uvarint())


def read_produce_request(frame: memoryview, offset: int, version: int) -> Any:
    """The kio ``ProduceRequest`` whose body starts at ``offset``; records are views."""
    request_type, topic_type, partition_type = _types(version)
    flexible = version >= FIRST_FLEXIBLE_VERSION
    reader = _Reader(frame, offset)
    transactional_id = reader.string(flexible, nullable=True)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack(reader.take(_ACKS_TIMEOUT.size))
    topics = []
    for _ in range(reader.array_length(flexible)):
        name = reader.string(flexible)
        partitions = []
        for _ in range(reader.array_length(flexible)):
            index = reader.int32()
            records = reader.records(flexible)
            if flexible:
                reader.skip_tagged_fields()
            partitions.append(partition_type(index=index, records=records))
        if flexible:
            reader.skip_tagged_fields()
        topics.append(topic_type(name=name, partition_data=tuple(partitions)))
    if flexible:
        reader.skip_tagged_fields()
    return request_type(
        transactional_id=transactional_id,
        acks=acks,
        timeout=timedelta(milliseconds=timeout_ms),
        topic_data=tuple(topics),
    )

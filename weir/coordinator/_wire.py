"""Kafka's classic (non-flexible) primitive encodings, for the coordinator's small formats.

Theory of operation
-------------------
The records in ``__consumer_offsets`` and the consumer protocol's subscription/assignment
blobs are "data" messages from Kafka's JSON specs, all in non-flexible versions, so they use
only the classic primitives, big-endian:

* ``int16``/``int32``/``int64``: two's complement.
* ``string``: int16 byte length, then UTF-8; a nullable string writes length -1 for null.
* ``bytes``: int32 byte length, then the bytes; nullable bytes write length -1 for null.
* ``array``: int32 element count (-1 for a null array), then the elements.

``Writer`` appends to a ``bytearray``; ``Reader`` walks a ``bytes`` with a cursor and raises
``WireFormatError`` (a ``ValueError``) on truncation or impossible lengths, so one ``except``
at the caller turns garbage into a clean error.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Reader", "WireFormatError", "Writer"]

T = TypeVar("T")

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class WireFormatError(ValueError):
    """Bytes that do not follow the expected Kafka layout."""


class Writer:
    """Appends Kafka primitives to a growing buffer."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def int16(self, value: int) -> Writer:
        self._buffer += _I16.pack(value)
        return self

    def int32(self, value: int) -> Writer:
        self._buffer += _I32.pack(value)
        return self

    def int64(self, value: int) -> Writer:
        self._buffer += _I64.pack(value)
        return self

    def string(self, value: str) -> Writer:
        encoded = value.encode("utf-8")
        if len(encoded) > 0x7FFF:
            raise WireFormatError(f"string of {len(encoded)} bytes exceeds 32767")
        self._buffer += _I16.pack(len(encoded)) + encoded
        return self

    def nullable_string(self, value: str | None) -> Writer:
        if value is None:
            return self.int16(-1)
        return self.string(value)

    def bytes_(self, value: bytes) -> Writer:
        self._buffer += _I32.pack(len(value)) + value
        return self

    def nullable_bytes(self, value: bytes | None) -> Writer:
        if value is None:
            return self.int32(-1)
        return self.bytes_(value)

    def array(self, items: list[T] | tuple[T, ...], write: Callable[[Writer, T], object]) -> Writer:
        self.int32(len(items))
        for item in items:
            write(self, item)
        return self

    def getvalue(self) -> bytes:
        return bytes(self._buffer)


class Reader:
    """Reads Kafka primitives from ``data`` starting at offset 0."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _take(self, size: int) -> bytes:
        if size < 0 or self._pos + size > len(self._data):
            raise WireFormatError(
                f"need {size} bytes at offset {self._pos}, have {len(self._data) - self._pos}"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def int16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def nullable_string(self) -> str | None:
        length = self.int16()
        if length == -1:
            return None
        if length < 0:
            raise WireFormatError(f"negative string length {length}")
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireFormatError(f"string is not UTF-8: {exc}") from exc

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise WireFormatError("null where a non-nullable string is required")
        return value

    def nullable_bytes(self) -> bytes | None:
        length = self.int32()
        if length == -1:
            return None
        if length < 0:
            raise WireFormatError(f"negative bytes length {length}")
        return self._take(length)

    def bytes_(self) -> bytes:
        value = self.nullable_bytes()
        if value is None:
            raise WireFormatError("null where non-nullable bytes are required")
        return value

    def array(self, read: Callable[[Reader], T]) -> tuple[T, ...]:
        count = self.int32()
        if count < 0:
            raise WireFormatError(f"negative array length {count}")
        # Each element takes at least one byte, which bounds a hostile count cheaply.
        if count > self.remaining:
            raise WireFormatError(f"array of {count} elements in {self.remaining} bytes")
        return tuple(read(self) for _ in range(count))

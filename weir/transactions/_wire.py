"""Kafka's flexible-version primitives, on top of the coordinator's classic ones.

Theory of operation
-------------------
``TransactionLogValue`` version 1 is a *flexible* message (KIP-482): after the int16 version
prefix, its strings and arrays use compact lengths and every struct ends with a tagged-field
section. The classic primitives (``weir.coordinator._wire``) stay as they are; this module
adds only what flexible versions need, big-endian like the rest:

* ``uvarint``: unsigned LEB128 (7 bits a byte, low groups first, high bit = more).
* compact string / array: ``uvarint(length + 1)``, then the bytes or elements; 0 means null.
* tagged fields: ``uvarint(count)``, then per field ``uvarint(tag) uvarint(size) bytes``, in
  ascending tag order. A field equal to its default is left out, as Kafka's generated code
  does, so a record with only defaults ends in a single ``00``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from weir.coordinator._wire import Reader, WireFormatError, Writer

__all__ = ["FlexibleReader", "FlexibleWriter", "WireFormatError"]

T = TypeVar("T")

_MAX_UVARINT_BYTES = 5  # lengths and tags are unsigned 32-bit values


class FlexibleWriter(Writer):
    """``Writer`` plus compact lengths and tagged fields."""

    __slots__ = ()

    def int8(self, value: int) -> FlexibleWriter:
        self._buffer += value.to_bytes(1, "big", signed=True)
        return self

    def uvarint(self, value: int) -> FlexibleWriter:
        if value < 0 or value > 0xFFFFFFFF:
            raise WireFormatError(f"unsigned varint out of range: {value}")
        while value > 0x7F:
            self._buffer.append((value & 0x7F) | 0x80)
            value >>= 7
        self._buffer.append(value)
        return self

    def compact_string(self, value: str) -> FlexibleWriter:
        encoded = value.encode("utf-8")
        if len(encoded) > 0x7FFF:
            raise WireFormatError(f"string of {len(encoded)} bytes exceeds 32767")
        self.uvarint(len(encoded) + 1)
        self._buffer += encoded
        return self

    def compact_array(
        self, items: list[T] | tuple[T, ...] | None, write: Callable[[FlexibleWriter, T], object]
    ) -> FlexibleWriter:
        if items is None:
            return self.uvarint(0)
        self.uvarint(len(items) + 1)
        for item in items:
            write(self, item)
        return self

    def tagged_fields(self, fields: dict[int, bytes]) -> FlexibleWriter:
        """The tagged-field section; ``fields`` maps tag to its already-encoded value."""
        self.uvarint(len(fields))
        for tag in sorted(fields):
            self.uvarint(tag).uvarint(len(fields[tag]))
            self._buffer += fields[tag]
        return self


class FlexibleReader(Reader):
    """``Reader`` plus compact lengths and tagged fields."""

    __slots__ = ()

    def int8(self) -> int:
        return int.from_bytes(self._take(1), "big", signed=True)

    def uvarint(self) -> int:
        value = 0
        for index in range(_MAX_UVARINT_BYTES):
            byte = self._take(1)[0]
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return value
        raise WireFormatError("unsigned varint longer than 5 bytes")

    def compact_string(self) -> str:
        length = self.uvarint() - 1
        if length < 0:
            raise WireFormatError("null where a non-nullable compact string is required")
        try:
            return self._take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireFormatError(f"string is not UTF-8: {exc}") from exc

    def compact_array(self, read: Callable[[FlexibleReader], T]) -> tuple[T, ...] | None:
        count = self.uvarint() - 1
        if count < 0:
            return None
        if count > self.remaining:
            raise WireFormatError(f"array of {count} elements in {self.remaining} bytes")
        return tuple(read(self) for _ in range(count))

    def tagged_fields(self) -> dict[int, FlexibleReader]:
        """The tagged-field section: a reader over each field's bytes, by tag."""
        fields: dict[int, FlexibleReader] = {}
        for _ in range(self.uvarint()):
            tag, size = self.uvarint(), self.uvarint()
            fields[tag] = FlexibleReader(self._take(size))
        return fields

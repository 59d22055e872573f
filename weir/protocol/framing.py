"""Kafka's framing: every request is a 4-byte big-endian size followed by that many bytes.

``FrameDecoder`` is a tiny state machine fed with whatever the socket delivered; it returns
whole frames and turns a size prefix that is negative or above ``socket.request.max.bytes``
into ``FramingError``, after which the connection must be closed (as Kafka does with
``InvalidReceiveException``): once framing is lost nothing after it can be trusted.
"""

from __future__ import annotations

import struct

__all__ = ["FrameDecoder", "FramingError"]

_SIZE = struct.Struct(">i")


class FramingError(Exception):
    """The peer sent a size prefix Weir will not accept; the connection must close."""


class FrameDecoder:
    """Accumulates bytes and yields complete frames (without their size prefix)."""

    __slots__ = ("_buffer", "_max_size", "_need", "failed")

    def __init__(self, max_size: int) -> None:
        self._buffer = bytearray()
        self._max_size = max_size
        self._need = -1  # size of the frame being read, -1 while reading a size prefix
        self.failed = False

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return every frame now complete, in order."""
        if self.failed:
            raise FramingError("connection framing already failed")
        buf = self._buffer
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        while True:
            if self._need < 0:
                if end - pos < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, pos)
                if size < 0 or size > self._max_size:
                    self.failed = True
                    raise FramingError(
                        f"request size {size} is outside 0..{self._max_size} "
                        f"(socket.request.max.bytes)"
                    )
                pos += 4
                self._need = size
            if end - pos < self._need:
                break
            with memoryview(buf) as view:
                frames.append(bytes(view[pos : pos + self._need]))
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a returned frame."""
        return len(self._buffer)

"""Kafka's framing: every request is a 4-byte big-endian size followed by that many bytes.

``FrameDecoder`` is a tiny state machine fed with whatever the socket delivered; it returns
whole frames and turns a size prefix that is negative or above ``socket.request.max.bytes``
into ``FramingError``, after which the connection must be closed (as Kafka does with
``InvalidReceiveException``): once framing is lost nothing after it can be trusted. That is
the only place ``socket.request.max.bytes`` is checked.

Theory of operation
-------------------
The decoder speaks asyncio's ``BufferedProtocol`` shape without doing any I/O: the socket
is read straight into ``get_buffer()`` and ``buffer_updated(n)`` returns the frames now
complete. Each frame is a ``bytearray`` of its own, and it is the buffer the request's bytes
stay in: the codec slices a Produce payload out of it as a ``memoryview`` and the log stamps
and writes that view, so a record batch is never copied in user space after it arrives.

* Small frames arrive (many at a time) in a scratch buffer and are copied out once into
  their frame.
* A frame that is not whole when its size prefix arrives gets its ``bytearray`` at once, and
  the rest of it is received straight into it: large Produce requests are not copied at all.

``feed(data)`` does the same for callers holding bytes (tests, a plain ``Protocol``).
"""

from __future__ import annotations

import struct

__all__ = ["FrameDecoder", "FramingError"]

_SIZE = struct.Struct(">i")
# Room for a receive of many small requests; a frame that is not whole in it gets its own.
_SCRATCH_BYTES = 64 * 1024


class FramingError(Exception):
    """The peer sent a size prefix Weir will not accept; the connection must close."""


class FrameDecoder:
    """Accumulates bytes and yields complete frames (without their size prefix)."""

    __slots__ = ("_filled", "_frame", "_max_size", "_pending", "_scratch", "failed")

    def __init__(self, max_size: int) -> None:
        self._max_size = max_size
        self._scratch = bytearray(_SCRATCH_BYTES)
        self._pending = 0  # bytes of the scratch buffer not yet part of a frame
        self._frame: bytearray | None = None  # the frame being received into, if any
        self._filled = 0
        self.failed = False

    def get_buffer(self) -> memoryview:
        """Where the next received bytes go (never empty)."""
        if self.failed:
            raise FramingError("connection framing already failed")
        if self._frame is not None:
            return memoryview(self._frame)[self._filled :]
        return memoryview(self._scratch)[self._pending :]

    def buffer_updated(self, nbytes: int) -> list[bytearray]:
        """``nbytes`` were written into the last ``get_buffer()``; every frame now complete."""
        frame = self._frame
        if frame is not None:
            self._filled += nbytes
            if self._filled < len(frame):
                return []
            self._frame = None
            return [frame]
        self._pending += nbytes
        return self._split_scratch()

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytearray]:
        """Add received bytes; return every frame now complete, in order."""
        frames: list[bytearray] = []
        with memoryview(data) as view:
            pos = 0
            while pos < len(view):
                buffer = self.get_buffer()
                n = min(len(buffer), len(view) - pos)
                buffer[:n] = view[pos : pos + n]
                pos += n
                frames += self.buffer_updated(n)
        return frames

    def _split_scratch(self) -> list[bytearray]:
        frames: list[bytearray] = []
        start, end = 0, self._pending
        with memoryview(self._scratch) as view:
            while end - start >= 4:
                (size,) = _SIZE.unpack_from(view, start)
                if size < 0 or size > self._max_size:
                    self.failed = True
                    raise FramingError(
                        f"request size {size} is outside 0..{self._max_size} "
                        f"(socket.request.max.bytes)"
                    )
                body = start + 4
                available = end - body
                if available >= size:
                    frames.append(bytearray(view[body : body + size]))
                    start = body + size
                    continue
                # Not whole yet: the frame gets its own buffer and the rest lands in it.
                frame = bytearray(size)
                frame[:available] = view[body:end]
                self._frame, self._filled = frame, available
                start = end
                break
            remaining = end - start
            if remaining and start:
                view[:remaining] = view[start:end]  # a partial size prefix (< 4 bytes)
        self._pending = remaining
        return frames

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a returned frame."""
        return self._pending + (self._filled if self._frame is not None else 0)

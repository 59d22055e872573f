"""Weir's broker-to-broker client: response framing straight into per-frame buffers."""

from __future__ import annotations

import asyncio
import struct

import pytest

from weir.client import _SCRATCH_BYTES, BrokerClientError, _FrameProtocol


def feed(protocol: _FrameProtocol, data: bytes, chunk: int) -> None:
    """Deliver ``data`` the way the event loop does: into get_buffer(), ``chunk`` at most."""
    pos = 0
    while pos < len(data):
        buffer = protocol.get_buffer(-1)
        n = min(len(buffer), chunk, len(data) - pos)
        buffer[:n] = data[pos : pos + n]
        protocol.buffer_updated(n)
        pos += n


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def frames_of(protocol: _FrameProtocol) -> list[bytes]:
    return [bytes(f) for f in protocol._frames]


@pytest.mark.parametrize("chunk", [1, 3, 4, 5, 1000, 1 << 20])
def test_frames_split_anywhere_are_reassembled(chunk: int) -> None:
    bodies = [b"", b"a", b"hello world", bytes(range(256)) * 700]  # the last is > scratch
    protocol = _FrameProtocol()
    feed(protocol, b"".join(frame(b) for b in bodies), chunk)
    assert frames_of(protocol) == bodies
    assert protocol._frame is None and protocol._pending == 0


def test_a_large_frame_is_received_into_its_own_buffer() -> None:
    body = b"x" * (_SCRATCH_BYTES * 3 + 17)
    protocol = _FrameProtocol()
    feed(protocol, frame(body)[:1000], 1000)
    assert protocol._frame is not None and len(protocol._frame) == len(body)
    # The next receive goes straight into the frame, not the scratch buffer.
    assert len(protocol.get_buffer(-1)) == len(body) - (1000 - 4)
    feed(protocol, frame(body)[1000:], 1 << 20)
    assert frames_of(protocol) == [body]


def test_negative_size_fails_the_connection() -> None:
    protocol = _FrameProtocol()
    feed(protocol, struct.pack(">i", -5), 4)
    assert isinstance(protocol._lost, BrokerClientError)


async def test_read_frame_waits_and_reports_a_lost_connection() -> None:
    protocol = _FrameProtocol()
    reader = asyncio.create_task(protocol.read_frame())
    await asyncio.sleep(0)
    feed(protocol, frame(b"late"), 2)
    assert bytes(await reader) == b"late"
    waiting = asyncio.create_task(protocol.read_frame())
    await asyncio.sleep(0)
    protocol.connection_lost(None)
    with pytest.raises(asyncio.IncompleteReadError):
        await waiting

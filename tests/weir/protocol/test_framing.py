"""FrameDecoder: whole frames out of arbitrary chunks, and refusal of bad size prefixes."""

from __future__ import annotations

import struct

import pytest

from weir.protocol.framing import FrameDecoder, FramingError


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def test_frames_split_across_chunks_are_reassembled() -> None:
    decoder = FrameDecoder(max_size=1024)
    stream = framed(b"first") + framed(b"") + framed(b"third-frame")
    frames = []
    for i in range(len(stream)):
        frames += decoder.feed(stream[i : i + 1])
    assert frames == [b"first", b"", b"third-frame"]
    assert decoder.buffered == 0


def test_many_frames_in_one_chunk_come_out_in_order() -> None:
    decoder = FrameDecoder(max_size=1024)
    frames = decoder.feed(b"".join(framed(bytes([i]) * i) for i in range(50)))
    assert frames == [bytes([i]) * i for i in range(50)]


def test_size_above_limit_is_a_framing_error_naming_the_config() -> None:
    decoder = FrameDecoder(max_size=100)
    with pytest.raises(FramingError, match=r"socket\.request\.max\.bytes"):
        decoder.feed(struct.pack(">i", 101))
    with pytest.raises(FramingError):
        decoder.feed(b"anything")


def test_negative_size_is_a_framing_error() -> None:
    with pytest.raises(FramingError):
        FrameDecoder(max_size=100).feed(struct.pack(">i", -1))


@pytest.mark.parametrize("chunk", [1, 3, 4, 5, 1000, 1 << 20])
def test_frames_received_into_get_buffer_in_any_chunks_are_reassembled(chunk: int) -> None:
    """The BufferedProtocol path: bytes are written into get_buffer(), chunk at most."""
    bodies = [b"", b"a", b"hello world", bytes(range(256)) * 700]  # the last is > scratch
    decoder = FrameDecoder(max_size=1 << 20)
    stream = b"".join(framed(b) for b in bodies)
    frames: list[bytearray] = []
    pos = 0
    while pos < len(stream):
        buffer = decoder.get_buffer()
        n = min(len(buffer), chunk, len(stream) - pos)
        buffer[:n] = stream[pos : pos + n]
        frames += decoder.buffer_updated(n)
        pos += n
    assert frames == bodies
    assert all(type(f) is bytearray for f in frames)
    assert decoder.buffered == 0


def test_the_rest_of_a_partial_frame_is_received_straight_into_it() -> None:
    """No copy for a request larger than one receive: its bytearray is the receive buffer."""
    body = bytes(range(256)) * 1000
    wire = framed(body)
    decoder = FrameDecoder(max_size=1 << 20)
    assert decoder.feed(wire[:100]) == []
    target = decoder.get_buffer()
    assert len(target) == len(body) - 96
    target[:] = wire[100:]
    (frame,) = decoder.buffer_updated(len(target))
    assert frame is target.obj and frame == body

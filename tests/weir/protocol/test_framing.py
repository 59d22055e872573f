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

"""A produce payload reaches the log as a view of the buffer it was received into.

The chain the server runs, without a socket: bytes received into ``FrameDecoder``'s buffer,
the frame decoded by the codec, the batches validated, ``Log.append``. The segment must be
handed a view whose underlying object *is* that receive buffer (no copy on the way), stamped
in place with the broker's offset and leader epoch.
"""

from __future__ import annotations

import struct

import pytest

from weir.log.segment import LogSegment
from weir.protocol.codec import decode_request
from weir.protocol.framing import FrameDecoder
from weir.protocol.records import parse_header, validate_batches

from .conftest import LogFactory, append, make_batch


def produce_v7(records: bytes) -> bytes:
    """A size-prefixed Produce v7 request for topic ``t`` partition 0."""
    header = struct.pack(">hhih", 0, 7, 1, 1) + b"c"
    body = struct.pack(">hhiih1sii", -1, 1, 30_000, 1, 1, b"t", 1, 0)
    body += struct.pack(">i", len(records)) + records
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def test_the_payload_written_is_a_view_of_the_receive_buffer(
    open_log: LogFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log()
    append(log, make_batch(count=2))  # so the broker's offset (2) differs from the client's
    wire = produce_v7(make_batch(count=3, value_size=2000) + make_batch(count=1))
    decoder = FrameDecoder(max_size=1 << 20)
    assert decoder.feed(wire[:64]) == []
    receive_buffer = decoder.get_buffer()  # the rest is received straight into the frame
    receive_buffer[:] = wire[64:]
    (frame,) = decoder.buffer_updated(len(receive_buffer))
    assert frame is receive_buffer.obj

    request = decode_request(frame, {0: (3, 9)})
    records = request.body.topic_data[0].partition_data[0].records
    assert records.obj is frame

    written: list[memoryview] = []
    segment_append = LogSegment.append

    def spy(self: LogSegment, payload: memoryview, batches: object) -> None:
        written.append(payload)
        segment_append(self, payload, batches)  # type: ignore[arg-type]

    monkeypatch.setattr(LogSegment, "append", spy)
    result = log.append(records, validate_batches(records), leader_epoch=7)

    (payload,) = written
    assert memoryview(payload).obj is frame  # the receive buffer itself, not a copy
    assert result.base_offset == 2 and result.last_offset == 5
    first = parse_header(frame, len(frame) - len(records))
    assert (first.base_offset, first.partition_leader_epoch) == (2, 7)  # stamped in place
    on_disk = log.active_segment.log_path.read_bytes()
    assert on_disk.endswith(bytes(records))

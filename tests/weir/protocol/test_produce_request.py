"""The Produce body reader: the same request kio decodes, with records as views of the frame.

``weir.protocol.produce_request`` replaces kio for one message so that record batches are not
copied. These tests hold it to kio on every Produce frame captured from real clients, on
every truncation of them, and on hand-made garbage.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest
from kio.index import load_request_schema
from kio.serial import entity_reader

from weir.protocol.codec import ProtocolError, decode_request

from .test_client_vectors import SUPPORTED, frame_of, vector_id, vectors_of

PRODUCE_VECTORS = vectors_of("produce")


def kio_decoded(frame: bytes) -> object:
    api_key, version = struct.unpack_from(">hh", frame)
    body_type = load_request_schema(api_key, version)
    _, offset = entity_reader(body_type.__header_schema__)(frame, 0)
    body, _ = entity_reader(body_type)(frame, offset)
    return body


def with_bytes(body: object) -> object:
    """``body`` with every records view turned into bytes, to compare with kio's."""
    topics = tuple(
        dataclasses.replace(
            topic,
            partition_data=tuple(
                dataclasses.replace(p, records=None if p.records is None else bytes(p.records))
                for p in topic.partition_data
            ),
        )
        for topic in body.topic_data  # type: ignore[attr-defined]
    )
    return dataclasses.replace(body, topic_data=topics)  # type: ignore[type-var]


def test_the_vectors_cover_both_encodings() -> None:
    versions = {int(p.stem.split("_v")[1].split("_")[0]) for p in PRODUCE_VECTORS}
    assert {7, 9} <= versions  # legacy (v3-v8) and flexible (v9) bodies


@pytest.mark.parametrize("path", PRODUCE_VECTORS, ids=vector_id)
def test_a_produce_request_decodes_as_kio_decodes_it(path: Path) -> None:
    frame = frame_of(path)
    ours = decode_request(bytearray(frame), SUPPORTED).body
    assert with_bytes(ours) == kio_decoded(frame)
    assert type(ours) is type(kio_decoded(frame))


@pytest.mark.parametrize("path", PRODUCE_VECTORS, ids=vector_id)
def test_records_are_writable_views_of_the_frame_not_copies(path: Path) -> None:
    frame = bytearray(frame_of(path))
    body = decode_request(frame, SUPPORTED).body
    (topic,) = body.topic_data
    (partition,) = topic.partition_data
    records = partition.records
    assert isinstance(records, memoryview) and records.obj is frame
    assert not records.readonly
    start = frame.find(bytes(records))
    records[0] ^= 0xFF  # the log stamps baseOffset the same way: in the frame itself
    assert frame[start] == records[0]


@pytest.mark.parametrize("path", PRODUCE_VECTORS, ids=vector_id)
def test_every_truncation_of_a_produce_request_is_a_protocol_error(path: Path) -> None:
    frame = frame_of(path)
    for end in range(len(frame)):
        with pytest.raises(ProtocolError):
            decode_request(bytearray(frame[:end]), SUPPORTED)


def legacy_produce(body: bytes, version: int = 7) -> bytearray:
    header = struct.pack(">hhih", 0, version, 99, 4) + b"test"
    return bytearray(header + body)


@pytest.mark.parametrize(
    "body",
    [
        struct.pack(">h", -2),  # transactional id length below -1
        struct.pack(">hhii", -1, 1, 1000, -1),  # a null topic array
        struct.pack(">hhiih", -1, 1, 1000, 1, -1),  # a null topic name
        struct.pack(">hhiih1sii", -1, 1, 1000, 1, 1, b"t", 1, 0) + struct.pack(">i", -2),
        struct.pack(">hhiih1sii", -1, 1, 1000, 1, 1, b"t", 1, 0) + struct.pack(">i", 5),
        struct.pack(">hhiih2s", -1, 1, 1000, 1, 2, b"\xff\xfe"),  # not UTF-8
    ],
    ids=["txn-id", "topics", "name", "records-length", "records-overrun", "utf8"],
)
def test_garbage_in_a_legacy_body_is_a_protocol_error(body: bytes) -> None:
    with pytest.raises(ProtocolError, match=r"API 0 v7"):
        decode_request(legacy_produce(body), SUPPORTED)


def test_null_records_and_trailing_bytes_decode_as_kio_does() -> None:
    body = struct.pack(">hhiih1sii", -1, 1, 1000, 1, 1, b"t", 1, 3) + struct.pack(">i", -1)
    frame = legacy_produce(body + b"\x00\x01")
    ours = decode_request(frame, SUPPORTED).body
    assert ours == kio_decoded(bytes(frame))
    assert ours.topic_data[0].partition_data[0].records is None


def test_an_overlong_varint_in_a_flexible_body_is_a_protocol_error() -> None:
    header = struct.pack(">hhih", 0, 9, 1, 4) + b"test" + b"\x00"
    with pytest.raises(ProtocolError):
        decode_request(bytearray(header + b"\xff" * 6), SUPPORTED)

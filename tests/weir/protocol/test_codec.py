"""Request decoding and response encoding through kio, including file-region splicing."""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.response import FetchableTopicResponse, FetchResponse, PartitionData
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_reader, entity_writer

from weir.protocol.codec import (
    ProtocolError,
    RecordsRegion,
    UnsupportedVersionError,
    decode_request,
    encode_response,
    encode_unsupported_api_versions,
)

SUPPORTED = {3: (0, 12), 18: (0, 3), 1: (4, 12)}


def metadata_frame(correlation_id: int = 9) -> bytes:
    buffer = io.BytesIO()
    entity_writer(RequestHeader)(
        buffer,
        RequestHeader(
            request_api_key=3,
            request_api_version=12,
            correlation_id=correlation_id,
            client_id="tests",
        ),
    )
    entity_writer(MetadataRequest)(
        buffer,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name="orders"),),  # type: ignore[arg-type]
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    return buffer.getvalue()


def test_trailing_bytes_are_tolerated_like_kafka_does() -> None:
    request = decode_request(metadata_frame() + b"\x01\x00\x00", SUPPORTED)
    assert request.body.topics[0].name == "orders"


def test_flexible_request_decodes_header_and_body() -> None:
    request = decode_request(metadata_frame(), SUPPORTED)
    assert (request.api_key, request.api_version, request.correlation_id) == (3, 12, 9)
    assert request.client_id == "tests"
    assert request.body.topics[0].name == "orders"
    assert request.body.allow_auto_topic_creation is False


def test_unknown_api_key_and_garbage_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="unknown API key"):
        decode_request(struct.pack(">hhi", 4242, 0, 1), SUPPORTED)
    with pytest.raises(ProtocolError):
        decode_request(metadata_frame()[:-3], SUPPORTED)
    with pytest.raises(ProtocolError):
        decode_request(b"\x00", SUPPORTED)


def test_version_outside_range_is_unsupported_with_correlation_id() -> None:
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(struct.pack(">hhi", 3, 13, 44) + b"\x00" * 8, SUPPORTED)
    assert info.value.correlation_id == 44


def test_unsupported_api_versions_answer_is_v0_with_ranges() -> None:
    payload = encode_unsupported_api_versions(5, SUPPORTED)
    size, correlation_id, error = struct.unpack(">iih", payload[:10])
    assert size == len(payload) - 4
    assert correlation_id == 5
    assert error == ErrorCode.unsupported_version


@dataclass(frozen=True)
class Region:
    file: Any
    position: int
    size: int


def test_records_region_is_spliced_between_byte_chunks_with_right_lengths(tmp_path) -> None:
    data = b"R" * 150
    path = tmp_path / "segment.log"
    path.write_bytes(b"xx" + data)
    with path.open("rb") as file:
        regions = [Region(file, 2, 100), Region(file, 102, 50)]
        response = FetchResponse(
            throttle_time=timedelta(0),
            error_code=ErrorCode.none,
            session_id=0,
            responses=(
                FetchableTopicResponse(
                    topic="orders",
                    partitions=(
                        PartitionData(
                            partition_index=0,
                            error_code=ErrorCode.none,
                            high_watermark=10,
                            last_stable_offset=10,
                            log_start_offset=0,
                            aborted_transactions=(),
                            preferred_read_replica=-1,
                            records=RecordsRegion(regions),
                        ),
                    ),
                ),
            ),
        )
        chunks = encode_response(1, 12, 7, response)
        assert chunks[1:3] == regions
        wire = b"".join(
            c if isinstance(c, bytes) else (path.read_bytes()[c.position : c.position + c.size])
            for c in chunks
        )
    (size,) = struct.unpack(">i", wire[:4])
    assert size == len(wire) - 4
    response_type = load_response_schema(1, 12)
    header, offset = entity_reader(response_type.__header_schema__)(wire, 4)
    decoded, _ = entity_reader(response_type)(wire, 4 + offset)
    assert header.correlation_id == 7
    assert decoded.responses[0].partitions[0].records == data

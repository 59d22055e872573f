"""Garbage on the wire gets Kafka's answer or a closed connection, never a dead broker."""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Iterator
from datetime import timedelta

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.index import load_response_schema
from kio.schema.produce.v9.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_reader, entity_writer

from tests.weir.clients.helpers import closed_by_peer, recv_exact
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration


_open_sockets: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _close_sockets() -> Iterator[None]:
    yield
    while _open_sockets:
        _open_sockets.pop().close()


def connect(broker: ThreadedBroker) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=10)
    _open_sockets.append(sock)
    return sock


def read_frame(sock: socket.socket) -> bytes:
    size = struct.unpack(">i", recv_exact(sock, 4))[0]
    return recv_exact(sock, size)


def frame(api_key: int, version: int, body: bytes, correlation_id: int = 1) -> bytes:
    header = struct.pack(">hhih", api_key, version, correlation_id, 4) + b"test"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def still_serving(broker: ThreadedBroker) -> bool:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    return admin.list_topics(timeout=10) is not None and broker.alive()


def test_oversized_size_prefix_closes_only_that_connection(broker: ThreadedBroker) -> None:
    sock = connect(broker)
    sock.sendall(struct.pack(">i", 2_000_000_000))
    assert closed_by_peer(sock)
    assert still_serving(broker)


def test_negative_size_prefix_closes_connection(broker: ThreadedBroker) -> None:
    sock = connect(broker)
    sock.sendall(struct.pack(">i", -5) + b"junk")
    assert closed_by_peer(sock)
    assert still_serving(broker)


def test_unknown_api_key_closes_connection(broker: ThreadedBroker) -> None:
    sock = connect(broker)
    sock.sendall(frame(9999, 0, b""))
    assert closed_by_peer(sock)
    assert still_serving(broker)


def test_truncated_body_closes_connection(broker: ThreadedBroker) -> None:
    sock = connect(broker)
    sock.sendall(frame(3, 1, b"\x00\x00\x00\x05\x00"))  # Metadata claiming 5 topics
    assert closed_by_peer(sock)
    assert still_serving(broker)


def test_unsupported_api_versions_version_gets_error_and_range(broker: ThreadedBroker) -> None:
    sock = connect(broker)
    sock.sendall(frame(18, 99, b"", correlation_id=77))
    payload = read_frame(sock)
    correlation_id, error_code = struct.unpack(">ih", payload[:6])
    assert correlation_id == 77
    assert error_code == 35  # UNSUPPORTED_VERSION
    (count,) = struct.unpack(">i", payload[6:10])
    ranges = {struct.unpack(">h", payload[10 + 6 * i : 12 + 6 * i])[0] for i in range(count)}
    assert {0, 1, 3, 18} <= ranges
    sock.close()


def test_corrupt_record_batch_gets_corrupt_message(broker: ThreadedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("bad-batch", 1, 1)])["bad-batch"].result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("bad-batch", value=b"good")
    producer.flush(10)
    garbage = bytearray(b"\x00" * 8 + struct.pack(">i", 60) + b"\x00" * 4 + b"\x02" + b"\xff" * 56)
    request = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=timedelta(seconds=5),
        topic_data=(
            TopicProduceData(
                name="bad-batch",
                partition_data=(PartitionProduceData(index=0, records=bytes(garbage)),),
            ),
        ),
    )
    buffer = io.BytesIO()
    entity_writer(RequestHeader)(
        buffer,
        RequestHeader(request_api_key=0, request_api_version=9, correlation_id=5, client_id="t"),
    )
    entity_writer(ProduceRequest)(buffer, request)
    payload = buffer.getvalue()
    sock = connect(broker)
    sock.sendall(struct.pack(">i", len(payload)) + payload)
    response_frame = read_frame(sock)
    response_type = load_response_schema(0, 9)
    header, offset = entity_reader(response_type.__header_schema__)(response_frame, 0)
    response, _ = entity_reader(response_type)(response_frame, offset)
    partition = response.responses[0].partition_responses[0]
    assert header.correlation_id == 5
    assert partition.error_code == 2  # CORRUPT_MESSAGE
    sock.close()
    # The good record is still there and nothing was appended after it.
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    assert consumer.get_watermark_offsets(TopicPartition("bad-batch", 0), timeout=10) == (0, 1)
    consumer.close()
    assert still_serving(broker)

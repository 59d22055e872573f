"""The consumer protocol subscription/assignment codec, checked against kio's schemas."""

from __future__ import annotations

import io
import struct

import pytest
from kio.schema.consumer_protocol_assignment.v3 import ConsumerProtocolAssignment
from kio.schema.consumer_protocol_assignment.v3.data import (
    TopicPartition as AssignedTopicPartition,
)
from kio.schema.consumer_protocol_subscription.v0 import (
    ConsumerProtocolSubscription as SubscriptionV0,
)
from kio.schema.consumer_protocol_subscription.v3 import (
    ConsumerProtocolSubscription as SubscriptionV3,
)
from kio.schema.consumer_protocol_subscription.v3.data import TopicPartition
from kio.schema.types import TopicName
from kio.serial import entity_writer
from kio.static.primitive import i32

from weir.coordinator.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def _kio_bytes(
    version: int, entity: SubscriptionV0 | SubscriptionV3 | ConsumerProtocolAssignment
) -> bytes:
    # The consumer protocol prefixes the struct with its int16 version; kio writes the struct.
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return struct.pack(">h", version) + buffer.getvalue()


def test_decodes_a_v3_subscription_written_by_kio() -> None:
    data = _kio_bytes(
        3,
        SubscriptionV3(
            topics=("orders", "refunds"),
            user_data=b"\x01",
            owned_partitions=(
                TopicPartition(topic=TopicName("orders"), partitions=(i32(0), i32(2))),
            ),
            generation_id=i32(7),
            rack_id="rack-a",
        ),
    )
    assert decode_subscription(data) == Subscription(
        ("orders", "refunds"), b"\x01", (("orders", (0, 2)),), 7, "rack-a", 3
    )
    assert encode_subscription(decode_subscription(data)) == data


def test_decodes_a_v0_subscription_written_by_kio() -> None:
    data = _kio_bytes(0, SubscriptionV0(topics=("t",), user_data=None))
    assert decode_subscription(data) == Subscription(("t",), None, (), -1, None, 0)


def test_newer_subscription_version_is_read_as_v3_ignoring_trailing_fields() -> None:
    v3 = encode_subscription(Subscription(("t",), None, (), 1, None, 3))
    v9 = struct.pack(">h", 9) + v3[2:] + b"future-field"
    assert decode_subscription(v9).topics == ("t",)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xff", b"\x00\x00\x00\x00\x00\x05\x00\x01t"])
def test_malformed_subscription_raises(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


def test_assignment_round_trips_with_kio_layout() -> None:
    data = _kio_bytes(
        1,
        ConsumerProtocolAssignment(
            assigned_partitions=(
                AssignedTopicPartition(topic=TopicName("orders"), partitions=(i32(1), i32(3))),
            ),
            user_data=None,
        ),
    )
    assignment = decode_assignment(data)
    assert assignment == Assignment((("orders", (1, 3)),), None, 1)
    assert encode_assignment(assignment) == data
    assert decode_assignment(b"") == Assignment(())

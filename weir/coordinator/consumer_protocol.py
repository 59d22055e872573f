"""The embedded consumer protocol: what a ``consumer`` group puts in JoinGroup and SyncGroup.

Theory of operation
-------------------
To the coordinator, protocol metadata and assignments are opaque bytes chosen by the
clients. Only two coordinator decisions look inside, both for groups whose protocol type is
``"consumer"``: OffsetDelete refuses topics a live member subscribes to
(GROUP_SUBSCRIBED_TO_TOPIC), and offset expiry keeps offsets of subscribed topics. Both need
the topic list of a ``ConsumerProtocolSubscription``.

Layout (Kafka's ``ConsumerProtocolSubscription.json``, versions 0-3, never flexible)::

    int16    version
    [string] topics
    bytes?   user_data                      (nullable)
    v1+ [ string topic, [int32] partitions ] owned_partitions
    v2+ int32    generation_id               (default -1)
    v3+ string?  rack_id                     (default null)

Like Kafka's ``ConsumerProtocol``, a version newer than 3 is parsed as version 3 (new
versions only append fields) and trailing bytes are ignored. ``ConsumerProtocolAssignment``
(versions 0-3 share one layout: ``int16 version, [string topic, [int32] partitions],
bytes? user_data``) is here too so tests and tools can build realistic payloads.
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.coordinator._wire import Reader, WireFormatError, Writer

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "Assignment",
    "ConsumerProtocolError",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

CONSUMER_PROTOCOL_TYPE = "consumer"
_MAX_SUBSCRIPTION_VERSION = 3


class ConsumerProtocolError(WireFormatError):
    """Metadata that is not a valid consumer protocol payload."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """A member's ``ConsumerProtocolSubscription``."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = _MAX_SUBSCRIPTION_VERSION


@dataclass(frozen=True, slots=True)
class Assignment:
    """A member's ``ConsumerProtocolAssignment``."""

    partitions: tuple[tuple[str, tuple[int, ...]], ...]
    user_data: bytes | None = None
    version: int = 0


def _read_topic_partitions(reader: Reader) -> tuple[str, tuple[int, ...]]:
    return reader.string(), reader.array(Reader.int32)


def _write_topic_partitions(writer: Writer, item: tuple[str, tuple[int, ...]]) -> None:
    topic, partitions = item
    writer.string(topic).array(partitions, Writer.int32)


def decode_subscription(data: bytes) -> Subscription:
    """Parse subscription metadata; raise ``ConsumerProtocolError`` if it is not one."""
    try:
        reader = Reader(data)
        version = reader.int16()
        if version < 0:
            raise ConsumerProtocolError(f"negative subscription version {version}")
        effective = min(version, _MAX_SUBSCRIPTION_VERSION)
        topics = reader.array(Reader.string)
        user_data = reader.nullable_bytes()
        owned: tuple[tuple[str, tuple[int, ...]], ...] = ()
        generation_id = -1
        rack_id = None
        if effective >= 1:
            owned = reader.array(_read_topic_partitions)
        if effective >= 2:
            generation_id = reader.int32()
        if effective >= 3:
            rack_id = reader.nullable_string()
    except ConsumerProtocolError:
        raise
    except WireFormatError as exc:
        raise ConsumerProtocolError(f"malformed consumer subscription: {exc}") from exc
    return Subscription(topics, user_data, owned, generation_id, rack_id, version)


def encode_subscription(subscription: Subscription) -> bytes:
    """Serialize ``subscription`` in its own ``version`` (0-3)."""
    version = subscription.version
    if not 0 <= version <= _MAX_SUBSCRIPTION_VERSION:
        raise ConsumerProtocolError(f"cannot write subscription version {version}")
    writer = Writer().int16(version)
    writer.array(subscription.topics, Writer.string)
    writer.nullable_bytes(subscription.user_data)
    if version >= 1:
        writer.array(subscription.owned_partitions, _write_topic_partitions)
    if version >= 2:
        writer.int32(subscription.generation_id)
    if version >= 3:
        writer.nullable_string(subscription.rack_id)
    return writer.getvalue()


def decode_assignment(data: bytes) -> Assignment:
    """Parse an assignment; an empty payload is the empty assignment (Kafka sends b"")."""
    if not data:
        return Assignment(())
    try:
        reader = Reader(data)
        version = reader.int16()
        if version < 0:
            raise ConsumerProtocolError(f"negative assignment version {version}")
        partitions = reader.array(_read_topic_partitions)
        user_data = reader.nullable_bytes()
    except ConsumerProtocolError:
        raise
    except WireFormatError as exc:
        raise ConsumerProtocolError(f"malformed consumer assignment: {exc}") from exc
    return Assignment(partitions, user_data, version)


def encode_assignment(assignment: Assignment) -> bytes:
    """Serialize ``assignment``."""
    writer = Writer().int16(assignment.version)
    writer.array(assignment.partitions, _write_topic_partitions)
    writer.nullable_bytes(assignment.user_data)
    return writer.getvalue()

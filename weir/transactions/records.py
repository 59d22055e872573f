"""The records of ``__transaction_state``, in Kafka's own binary formats.

Theory of operation
-------------------
``__transaction_state`` is a compacted topic of 50 partitions; the coordinator of a
transactional id is the leader of partition ``partition_for(transactional_id)``. Each record
is keyed by the transactional id and its value is the id's whole state after a transition,
so compaction keeps exactly what a new coordinator needs; a null value (tombstone) is written
when ``transactional.id.expiration.ms`` forgets an id. ``replay`` rebuilds a partition's
states in offset order; later records win.

Layouts (Kafka's ``TransactionLogKey.json`` / ``TransactionLogValue.json``; kio does not
generate them, so they are written here with ``_wire``)::

    TransactionLogKey   v0  int16 0 | string transactional_id          (never flexible)
    TransactionLogValue v0  int16 0 | int64 producer_id | int16 producer_epoch
                            | int32 transaction_timeout_ms | int8 transaction_status
                            | [ string topic | [int32 partition] ]?   (null when Empty)
                            | int64 last_update_timestamp_ms | int64 start_timestamp_ms
    TransactionLogValue v1  the same fields, flexible: compact strings and arrays, an empty
                            tagged section closing each partitions entry, and the record's
                            tagged fields at the end:
                              tag 0 PreviousProducerId int64 (default -1)
                              tag 1 NextProducerId int64 (default -1)
                              tag 2 ClientTransactionVersion int16 (default 0)

Kafka writes v0 with ``transaction.version`` 0 (every 3.x cluster) and v1 from
``transaction.version`` 1 (4.x); a tagged field equal to its default is left out, so an
ordinary v1 record ends in ``00``. Weir writes v1 by default (``previous_producer_id``
survives a failover that way) and reads both; tags it does not know are skipped, as
Kafka's generated code does, and a value version above 1 decodes to ``UnknownValue``,
which ``replay`` skips (Kafka's loader skips it too, KIP-915). Partitions are written
sorted by topic and partition, so equal states encode to equal bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from weir.transactions._wire import FlexibleReader, FlexibleWriter, WireFormatError
from weir.transactions.state import (
    NO_PRODUCER_ID,
    TopicPartition,
    TransactionState,
)

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "RecordFormatError",
    "TransactionLogValue",
    "TransactionRecord",
    "UnknownRecord",
    "decode",
    "encode",
    "encode_key",
    "encode_value",
    "replay",
]

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSIONS = (0, 1)
_TAG_PREVIOUS_PRODUCER_ID = 0
_TAG_NEXT_PRODUCER_ID = 1
_TAG_CLIENT_TRANSACTION_VERSION = 2


class RecordFormatError(ValueError):
    """A ``__transaction_state`` record Weir cannot read."""


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """A transactional id's state as ``TransactionLogValue`` stores it."""

    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition]
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0


@dataclass(frozen=True, slots=True)
class TransactionRecord:
    """One record; ``value`` None is a tombstone (the id expired)."""

    transactional_id: str
    value: TransactionLogValue | None


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record whose key or value version this coordinator cannot read; skipped on load."""

    key_version: int
    value_version: int | None = None


# -- encoding -----------------------------------------------------------------------------


def encode_key(transactional_id: str) -> bytes:
    """``TransactionLogKey`` v0."""
    return FlexibleWriter().int16(KEY_VERSION).string(transactional_id).getvalue()


def _grouped(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(partitions):
        by_topic.setdefault(topic, []).append(index)
    return list(by_topic.items())


def encode_value(value: TransactionLogValue, version: int = 1) -> bytes:
    """``TransactionLogValue`` in ``version`` 0 or 1."""
    if version not in VALUE_VERSIONS:
        raise RecordFormatError(f"cannot write TransactionLogValue version {version}")
    if value.state is TransactionState.EMPTY and value.partitions:
        raise RecordFormatError("an Empty transaction has no partitions")
    # Kafka writes a null partition array for Empty, a (possibly empty) array otherwise.
    topics = None if value.state is TransactionState.EMPTY else _grouped(value.partitions)
    writer = FlexibleWriter().int16(version).int64(value.producer_id)
    writer.int16(value.producer_epoch).int32(value.timeout_ms).int8(value.state.value)
    if version == 0:
        if topics is None:
            writer.int32(-1)
        else:
            writer.array(topics, _write_topic_v0)
    else:
        writer.compact_array(topics, _write_topic_v1)
    writer.int64(value.last_update_timestamp_ms).int64(value.start_timestamp_ms)
    if version >= 1:
        writer.tagged_fields(_tags(value))
    return writer.getvalue()


def _write_topic_v0(writer: FlexibleWriter, entry: tuple[str, list[int]]) -> None:
    topic, indexes = entry
    writer.string(topic).array(indexes, FlexibleWriter.int32)


def _write_topic_v1(writer: FlexibleWriter, entry: tuple[str, list[int]]) -> None:
    topic, indexes = entry
    writer.compact_string(topic).compact_array(indexes, FlexibleWriter.int32)
    writer.tagged_fields({})


def _tags(value: TransactionLogValue) -> dict[int, bytes]:
    tags: dict[int, bytes] = {}
    if value.previous_producer_id != NO_PRODUCER_ID:
        tags[_TAG_PREVIOUS_PRODUCER_ID] = (
            FlexibleWriter().int64(value.previous_producer_id).getvalue()
        )
    if value.next_producer_id != NO_PRODUCER_ID:
        tags[_TAG_NEXT_PRODUCER_ID] = FlexibleWriter().int64(value.next_producer_id).getvalue()
    if value.client_transaction_version != 0:
        version = value.client_transaction_version
        tags[_TAG_CLIENT_TRANSACTION_VERSION] = FlexibleWriter().int16(version).getvalue()
    return tags


def encode(record: TransactionRecord, *, value_version: int = 1) -> tuple[bytes, bytes | None]:
    """Key and value of a record (value None for a tombstone)."""
    key = encode_key(record.transactional_id)
    if record.value is None:
        return key, None
    return key, encode_value(record.value, value_version)


# -- decoding -----------------------------------------------------------------------------


def decode(key: bytes, value: bytes | None) -> TransactionRecord | UnknownRecord:
    """The typed record behind a key and value; raises ``RecordFormatError``."""
    try:
        reader = FlexibleReader(key)
        key_version = reader.int16()
        if key_version != KEY_VERSION:
            return UnknownRecord(key_version)
        transactional_id = reader.string()
        if value is None:
            return TransactionRecord(transactional_id, None)
        reader = FlexibleReader(value)
        value_version = reader.int16()
        if value_version not in VALUE_VERSIONS:
            return UnknownRecord(key_version, value_version)
        return TransactionRecord(transactional_id, _decode_value(reader, value_version))
    except WireFormatError as exc:
        raise RecordFormatError(f"malformed {TRANSACTION_STATE_TOPIC} record: {exc}") from exc


def _decode_value(reader: FlexibleReader, version: int) -> TransactionLogValue:
    producer_id, epoch, timeout = reader.int64(), reader.int16(), reader.int32()
    status = reader.int8()
    try:
        state = TransactionState(status)
    except ValueError:
        raise RecordFormatError(f"unknown transaction status {status}") from None
    if version == 0:
        count = reader.int32()
        if count < -1:
            raise WireFormatError(f"negative array length {count}")
        topics = None if count == -1 else tuple(_read_topic_v0(reader) for _ in range(count))
    else:
        topics = reader.compact_array(_read_topic_v1)
    last_update, start = reader.int64(), reader.int64()
    tags = reader.tagged_fields() if version >= 1 else {}
    if reader.remaining:
        raise RecordFormatError(f"{reader.remaining} bytes after TransactionLogValue")
    partitions: frozenset[TopicPartition] = frozenset()
    if state is not TransactionState.EMPTY and topics:
        partitions = frozenset((topic, index) for topic, indexes in topics for index in indexes)
    return TransactionLogValue(
        producer_id=producer_id,
        producer_epoch=epoch,
        timeout_ms=timeout,
        state=state,
        partitions=partitions,
        last_update_timestamp_ms=last_update,
        start_timestamp_ms=start,
        previous_producer_id=_tag_int64(tags, _TAG_PREVIOUS_PRODUCER_ID),
        next_producer_id=_tag_int64(tags, _TAG_NEXT_PRODUCER_ID),
        client_transaction_version=(
            tags[_TAG_CLIENT_TRANSACTION_VERSION].int16()
            if _TAG_CLIENT_TRANSACTION_VERSION in tags
            else 0
        ),
    )


def _tag_int64(tags: Mapping[int, FlexibleReader], tag: int) -> int:
    return tags[tag].int64() if tag in tags else NO_PRODUCER_ID


def _read_topic_v0(reader: FlexibleReader) -> tuple[str, tuple[int, ...]]:
    return reader.string(), reader.array(FlexibleReader.int32)


def _read_topic_v1(reader: FlexibleReader) -> tuple[str, tuple[int, ...]]:
    topic = reader.compact_string()
    indexes = reader.compact_array(FlexibleReader.int32) or ()
    reader.tagged_fields()
    return topic, indexes


# -- loading ------------------------------------------------------------------------------


def replay(records: Iterable[tuple[bytes, bytes | None]]) -> dict[str, TransactionLogValue]:
    """The latest state of every transactional id in a partition's records, in log order;
    a tombstone forgets the id, unknown versions are skipped."""
    states: dict[str, TransactionLogValue] = {}
    for key, value in records:
        record = decode(key, value)
        if isinstance(record, UnknownRecord):
            continue
        if record.value is None:
            states.pop(record.transactional_id, None)
        else:
            states[record.transactional_id] = record.value
    return states

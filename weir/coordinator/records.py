"""The coordinator's records in ``__consumer_offsets``, in Kafka's own binary formats.

Theory of operation
-------------------
``__consumer_offsets`` is a compacted topic of 50 partitions; the coordinator of a group is
the leader of partition ``partition_for(group_id)``. Each record's key says what it is about
and its value is that thing's latest state, so compaction keeps exactly what a new
coordinator needs, and a null value (tombstone) deletes. A new coordinator rebuilds its
groups and offsets with ``replay`` over the partition, in offset order; later records win.
Offset records of a transactional batch (TxnOffsetCommit) come to ``replay`` as ``TxnRecord``
and stay pending until their producer's ``TxnMarker``: COMMIT applies them, ABORT drops
them (``OffsetStore.add_pending`` / ``complete_transaction``).

Keys and values start with an int16 schema version. Kafka's generated ``*Key``/``*Value``
messages (``group-coordinator/src/main/resources/common/message``) are not in kio, and these
versions are short and non-flexible, so they are written by hand with ``_wire``
(strings: int16 length + UTF-8, nullable = length -1; bytes: int32 length; arrays: int32
count)::

    OffsetCommitKey   v1   int16 1 | string group | string topic | int32 partition
    OffsetCommitValue v3   int16 3 | int64 offset | int32 leader_epoch | string metadata
                           | int64 commit_timestamp
                      v1   int16 1 | int64 offset | string metadata | int64 commit_timestamp
                           | int64 expire_timestamp     (only for an explicit retention)
    GroupMetadataKey  v2   int16 2 | string group
    GroupMetadataValue v3  int16 3 | string protocol_type | int32 generation
                           | string? protocol | string? leader | int64 current_state_timestamp
                           | [ string member_id | string? group_instance_id | string client_id
                             | string client_host | int32 rebalance_timeout
                             | int32 session_timeout | bytes subscription | bytes assignment ]

Key version 0 is the same layout as 1 (offsets); 2 is group metadata; higher versions belong
to coordinators Weir does not run (KIP-848 consumer groups, share groups) and decode to
``UnknownRecord``, which ``replay`` skips. Values of versions 0-3 decode; the flexible
version 4 (Kafka 3.5+ writes it only with newer metadata versions) is refused.

``partition_for`` is Kafka's ``Utils.abs(groupId.hashCode()) % partitions`` with Java's
``String.hashCode`` (UTF-16 code units, 32-bit wrap-around) and ``Utils.abs``
(``Integer.MIN_VALUE`` maps to 0), so Weir and Kafka place every group alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from weir.coordinator._wire import Reader, WireFormatError, Writer
from weir.coordinator.config import GroupConfig, OffsetConfig
from weir.coordinator.group import Group
from weir.coordinator.offsets import OffsetAndMetadata, OffsetCommitRecord, OffsetStore
from weir.coordinator.results import GroupSnapshot, MemberSnapshot

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "DEFAULT_OFFSETS_PARTITIONS",
    "GroupMetadataRecord",
    "Record",
    "RecordFormatError",
    "TxnMarker",
    "TxnRecord",
    "UnknownRecord",
    "decode",
    "encode",
    "encode_group_metadata",
    "encode_group_tombstone",
    "encode_offset_commit",
    "java_string_hash",
    "partition_for",
    "replay",
]

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3
_FLEXIBLE_VALUE_VERSION = 4


class RecordFormatError(ValueError):
    """A ``__consumer_offsets`` record Weir cannot read."""


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    """A group metadata record; ``value`` None is a tombstone (the group was deleted)."""

    group_id: str
    value: GroupSnapshot | None


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A record kind this coordinator does not own (key version > 2)."""

    key_version: int


Record = OffsetCommitRecord | GroupMetadataRecord | UnknownRecord

# -- encoding -----------------------------------------------------------------------------


def _offset_key(group_id: str, topic: str, partition: int) -> bytes:
    writer = Writer().int16(OFFSET_COMMIT_KEY_VERSION)
    return writer.string(group_id).string(topic).int32(partition).getvalue()


def _group_key(group_id: str) -> bytes:
    return Writer().int16(GROUP_METADATA_KEY_VERSION).string(group_id).getvalue()


def encode_offset_commit(
    group_id: str, topic: str, partition: int, offset: OffsetAndMetadata | None
) -> tuple[bytes, bytes | None]:
    """Key and value of an offset record; ``offset`` None gives a tombstone."""
    key = _offset_key(group_id, topic, partition)
    if offset is None:
        return key, None
    if offset.expire_timestamp_ms is not None:
        # Only version 1 has room for an explicit expiry (OffsetCommit v2-v4 retention).
        writer = Writer().int16(OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY).int64(offset.offset)
        writer.string(offset.metadata).int64(offset.commit_timestamp_ms)
        return key, writer.int64(offset.expire_timestamp_ms).getvalue()
    writer = Writer().int16(OFFSET_COMMIT_VALUE_VERSION).int64(offset.offset)
    writer.int32(offset.leader_epoch).string(offset.metadata)
    return key, writer.int64(offset.commit_timestamp_ms).getvalue()


def _write_member(writer: Writer, member: MemberSnapshot) -> None:
    writer.string(member.member_id).nullable_string(member.group_instance_id)
    writer.string(member.client_id).string(member.client_host)
    writer.int32(member.rebalance_timeout_ms).int32(member.session_timeout_ms)
    writer.bytes_(member.subscription).bytes_(member.assignment)


def encode_group_metadata(group: Group | GroupSnapshot) -> tuple[bytes, bytes]:
    """Key and value (GroupMetadataValue v3) of a group's metadata record."""
    snapshot = group.snapshot() if isinstance(group, Group) else group
    writer = Writer().int16(GROUP_METADATA_VALUE_VERSION)
    writer.string(snapshot.protocol_type).int32(snapshot.generation_id)
    writer.nullable_string(snapshot.protocol_name).nullable_string(snapshot.leader)
    writer.int64(snapshot.current_state_timestamp_ms)
    writer.array(snapshot.members, _write_member)
    return _group_key(snapshot.group_id), writer.getvalue()


def encode_group_tombstone(group_id: str) -> tuple[bytes, None]:
    """Key of a deleted group's tombstone."""
    return _group_key(group_id), None


def encode(record: Record) -> tuple[bytes, bytes | None]:
    """Key and value of any record ``decode`` returns."""
    if isinstance(record, OffsetCommitRecord):
        return encode_offset_commit(record.group_id, record.topic, record.partition, record.value)
    if isinstance(record, GroupMetadataRecord):
        if record.value is None:
            return encode_group_tombstone(record.group_id)
        return encode_group_metadata(record.value)
    raise RecordFormatError(f"cannot encode a record of key version {record.key_version}")


# -- decoding -----------------------------------------------------------------------------


def decode(key: bytes, value: bytes | None) -> Record:
    """The typed record behind a key and value; raises ``RecordFormatError``."""
    try:
        reader = Reader(key)
        key_version = reader.int16()
        if key_version in (0, 1):
            group_id, topic, partition = reader.string(), reader.string(), reader.int32()
            offset = None if value is None else _decode_offset_value(value)
            return OffsetCommitRecord(group_id, topic, partition, offset)
        if key_version == GROUP_METADATA_KEY_VERSION:
            group_id = reader.string()
            snapshot = None if value is None else _decode_group_value(group_id, value)
            return GroupMetadataRecord(group_id, snapshot)
        if key_version < 0:
            raise RecordFormatError(f"negative key version {key_version}")
        return UnknownRecord(key_version)
    except WireFormatError as exc:
        raise RecordFormatError(f"malformed {CONSUMER_OFFSETS_TOPIC} record: {exc}") from exc


def _value_version(reader: Reader, kind: str) -> int:
    version = reader.int16()
    if version >= _FLEXIBLE_VALUE_VERSION or version < 0:
        raise RecordFormatError(f"unsupported {kind} version {version}")
    return version


def _decode_offset_value(value: bytes) -> OffsetAndMetadata:
    reader = Reader(value)
    version = _value_version(reader, "OffsetCommitValue")
    offset = reader.int64()
    leader_epoch = reader.int32() if version >= 3 else -1
    metadata = reader.string()
    commit_timestamp = reader.int64()
    expire = reader.int64() if version == 1 else -1
    return OffsetAndMetadata(
        offset, leader_epoch, metadata, commit_timestamp, None if expire == -1 else expire
    )


def _member_reader(version: int) -> Callable[[Reader], MemberSnapshot]:
    def read(reader: Reader) -> MemberSnapshot:
        member_id = reader.string()
        instance_id = reader.nullable_string() if version >= 3 else None
        client_id, client_host = reader.string(), reader.string()
        rebalance_timeout = reader.int32() if version >= 1 else -1
        session_timeout = reader.int32()
        subscription, assignment = reader.bytes_(), reader.bytes_()
        if rebalance_timeout == -1:
            rebalance_timeout = session_timeout  # v0 members: Kafka uses the session timeout
        return MemberSnapshot(
            member_id,
            instance_id,
            client_id,
            client_host,
            rebalance_timeout,
            session_timeout,
            subscription,
            assignment,
        )

    return read


def _decode_group_value(group_id: str, value: bytes) -> GroupSnapshot:
    reader = Reader(value)
    version = _value_version(reader, "GroupMetadataValue")
    protocol_type, generation = reader.string(), reader.int32()
    protocol, leader = reader.nullable_string(), reader.nullable_string()
    timestamp = reader.int64() if version >= 2 else -1
    members = reader.array(_member_reader(version))
    return GroupSnapshot(group_id, protocol_type, generation, protocol, leader, timestamp, members)


# -- loading ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """A record of a transactional batch: pending until its producer's marker."""

    producer_id: int
    log_offset: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """A COMMIT (``commit``) or ABORT marker of ``producer_id``'s transaction."""

    producer_id: int
    commit: bool


def replay(
    records: Iterable[tuple[bytes, bytes | None] | TxnRecord | TxnMarker],
    *,
    now_ms: int,
    group_config: GroupConfig | None = None,
    offset_config: OffsetConfig | None = None,
) -> tuple[dict[str, Group], OffsetStore]:
    """Rebuild a partition's groups and offsets from its records, in log order: (key, value)
    for a plain record, ``TxnRecord`` / ``TxnMarker`` for transactions.

    Groups that have offsets (committed or pending) but no metadata record (simple
    consumers) come back as Empty groups, as in Kafka. Sessions of loaded members start at
    ``now_ms``. Transactions with no marker yet stay pending in the store.
    """
    store = OffsetStore(offset_config)
    snapshots: dict[str, GroupSnapshot] = {}
    for item in records:
        if isinstance(item, TxnMarker):
            store.complete_transaction(item.producer_id, commit=item.commit)
            continue
        if isinstance(item, TxnRecord):
            txn_record = decode(item.key, item.value)
            if isinstance(txn_record, OffsetCommitRecord):
                store.add_pending(item.producer_id, [txn_record], item.log_offset)
            continue
        record = decode(*item)
        if isinstance(record, OffsetCommitRecord):
            store.apply(record)
        elif isinstance(record, GroupMetadataRecord):
            if record.value is None:
                snapshots.pop(record.group_id, None)
            else:
                snapshots[record.group_id] = record.value
    groups = {
        group_id: Group.from_snapshot(snapshot, now_ms=now_ms, config=group_config)
        for group_id, snapshot in snapshots.items()
    }
    for group_id in sorted((store.group_ids() | store.pending_group_ids()) - groups.keys()):
        groups[group_id] = Group(group_id, now_ms=now_ms, config=group_config)
    return groups, store


# -- placement ----------------------------------------------------------------------------


def java_string_hash(value: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code
    units, in 32-bit two's complement."""
    encoded = value.encode("utf-16-be")
    h = 0
    for i in range(0, len(encoded), 2):
        h = (31 * h + (encoded[i] << 8 | encoded[i + 1])) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def partition_for(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition that holds ``group_id`` (Kafka's ``partitionFor``)."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % partitions

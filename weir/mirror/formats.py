"""MirrorMaker 2's internal record formats, byte for byte.

Weir's mirror writes the same three internal record kinds that MirrorMaker 2 (KIP-382) writes,
so MM2's own tooling (``RemoteClusterUtils.translateOffsets``, ``MirrorClient``, dashboards
that decode ``heartbeats``) reads Weir's output, and Weir reads what a real MM2 wrote before a
migration. This module is pure: bytes in, values out, and the reverse. Topic names
(``mm2-offset-syncs.<cluster>.internal``, ``<source>.checkpoints.internal``, ``heartbeats``)
belong to the replication policy, not here.

Where the layouts come from
---------------------------
apache/kafka at commit 1eb7644349cb07139d6a3c1ad1986979647cac99:

- ``connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSync.java``
- ``connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/Checkpoint.java``
- ``connect/mirror-client/src/main/java/org/apache/kafka/connect/mirror/Heartbeat.java``
- ``clients/src/main/java/org/apache/kafka/common/protocol/types/{Type,Schema}.java`` for
  the primitive encodings
- ``connect/mirror/src/main/java/org/apache/kafka/connect/mirror/OffsetSyncStore.java`` and
  ``MirrorCheckpointTask.java`` for the translation rule below.

The records use Kafka's old non-flexible ``Schema``/``Struct`` encoding: fields are written in
schema order with no tags, no field count and no length prefix for the struct. Primitives:
``INT16``/``INT32``/``INT64`` are big-endian two's complement; ``STRING`` is an INT16 byte
length N (0..32767; never null, since MM2 uses the non-nullable type) followed by N bytes of
UTF-8. Each record's key and value are separate byte strings (the Kafka record key and value).

OffsetSync (topic ``mm2-offset-syncs.<cluster>.internal``; no version anywhere)::

    key   = STRING topic | INT32 partition            -- the *source* topic-partition
    value = INT64 upstreamOffset | INT64 offset       -- source offset, target offset

Checkpoint (topic ``<source>.checkpoints.internal`` on the target)::

    key   = STRING group | STRING topic | INT32 partition  -- topic is the *target* topic name
    value = INT16 version (= 0)                            -- "header" schema, then V0:
            | INT64 upstreamOffset | INT64 offset | STRING metadata

Heartbeat (topic ``heartbeats``)::

    key   = STRING sourceClusterAlias | STRING targetClusterAlias
    value = INT16 version (= 0) | INT64 timestamp      -- milliseconds since the epoch

Both versioned values start with the version as a separate one-field header struct; MM2 only
knows version 0 (it ``assert``s it), and so do we.

Where Weir is stricter than MM2's reader
----------------------------------------
Java's ``Schema.read`` ignores bytes left after the last field and decodes malformed UTF-8 to
U+FFFD; its errors are ``SchemaException`` or ``BufferUnderflowException``. Weir refuses
trailing bytes, bad UTF-8, negative or overlong lengths and unknown versions with one
``ValueError`` that names the record kind and the fault, because a record that does not
round-trip is either corruption or a future format we must not guess at. On the write side
MM2 refuses strings over 32767 UTF-8 bytes; so does Weir, when the value is built.

MM2's offset translation rule
-----------------------------
``mm2_translate_downstream`` is the arithmetic ``OffsetSyncStore.translateDownstream`` applies
once it has picked a sync (the newest kept sync whose upstream offset is <= the group's
committed offset, else the oldest kept one): equal upstream offsets give the sync's downstream
offset; a group past the sync gives downstream + 1 (MM2 cannot know how many records after the
sync were replicated, so it never guesses further; the consumer re-reads the gap); a sync past
the group gives -1, which ``MirrorCheckpointTask`` still writes as a checkpoint. Weir's exact
translation is elsewhere; this is here to read, reproduce and compare MM2's answers.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "CHECKPOINT_VERSION",
    "HEARTBEAT_VERSION",
    "Checkpoint",
    "Heartbeat",
    "OffsetSync",
    "mm2_translate_downstream",
]

CHECKPOINT_VERSION = 0
HEARTBEAT_VERSION = 0

_MAX_STRING_BYTES = 0x7FFF  # Short.MAX_VALUE: Type.STRING's length is a signed INT16
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_RANGES = {
    "INT16": (-(2**15), 2**15 - 1),
    "INT32": (-(2**31), 2**31 - 1),
    "INT64": (-(2**63), 2**63 - 1),
}


class _Reader:
    """Reads one Schema-encoded byte string; every fault is a ValueError naming the part."""

    __slots__ = ("_data", "_part", "_pos")

    def __init__(self, data: bytes, part: str) -> None:
        self._data = bytes(data)
        self._part = part  # e.g. "Checkpoint value"
        self._pos = 0

    def _take(self, n: int, field: str) -> bytes:
        end = self._pos + n
        if end > len(self._data):
            raise ValueError(
                f"{self._part} truncated: field {field!r} needs {n} bytes at offset "
                f"{self._pos}, only {len(self._data) - self._pos} left"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def int16(self, field: str) -> int:
        return _INT16.unpack(self._take(2, field))[0]

    def int32(self, field: str) -> int:
        return _INT32.unpack(self._take(4, field))[0]

    def int64(self, field: str) -> int:
        return _INT64.unpack(self._take(8, field))[0]

    def string(self, field: str) -> str:
        length = self.int16(field)
        if length < 0:
            raise ValueError(f"{self._part}: field {field!r} has negative length {length}")
        raw = self._take(length, field)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{self._part}: field {field!r} is not valid UTF-8 ({exc})") from None

    def end(self) -> None:
        if self._pos != len(self._data):
            raise ValueError(
                f"{self._part}: {len(self._data) - self._pos} trailing bytes after the last field"
            )


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    return _INT16.pack(len(raw)) + raw


def _check_int(kind: str, field: str, value: int, type_name: str) -> None:
    low, high = _RANGES[type_name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{kind}: {field}={value!r} is not an {type_name}")


def _check_string(kind: str, field: str, value: str) -> None:
    if not isinstance(value, str):
        raise ValueError(f"{kind}: {field}={value!r} is not a string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"{kind}: {field} cannot be encoded as UTF-8 ({exc})") from None
    if size > _MAX_STRING_BYTES:
        raise ValueError(
            f"{kind}: {field} is {size} UTF-8 bytes, more than a STRING holds ({_MAX_STRING_BYTES})"
        )


def _check_version(kind: str, version: int, known: int) -> None:
    if version != known:
        raise ValueError(f"{kind} value: unknown version {version} (only {known} is defined)")


@dataclass(frozen=True, slots=True)
class OffsetSync:
    """One source offset and the target offset its record was written at (source topic name)."""

    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int

    KIND: ClassVar[str] = "OffsetSync"

    def __post_init__(self) -> None:
        _check_string(self.KIND, "topic", self.topic)
        _check_int(self.KIND, "partition", self.partition, "INT32")
        _check_int(self.KIND, "upstream_offset", self.upstream_offset, "INT64")
        _check_int(self.KIND, "downstream_offset", self.downstream_offset, "INT64")

    def to_record(self) -> tuple[bytes, bytes]:
        """The Kafka record key and value MM2 writes for this sync."""
        key = _string(self.topic) + _INT32.pack(self.partition)
        value = _INT64.pack(self.upstream_offset) + _INT64.pack(self.downstream_offset)
        return key, value

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> OffsetSync:
        """Decode a record from an offset-syncs topic; ValueError if it is not exactly one."""
        k = _Reader(key, f"{cls.KIND} key")
        topic, partition = k.string("topic"), k.int32("partition")
        k.end()
        v = _Reader(value, f"{cls.KIND} value")
        upstream, downstream = v.int64("upstreamOffset"), v.int64("offset")
        v.end()
        return cls(topic, partition, upstream, downstream)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A source group's committed offset and its translation (target topic name in the key)."""

    group: str
    topic: str
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str = ""

    KIND: ClassVar[str] = "Checkpoint"

    def __post_init__(self) -> None:
        _check_string(self.KIND, "group", self.group)
        _check_string(self.KIND, "topic", self.topic)
        _check_int(self.KIND, "partition", self.partition, "INT32")
        _check_int(self.KIND, "upstream_offset", self.upstream_offset, "INT64")
        _check_int(self.KIND, "downstream_offset", self.downstream_offset, "INT64")
        _check_string(self.KIND, "metadata", self.metadata)

    def to_record(self) -> tuple[bytes, bytes]:
        """The Kafka record key and value MM2 writes for this checkpoint (version 0)."""
        key = _string(self.group) + _string(self.topic) + _INT32.pack(self.partition)
        value = (
            _INT16.pack(CHECKPOINT_VERSION)
            + _INT64.pack(self.upstream_offset)
            + _INT64.pack(self.downstream_offset)
            + _string(self.metadata)
        )
        return key, value

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> Checkpoint:
        """Decode a record from a checkpoints topic; ValueError if it is not exactly one."""
        v = _Reader(value, f"{cls.KIND} value")
        _check_version(cls.KIND, v.int16("version"), CHECKPOINT_VERSION)
        upstream, downstream = v.int64("upstreamOffset"), v.int64("offset")
        metadata = v.string("metadata")
        v.end()
        k = _Reader(key, f"{cls.KIND} key")
        group, topic, partition = k.string("group"), k.string("topic"), k.int32("partition")
        k.end()
        return cls(group, topic, partition, upstream, downstream, metadata)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Proof that the flow ``source -> target`` was alive at ``timestamp_ms``."""

    source_cluster_alias: str
    target_cluster_alias: str
    timestamp_ms: int

    KIND: ClassVar[str] = "Heartbeat"

    def __post_init__(self) -> None:
        _check_string(self.KIND, "source_cluster_alias", self.source_cluster_alias)
        _check_string(self.KIND, "target_cluster_alias", self.target_cluster_alias)
        _check_int(self.KIND, "timestamp_ms", self.timestamp_ms, "INT64")

    def to_record(self) -> tuple[bytes, bytes]:
        """The Kafka record key and value MM2 writes for this heartbeat (version 0)."""
        key = _string(self.source_cluster_alias) + _string(self.target_cluster_alias)
        value = _INT16.pack(HEARTBEAT_VERSION) + _INT64.pack(self.timestamp_ms)
        return key, value

    @classmethod
    def from_record(cls, key: bytes, value: bytes) -> Heartbeat:
        """Decode a record from a heartbeats topic; ValueError if it is not exactly one."""
        v = _Reader(value, f"{cls.KIND} value")
        _check_version(cls.KIND, v.int16("version"), HEARTBEAT_VERSION)
        timestamp = v.int64("timestamp")
        v.end()
        k = _Reader(key, f"{cls.KIND} key")
        source, target = k.string("sourceClusterAlias"), k.string("targetClusterAlias")
        k.end()
        return cls(source, target, timestamp)


def mm2_translate_downstream(sync: OffsetSync, upstream_offset: int) -> int:
    """The target offset MM2 checkpoints for ``upstream_offset``, given the sync it picked.

    ``sync`` must be the one ``OffsetSyncStore`` would pick: the newest kept sync with
    ``upstream_offset <= upstream_offset``, or the oldest kept sync if none is that old.
    Returns -1 when that sync is past the group (too old to translate), the sync's downstream
    offset when the group sits exactly on it, and one past it otherwise.
    """
    if sync.upstream_offset > upstream_offset:
        return -1
    if sync.upstream_offset == upstream_offset:
        return sync.downstream_offset
    return sync.downstream_offset + 1

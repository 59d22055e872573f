"""The metadata log's record types, after KRaft's (``RegisterBrokerRecord``, ``TopicRecord``...).

Theory of operation
-------------------
Every change to the cluster metadata is appended to the Redis Stream ``metadata_log`` as one
or more records, in the same Lua script that updates the materialized state, so the log and
the state never disagree. A stream entry holds one record::

    type  RegisterBroker | UnregisterBroker | Topic | Partition | PartitionChange |
          RemoveTopic | Config | ClientQuota
    data  the record's fields as JSON
    end   "1" on the last record of one atomic write (a batch)

Readers apply a batch only once they have seen its ``end`` entry, so nobody ever sees a topic
without its partitions. Records are frozen dataclasses; ``to_fields()`` / ``from_fields()``
convert to and from stream entries, ``to_json()`` / ``from_json()`` to and from ``data``.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Self

__all__ = [
    "RECORD_TYPES",
    "ClientQuotaRecord",
    "ConfigRecord",
    "ListenerEndpoint",
    "PartitionChangeRecord",
    "PartitionRecord",
    "Record",
    "RegisterBrokerRecord",
    "RemoveTopicRecord",
    "ResourceType",
    "TopicRecord",
    "UnknownRecordError",
    "UnregisterBrokerRecord",
    "parse_endpoints",
    "record_from_fields",
]


class ResourceType(StrEnum):
    """Config resources, named as in the Redis keys (``configs:topic:<name>``)."""

    TOPIC = "topic"
    BROKER = "broker"


class UnknownRecordError(ValueError):
    """A stream entry this version cannot read (written by a newer Weir, or damaged)."""


class _Record:
    """Serialization shared by every record type."""

    __slots__ = ()
    TYPE: ClassVar[str]

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), default=str, separators=(",", ":"))  # type: ignore[call-overload]

    def to_fields(self) -> dict[str, str]:
        return {"type": self.TYPE, "data": self.to_json()}

    @classmethod
    def from_json(cls, data: str | bytes) -> Self:
        raw = json.loads(data)
        if not isinstance(raw, dict):
            raise UnknownRecordError(f"{cls.TYPE} data is not a JSON object: {data!r}")
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        try:
            return cls(**{k: _coerce(k, v) for k, v in raw.items() if k in names})
        except (TypeError, ValueError) as exc:
            raise UnknownRecordError(f"bad {cls.TYPE} record {data!r}: {exc}") from None

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Self:
        record = record_from_fields(fields)
        if not isinstance(record, cls):
            raise UnknownRecordError(f"expected a {cls.TYPE} record, got {record.TYPE}")
        return record


@dataclass(frozen=True, slots=True)
class ListenerEndpoint:
    """One advertised listener of a broker (Kafka's ``BrokerEndpoint``)."""

    name: str
    host: str
    port: int
    protocol: str

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ListenerEndpoint:
        return cls(
            name=str(raw["name"]),
            host=str(raw["host"]),
            port=int(raw["port"]),
            protocol=str(raw.get("protocol") or raw["name"]),
        )


def parse_endpoints(value: Any) -> tuple[ListenerEndpoint, ...]:
    """A JSON ``endpoints`` list (absent in registrations of older brokers: ``()``).

    Redis' cjson writes an empty list as ``{}``: anything but a list means none.
    """
    if not isinstance(value, list):
        return ()
    return tuple(ListenerEndpoint.from_dict(e) for e in value)


def _coerce(key: str, value: Any) -> Any:
    if key == "topic_id" and value is not None:
        return uuid.UUID(str(value))
    if key == "endpoints":
        return parse_endpoints(value)
    if key == "entity" and isinstance(value, list):
        return tuple((str(t), None if n is None else str(n)) for t, n in value)
    if isinstance(value, list):
        return tuple(value)
    return value


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord(_Record):
    """A broker registered (or re-registered) with a new epoch."""

    TYPE: ClassVar[str] = "RegisterBroker"
    broker_id: int
    epoch: int
    host: str
    port: int
    rack: str | None = None
    # Every advertised listener, primary first; () in records of brokers before issue 8.
    endpoints: tuple[ListenerEndpoint, ...] = ()


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord(_Record):
    """A broker deregistered cleanly (shutdown)."""

    TYPE: ClassVar[str] = "UnregisterBroker"
    broker_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord(_Record):
    """A topic was created; its partitions follow in the same batch."""

    TYPE: ClassVar[str] = "Topic"
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord(_Record):
    """A partition's full state (new partition). The first replica is the preferred leader."""

    TYPE: ClassVar[str] = "Partition"
    topic_id: uuid.UUID
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord(_Record):
    """A change to an existing partition; ``None`` fields are unchanged.

    Unlike KRaft the record carries the resulting epochs, so applying it needs no rules.
    ``leader`` -1 means no leader.
    """

    TYPE: ClassVar[str] = "PartitionChange"
    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    partition_epoch: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord(_Record):
    """A topic and its config overrides were deleted."""

    TYPE: ClassVar[str] = "RemoveTopic"
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class ConfigRecord(_Record):
    """A dynamic config override was set (``value``) or deleted (``value`` None).

    ``resource_name`` is the topic name, the broker id, or "" for the cluster-wide default.
    """

    TYPE: ClassVar[str] = "Config"
    resource_type: str
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord(_Record):
    """A client quota was set (``value``) or removed (``value`` None), KRaft's QuotaRecord.

    ``entity`` is ``(entity type, name)`` pairs sorted by type (``user``, ``client-id``); a
    None name is the ``<default>`` entity. ``value`` is the quota as a decimal string.
    """

    TYPE: ClassVar[str] = "ClientQuota"
    entity: tuple[tuple[str, str | None], ...]
    key: str
    value: str | None


Record = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | PartitionChangeRecord
    | RemoveTopicRecord
    | ConfigRecord
    | ClientQuotaRecord
)

RECORD_TYPES: Mapping[str, type[Any]] = {
    cls.TYPE: cls
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        RemoveTopicRecord,
        ConfigRecord,
        ClientQuotaRecord,
    )
}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def record_from_fields(fields: Mapping[Any, Any]) -> Record:
    """Decode one stream entry's fields (str or bytes keys) into a record."""
    decoded = {_text(k): v for k, v in fields.items()}
    type_name = _text(decoded.get("type", ""))
    cls = RECORD_TYPES.get(type_name)
    if cls is None or "data" not in decoded:
        raise UnknownRecordError(f"unknown metadata record {decoded!r}")
    return cls.from_json(decoded["data"])  # type: ignore[no-any-return]

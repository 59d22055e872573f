"""The cluster metadata image: an immutable snapshot of brokers, topics, partitions and configs.

Theory of operation
-------------------
``ClusterImage`` is what every broker serves from. It is built once from the materialized
state in Redis (``ClusterImage.from_state``, used by ``MetadataStore.snapshot``) and then moved
forward by applying metadata-log records (``image.apply(records)``), like KRaft's
``MetadataImage`` + ``MetadataDelta``. Applying is pure: no I/O, no clock, so tests drive it
with hand-made records. An image remembers the stream id it corresponds to, so a reader knows
where to resume tailing.

Liveness is not in the log: it comes from the brokers' expiring leases and the controller
lease, polled by the cache and attached with ``with_liveness``. So do the partitions each
live broker reports offline (its log failed on that broker's disk; KRaft's broker heartbeat
carries offline log directories the same way): for those partitions the broker counts as
not live (``offline_brokers``), so the controller moves their leadership and ISR away from it.
A live broker in controlled shutdown (``shutting_down``) counts as not live for every
partition in the same way.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from weir.dataclass_util import copy_fields
from weir.metadata.records import (
    ClientQuotaRecord,
    ConfigRecord,
    ListenerEndpoint,
    PartitionChangeRecord,
    PartitionRecord,
    Record,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    ResourceType,
    TopicRecord,
    UnregisterBrokerRecord,
    parse_endpoints,
)
from weir.quotas import QuotaEntity

__all__ = [
    "BrokerImage",
    "ClusterImage",
    "ControllerLease",
    "ImageDiff",
    "ListenerEndpoint",
    "PartitionImage",
    "TopicImage",
]

log = logging.getLogger("weir.metadata")

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _empty() -> Mapping[Any, Any]:
    return _EMPTY


def _frozen(mapping: dict[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(mapping)


@dataclass(frozen=True, slots=True)
class BrokerImage:
    """A broker's registration: id, epoch, its primary endpoint and every listener's.

    ``host``/``port`` are the primary (first) listener's advertised endpoint; ``endpoints``
    lists every listener, primary included. A registration written before brokers
    registered all their listeners has only the primary, which was always PLAINTEXT.
    """

    broker_id: int
    epoch: int
    host: str
    port: int
    rack: str | None = None
    endpoints: tuple[ListenerEndpoint, ...] = ()

    def __post_init__(self) -> None:
        if not self.endpoints:
            primary = ListenerEndpoint("PLAINTEXT", self.host, self.port, "PLAINTEXT")
            object.__setattr__(self, "endpoints", (primary,))

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        """The advertised ``(host, port)`` of ``listener`` (a name), None if it has none."""
        for endpoint in self.endpoints:
            if endpoint.name == listener:
                return endpoint.host, endpoint.port
        return None

    @classmethod
    def from_json(cls, text: str | bytes) -> BrokerImage:
        raw = json.loads(text)
        return cls(
            broker_id=int(raw["broker_id"]),
            epoch=int(raw["epoch"]),
            host=str(raw["host"]),
            port=int(raw["port"]),
            rack=raw.get("rack") or None,
            endpoints=parse_endpoints(raw.get("endpoints")),
        )


@dataclass(frozen=True, slots=True)
class ControllerLease:
    """Who holds the controller lease, at which controller epoch."""

    broker_id: int
    epoch: int

    @classmethod
    def parse(cls, value: str | bytes | None) -> ControllerLease | None:
        """The ``controller`` key's value ``<broker_id>:<epoch>``."""
        if not value:
            return None
        text = value.decode() if isinstance(value, bytes) else value
        broker_id, _, epoch = text.partition(":")
        try:
            return cls(int(broker_id), int(epoch))
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class PartitionImage:
    """One partition: replicas (first = preferred leader), ISR, leader and epochs."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "adding_replicas": list(self.adding_replicas),
            "removing_replicas": list(self.removing_replicas),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> PartitionImage:
        def ints(key: str) -> tuple[int, ...]:
            value = raw.get(key) or ()
            # Redis' cjson turns an empty list into {}: accept both.
            return tuple(int(v) for v in value) if isinstance(value, list) else ()

        return cls(
            partition=int(raw["partition"]),
            replicas=ints("replicas"),
            isr=ints("isr"),
            leader=int(raw["leader"]),
            leader_epoch=int(raw.get("leader_epoch", 0)),
            partition_epoch=int(raw.get("partition_epoch", 0)),
            adding_replicas=ints("adding_replicas"),
            removing_replicas=ints("removing_replicas"),
        )

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionImage:
        """The partition a PartitionRecord creates: the record's fields but its topic id."""
        return copy_fields(cls, record)

    def to_record(self, topic_id: uuid.UUID) -> PartitionRecord:
        """The PartitionRecord that creates this partition in topic ``topic_id``."""
        return copy_fields(PartitionRecord, self, topic_id=topic_id)

    def changed_by(self, change: PartitionChangeRecord) -> PartitionImage:
        return replace(
            self,
            leader=self.leader if change.leader is None else change.leader,
            isr=self.isr if change.isr is None else tuple(change.isr),
            replicas=self.replicas if change.replicas is None else tuple(change.replicas),
            adding_replicas=(
                self.adding_replicas
                if change.adding_replicas is None
                else tuple(change.adding_replicas)
            ),
            removing_replicas=(
                self.removing_replicas
                if change.removing_replicas is None
                else tuple(change.removing_replicas)
            ),
            leader_epoch=change.leader_epoch,
            partition_epoch=change.partition_epoch,
        )


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: name, id and its partitions by index."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionImage] = field(default_factory=_empty)

    def to_json(self) -> str:
        """The JSON kept in the ``topics`` hash."""
        return json.dumps(
            {
                "topic_id": str(self.topic_id),
                "partitions": [self.partitions[i].to_dict() for i in sorted(self.partitions)],
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, name: str, text: str | bytes) -> TopicImage:
        raw = json.loads(text)
        parts = raw.get("partitions") or []
        partitions = [PartitionImage.from_dict(p) for p in parts] if isinstance(parts, list) else []
        return cls(
            name=name,
            topic_id=uuid.UUID(raw["topic_id"]),
            partitions=_frozen({p.partition: p for p in partitions}),
        )


@dataclass(frozen=True, slots=True)
class ClusterImage:
    """Everything a broker knows about the cluster, as of ``stream_id`` in the metadata log.

    ``registrations`` holds every registered broker (last known endpoint); ``brokers`` only
    those with a live lease. Config overrides are raw strings as stored; ``broker_configs``
    is keyed by broker id as a string, ``""`` being the cluster-wide default.
    """

    stream_id: str = "0-0"
    topics: Mapping[str, TopicImage] = field(default_factory=_empty)
    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=_empty)
    registrations: Mapping[int, BrokerImage] = field(default_factory=_empty)
    live_broker_ids: frozenset[int] = frozenset()
    controller: ControllerLease | None = None
    # broker id -> the partitions (topic, index) it reports offline on its disk.
    offline_replicas: Mapping[int, frozenset[tuple[str, int]]] = field(default_factory=_empty)
    # Live brokers that asked for a controlled shutdown.
    shutting_down: frozenset[int] = frozenset()
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=_empty)
    broker_configs: Mapping[str, Mapping[str, str]] = field(default_factory=_empty)
    incarnation: str = ""
    # Client quotas (``weir.quotas``): entity → {quota key: value}.
    client_quotas: Mapping[QuotaEntity, Mapping[str, float]] = field(default_factory=_empty)

    @property
    def brokers(self) -> Mapping[int, BrokerImage]:
        """Live brokers (registered and holding a lease), by id."""
        return _frozen({i: b for i, b in self.registrations.items() if i in self.live_broker_ids})

    @property
    def controller_id(self) -> int | None:
        return self.controller.broker_id if self.controller else None

    def topic_config(self, name: str) -> Mapping[str, str]:
        return self.topic_configs.get(name, _EMPTY)

    def broker_config(self, broker_id: int | str) -> Mapping[str, str]:
        """Per-broker overrides of ``broker_id`` (``""`` → the cluster-wide default)."""
        return self.broker_configs.get(str(broker_id), _EMPTY)

    def apply(self, records: Iterable[Record], *, stream_id: str | None = None) -> ClusterImage:
        """The image after ``records`` (one or more batches), at ``stream_id``."""
        builder = _Builder(self)
        for record in records:
            builder.apply(record)
        return builder.build(stream_id or self.stream_id)

    def offline_brokers(self, topic: str, index: int) -> frozenset[int]:
        """Brokers that report ``topic``-``index`` offline on their disk: they can neither
        lead it nor stay in its ISR."""
        if not self.offline_replicas:
            return frozenset()
        key = (topic, index)
        return frozenset(b for b, parts in self.offline_replicas.items() if key in parts)

    def with_liveness(
        self,
        live_broker_ids: Iterable[int],
        controller: ControllerLease | None,
        offline_replicas: Mapping[int, frozenset[tuple[str, int]]] | None = None,
        shutting_down: Iterable[int] | None = None,
    ) -> ClusterImage:
        live = frozenset(live_broker_ids)
        offline = self.offline_replicas if offline_replicas is None else offline_replicas
        stopping = self.shutting_down if shutting_down is None else frozenset(shutting_down)
        if (
            live == self.live_broker_ids
            and controller == self.controller
            and offline == self.offline_replicas
            and stopping == self.shutting_down
        ):
            return self
        return replace(
            self,
            live_broker_ids=live,
            controller=controller,
            offline_replicas=_frozen({b: p for b, p in offline.items() if p}),
            shutting_down=stopping,
        )

    @classmethod
    def from_state(
        cls,
        *,
        stream_id: str,
        topics: Mapping[str, str | bytes],
        registrations: Mapping[str, str | bytes],
        configs: Mapping[str, Mapping[str, str]],
        live_broker_ids: Iterable[int] = (),
        controller: ControllerLease | None = None,
        incarnation: str = "",
        client_quotas: Mapping[str, str] | None = None,
    ) -> ClusterImage:
        """Build an image from the materialized state (``configs`` keyed ``topic:<name>``;
        ``client_quotas`` is the ``client_quotas`` hash, entity key → JSON values)."""
        topic_images = {name: TopicImage.from_json(name, text) for name, text in topics.items()}
        brokers = {}
        for text in registrations.values():
            broker = BrokerImage.from_json(text)
            brokers[broker.broker_id] = broker
        topic_configs: dict[str, Mapping[str, str]] = {}
        broker_configs: dict[str, Mapping[str, str]] = {}
        for resource, values in configs.items():
            kind, _, name = resource.partition(":")
            if not values:
                continue
            if kind == ResourceType.TOPIC:
                topic_configs[name] = _frozen(dict(values))
            elif kind == ResourceType.BROKER:
                broker_configs[name] = _frozen(dict(values))
        return cls(
            stream_id=stream_id,
            topics=_frozen(topic_images),
            topics_by_id=_frozen({t.topic_id: t for t in topic_images.values()}),
            registrations=_frozen(brokers),
            live_broker_ids=frozenset(live_broker_ids),
            controller=controller,
            topic_configs=_frozen(topic_configs),
            broker_configs=_frozen(broker_configs),
            incarnation=incarnation,
            client_quotas=_frozen(_parse_quotas(client_quotas or {})),
        )


def _parse_quotas(raw: Mapping[str, str]) -> dict[QuotaEntity, Mapping[str, float]]:
    """The ``client_quotas`` hash as entity → values (an unreadable field is skipped)."""
    quotas: dict[QuotaEntity, Mapping[str, float]] = {}
    for key, text in raw.items():
        try:
            values = json.loads(text)
            quotas[QuotaEntity.from_key(key)] = _frozen({k: float(v) for k, v in values.items()})
        except (ValueError, TypeError, AttributeError):
            log.warning("ignoring unreadable client quota %s = %s", key, text)
    return quotas


class _Builder:
    """Mutable working copy used while applying records; ``build`` freezes it again."""

    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self.topics: dict[str, TopicImage] = dict(image.topics)
        self.names_by_id: dict[uuid.UUID, str] = {t.topic_id: n for n, t in image.topics.items()}
        self.partitions: dict[str, dict[int, PartitionImage]] = {}  # touched topics only
        self.registrations = dict(image.registrations)
        self.topic_configs: dict[str, Mapping[str, str]] = dict(image.topic_configs)
        self.broker_configs: dict[str, Mapping[str, str]] = dict(image.broker_configs)
        self.client_quotas: dict[QuotaEntity, Mapping[str, float]] | None = None  # if touched

    def _parts(self, topic_id: uuid.UUID) -> dict[int, PartitionImage] | None:
        name = self.names_by_id.get(topic_id)
        if name is None:
            return None
        if name not in self.partitions:
            self.partitions[name] = dict(self.topics[name].partitions)
        return self.partitions[name]

    def apply(self, record: Record) -> None:
        match record:
            case RegisterBrokerRecord():
                self.registrations[record.broker_id] = copy_fields(BrokerImage, record)
            case UnregisterBrokerRecord():
                current = self.registrations.get(record.broker_id)
                if current is not None and current.epoch <= record.epoch:
                    del self.registrations[record.broker_id]
            case TopicRecord():
                self._remove_topic(record.name)
                self.topics[record.name] = TopicImage(record.name, record.topic_id)
                self.names_by_id[record.topic_id] = record.name
                self.partitions[record.name] = {}
            case PartitionRecord():
                parts = self._parts(record.topic_id)
                if parts is None:
                    log.warning("partition record for unknown topic id %s", record.topic_id)
                    return
                parts[record.partition] = PartitionImage.from_record(record)
            case PartitionChangeRecord():
                parts = self._parts(record.topic_id)
                current_part = parts.get(record.partition) if parts is not None else None
                if parts is None or current_part is None:
                    log.warning(
                        "partition change for unknown partition %s-%d",
                        record.topic_id,
                        record.partition,
                    )
                    return
                parts[record.partition] = current_part.changed_by(record)
            case RemoveTopicRecord():
                name = self.names_by_id.get(record.topic_id)
                if name is not None:
                    self._remove_topic(name)
            case ConfigRecord():
                self._apply_config(record)
            case ClientQuotaRecord():
                self._apply_quota(record)

    def _remove_topic(self, name: str) -> None:
        topic = self.topics.pop(name, None)
        if topic is not None:
            self.names_by_id.pop(topic.topic_id, None)
        self.partitions.pop(name, None)
        self.topic_configs.pop(name, None)

    def _apply_config(self, record: ConfigRecord) -> None:
        target = (
            self.topic_configs
            if record.resource_type == ResourceType.TOPIC
            else self.broker_configs
        )
        values = dict(target.get(record.resource_name, _EMPTY))
        if record.value is None:
            values.pop(record.name, None)
        else:
            values[record.name] = record.value
        if values:
            target[record.resource_name] = _frozen(values)
        else:
            target.pop(record.resource_name, None)

    def _apply_quota(self, record: ClientQuotaRecord) -> None:
        if self.client_quotas is None:
            self.client_quotas = dict(self.image.client_quotas)
        entity = QuotaEntity(tuple(sorted(record.entity, key=lambda c: c[0])))
        values = dict(self.client_quotas.get(entity, _EMPTY))
        if record.value is None:
            values.pop(record.key, None)
        else:
            values[record.key] = float(record.value)
        if values:
            self.client_quotas[entity] = _frozen(values)
        else:
            self.client_quotas.pop(entity, None)

    def build(self, stream_id: str) -> ClusterImage:
        for name, parts in self.partitions.items():
            if name in self.topics:
                self.topics[name] = replace(self.topics[name], partitions=_frozen(parts))
        return ClusterImage(
            stream_id=stream_id,
            topics=_frozen(self.topics),
            topics_by_id=_frozen({t.topic_id: t for t in self.topics.values()}),
            registrations=_frozen(self.registrations),
            live_broker_ids=self.image.live_broker_ids,
            controller=self.image.controller,
            offline_replicas=self.image.offline_replicas,
            shutting_down=self.image.shutting_down,
            topic_configs=_frozen(self.topic_configs),
            broker_configs=_frozen(self.broker_configs),
            incarnation=self.image.incarnation,
            client_quotas=(
                self.image.client_quotas
                if self.client_quotas is None
                else _frozen(self.client_quotas)
            ),
        )


@dataclass(frozen=True, slots=True)
class ImageDiff:
    """What changed between two images (for listeners that act on changes only)."""

    created_topics: frozenset[str]
    deleted_topics: frozenset[str]
    changed_topics: frozenset[str]
    changed_topic_configs: frozenset[str]
    changed_broker_configs: frozenset[str]
    brokers_changed: bool
    reset: bool

    @classmethod
    def between(cls, old: ClusterImage, new: ClusterImage) -> ImageDiff:
        """``reset``: the metadata store was wiped or replaced (its incarnation changed)."""
        old_ids = {n: t.topic_id for n, t in old.topics.items()}
        new_ids = {n: t.topic_id for n, t in new.topics.items()}
        created = {n for n, i in new_ids.items() if old_ids.get(n) != i}
        deleted = {n for n, i in old_ids.items() if new_ids.get(n) != i}
        changed = {
            n
            for n in new_ids.keys() & old_ids.keys()
            if n not in created and new.topics[n] != old.topics[n]
        }

        def changed_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> frozenset[str]:
            return frozenset(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))

        return cls(
            created_topics=frozenset(created),
            deleted_topics=frozenset(deleted),
            changed_topics=frozenset(changed),
            changed_topic_configs=changed_keys(old.topic_configs, new.topic_configs),
            changed_broker_configs=changed_keys(old.broker_configs, new.broker_configs),
            brokers_changed=(
                old.registrations != new.registrations
                or old.live_broker_ids != new.live_broker_ids
                or old.offline_replicas != new.offline_replicas
                or old.shutting_down != new.shutting_down
            ),
            reset=bool(old.incarnation) and old.incarnation != new.incarnation,
        )


def original_replicas(partition: PartitionImage) -> tuple[int, ...]:
    """The replica set before the ongoing reassignment (the set a cancel returns to)."""
    return tuple(r for r in partition.replicas if r not in partition.adding_replicas)


def target_replicas(partition: PartitionImage) -> tuple[int, ...]:
    """The replica set the ongoing reassignment moves to."""
    return tuple(r for r in partition.replicas if r not in partition.removing_replicas)

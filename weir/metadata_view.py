"""The broker's read side of the cluster metadata: what handlers and admin code look at.

Theory of operation
-------------------
The metadata cache (``weir.metadata.cache``) keeps the latest ``ClusterImage``; on every new
image the broker calls ``MetadataView.apply`` once, which rebuilds small immutable views
(``TopicView`` by name and by id, ``PartitionView``) and the effective broker config (static
overrides plus the dynamic ones of the image), and drops the cached effective topic configs.
Readers never touch Redis: when Redis is away they keep the last image.

``apply`` does not tell the waiters yet: the broker first reconciles its local replicas with
the image, then calls ``announce`` so that ``wait_for_metadata`` predicates that also look at
local replica state (leadership) see both changes together.

Which broker is the controller comes from the image, except for this broker's own lease,
which it knows first (``is_controller``, passed in). Listener endpoints answer "where is
broker N on listener L", this broker's own before its registration reaches the image.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from weir.config import (
    BrokerConfig,
    TopicConfig,
    describe_broker_config,
    describe_topic_config,
    effective_topic_config,
)
from weir.dataclass_util import copy_fields
from weir.log.log import LogConfig
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.image import BrokerImage, ClusterImage, ListenerEndpoint
from weir.replica_manager import Assignment
from weir.topic_names import INTERNAL_TOPICS

if TYPE_CHECKING:
    from weir.partition import Partition

__all__ = [
    "BrokerEndpoint",
    "MetadataChange",
    "MetadataView",
    "PartitionView",
    "TopicView",
    "log_config_of",
]


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """A live broker as clients see it (its primary endpoint)."""

    broker_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class PartitionView:
    """One partition's leadership and replica sets, as of the last image."""

    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicView:
    """One topic and its partitions, in partition order."""

    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionView, ...]


@dataclass(frozen=True, slots=True)
class MetadataChange:
    """What a new image means for this broker's replicas (see ``MetadataView.apply``)."""

    placed: tuple[Assignment, ...]
    live_topics: frozenset[str]
    # The metadata store was reset (a new incarnation): vanished replicas must not be
    # deleted, only closed.
    store_reset: bool


def log_config_of(config: TopicConfig) -> LogConfig:
    """The log layer's part of an effective topic config (the configs named alike, among them
    ``file.delete.delay.ms``, which falls back to ``log.segment.delete.delay.ms``).

    The roll time is Kafka's ``LogConfig.maxSegmentMs``: a compacted log also rolls once its
    active segment is ``max.compaction.lag.ms`` old, since the cleaner never touches the
    active segment and the lag could not be kept otherwise."""
    roll_ms = config.segment_ms
    if config.compact and config.max_compaction_lag_ms > 0:
        roll_ms = min(roll_ms, config.max_compaction_lag_ms)
    return copy_fields(LogConfig, config, segment_ms=roll_ms)


class MetadataView:
    """The last metadata image, seen through views; the effective broker and topic configs."""

    def __init__(
        self,
        *,
        broker_id: int,
        cluster_id: str,
        config: BrokerConfig,
        inter_broker_listener: str,
        own_endpoints: Callable[[], Sequence[ListenerEndpoint]],
        is_controller: Callable[[], bool],
        fresh_brokers: Callable[[], Awaitable[list[BrokerImage]]] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._config = config
        self._inter_broker_listener = inter_broker_listener
        self._own_endpoints = own_endpoints
        self._is_controller = is_controller
        self._fresh_brokers = fresh_brokers
        self._image = ClusterImage()
        self._topics: dict[str, TopicView] = {}
        self._topics_by_id: dict[uuid.UUID, TopicView] = {}
        self._topic_configs: dict[str, TopicConfig] = {}
        self._incarnation = ""
        self._changed = asyncio.Event()

    # -- updates -----------------------------------------------------------------------------
    def apply(self, image: ClusterImage) -> MetadataChange:
        """Rebuild the views and the effective config from ``image``."""
        self._image = image
        self._config = self._config.with_dynamic(
            dynamic_broker=image.broker_config(self.broker_id),
            dynamic_default=image.broker_config(""),
        )
        views: dict[str, TopicView] = {}
        placed: list[Assignment] = []
        live = set(image.brokers)
        for topic in image.topics.values():
            parts = []
            for p in sorted(topic.partitions.values(), key=lambda p: p.partition):
                # Views and assignments take the image's leader, epochs and replica sets as
                # they are; the image calls the partition's index ``partition``.
                # Down brokers, and those whose disk failed this partition (Kafka lists
                # replicas on an offline log directory here too).
                failed = image.offline_brokers(topic.name, p.partition)
                offline = tuple(r for r in p.replicas if r not in live or r in failed)
                parts.append(
                    copy_fields(PartitionView, p, index=p.partition, offline_replicas=offline)
                )
                if self.broker_id in p.replicas:
                    placed.append(
                        copy_fields(
                            Assignment,
                            p,
                            topic=topic.name,
                            index=p.partition,
                            topic_id=str(topic.topic_id),
                        )
                    )
            views[topic.name] = TopicView(
                name=topic.name,
                topic_id=uuid.UUID(str(topic.topic_id)),
                is_internal=topic.name in INTERNAL_TOPICS,
                partitions=tuple(parts),
            )
        self._topics = views
        self._topic_configs = {}
        self._topics_by_id = {v.topic_id: v for v in views.values()}
        reset = bool(self._incarnation) and image.incarnation != self._incarnation
        self._incarnation = image.incarnation
        return MetadataChange(placed=tuple(placed), live_topics=frozenset(views), store_reset=reset)

    def announce(self) -> None:
        """Wake ``wait_for_metadata`` callers: the image and its consequences are in place."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for_metadata(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds for the local image (or the timeout passes)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not predicate():
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
        return True

    # -- topics ------------------------------------------------------------------------------
    @property
    def image(self) -> ClusterImage:
        return self._image

    def topic_views(self) -> dict[str, TopicView]:
        return self._topics

    def topic_view_by_id(self, topic_id: uuid.UUID) -> TopicView | None:
        return self._topics_by_id.get(topic_id)

    def leader_error(self, topic: str, index: int, local: Partition | None) -> ErrorCode:
        """NONE when this broker leads ``topic``-``index`` (``local`` is its replica here,
        if any), else the error clients expect."""
        view = self._topics.get(topic)
        if view is None or not 0 <= index < len(view.partitions):
            return ErrorCode.unknown_topic_or_partition
        partition = view.partitions[index]
        if partition.leader < 0:
            return ErrorCode.leader_not_available
        if partition.leader != self.broker_id or local is None or not local.is_leader:
            return ErrorCode.not_leader_or_follower
        return ErrorCode.none

    # -- brokers -----------------------------------------------------------------------------
    def live_brokers(self) -> list[BrokerEndpoint]:
        """Brokers holding a lease, and the controller in any case when it is registered: it
        holds the controller lease, so it is alive even while its broker lease, which may
        have run out in a Redis failover, is being re-acquired. (A Metadata response naming a
        controller it does not list leaves librdkafka's admin client waiting for ever.)"""
        brokers = dict(self._image.brokers)
        controller = self.controller_id()
        if controller not in brokers and controller in self._image.registrations:
            brokers[controller] = self._image.registrations[controller]
        return [
            BrokerEndpoint(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
            for _, b in sorted(brokers.items())
        ]

    async def fresh_live_brokers(self) -> list[BrokerEndpoint]:
        """Live brokers read from Redis now (the image polls liveness once a second)."""
        if self._fresh_brokers is not None:
            try:
                return [
                    BrokerEndpoint(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
                    for b in await self._fresh_brokers()
                ]
            except MetadataUnavailableError:
                pass
        return self.live_brokers()

    def controller_id(self) -> int:
        if self._is_controller():
            return self.broker_id
        controller = self._image.controller_id
        return controller if controller is not None else -1

    def endpoint_of(self, broker_id: int) -> tuple[str, int] | None:
        """Where to reach ``broker_id``: its endpoint on the inter-broker listener."""
        registration = self._image.registrations.get(broker_id)
        if registration is None:
            return None
        # None when it has no such listener (misconfigured): it is unreachable for us.
        return registration.endpoint(self._inter_broker_listener)

    def listener_endpoints(self, listener: str) -> dict[int, tuple[str, int]]:
        """Broker id → endpoint on ``listener``, for every registered broker that has it."""
        endpoints: dict[int, tuple[str, int]] = {}
        for broker_id, registration in self._image.registrations.items():
            endpoint = registration.endpoint(listener)
            if endpoint is not None:
                endpoints[broker_id] = endpoint
        # This broker's own, even before its registration reached the image.
        for own in self._own_endpoints():
            if own.name == listener:
                endpoints[self.broker_id] = (own.host, own.port)
        return endpoints

    # -- configs -----------------------------------------------------------------------------
    @property
    def config(self) -> BrokerConfig:
        """The effective broker config: static, then the image's dynamic overrides."""
        return self._config

    @property
    def auto_create_topics(self) -> bool:
        return bool(self._config.get("auto.create.topics.enable"))

    def topic_overrides(self, topic: str) -> dict[str, str]:
        return dict(self._image.topic_configs.get(topic, {}))

    def topic_config(self, topic: str) -> TopicConfig:
        # Produce asks for every request; configs change only with a new metadata image,
        # which clears this cache.
        config = self._topic_configs.get(topic)
        if config is None:
            config = effective_topic_config(self._config, self.topic_overrides(topic))
            self._topic_configs[topic] = config
        return config

    def log_config(self, topic: str) -> LogConfig:
        return log_config_of(self.topic_config(topic))

    def broker_dynamic_overrides(self, resource_name: str) -> dict[str, str]:
        """Dynamic overrides of one broker (``"<id>"``) or the cluster default (``""``)."""
        return dict(self._image.broker_configs.get(resource_name, {}))

    def current_overrides(self, scope: tuple[str, str]) -> dict[str, str]:
        kind, name = scope
        if kind == "topic":
            return self.topic_overrides(name)
        return self.broker_dynamic_overrides(name)

    def effective_config_value(self, scope: tuple[str, str], name: str) -> str | None:
        kind, resource = scope
        if kind == "topic":
            entries = describe_topic_config(
                self._config, self.topic_overrides(resource), keys=[name]
            )
        else:
            entries = describe_broker_config(self._config, keys=[name])
        return entries[0].value if entries else None

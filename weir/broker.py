"""The broker process: wires the listener, the local replicas and the metadata together.

Theory of operation
-------------------
Start-up: connect to Redis, register (every listener's advertised endpoint) with an expiring
lease and a fresh broker epoch, load
the metadata image and tail the metadata log, open the local logs of every partition placed
here (recovering them), then open the Kafka listener. A background task competes for the
controller lease; while this broker holds it, it is the one that creates and deletes topics.

The image in the metadata cache is the broker's view of the cluster; handlers read it through
small views (``TopicView``, ``BrokerEndpoint``) so they never touch Redis. When Redis is
away the data plane keeps serving with the last image it has.

Listeners: the first one is the primary (any security protocol); answers on each listener
name the brokers by their endpoints on that listener (``endpoint_rewriter``). Brokers reach
each other -- replica fetchers, requests forwarded to the controller, ISR changes -- on the
listener named by ``inter.broker.listener.name`` (default: the primary), logging in with
``sasl.mechanism.inter.broker.protocol`` and the JAAS credentials of ``sasl.jaas.config`` on a
SASL listener and presenting the listener's keystore on a TLS one
(``weir.security.client.inter_broker_security``). With an authorizer, that principal needs
ClusterAction on the cluster (followers' Fetch, AlterPartition) or a place in super.users.

Shutdown (SIGTERM): stop accepting, close logs (flush, producer snapshots, checkpoints),
resign the controller lease and deregister.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode

from weir.client import BrokerClient, BrokerClientError
from weir.commands import CommandServer
from weir.config import (
    BrokerConfig,
    InvalidConfigError,
    describe_broker_config,
    describe_topic_config,
    effective_topic_config,
)
from weir.controller import Controller, IsrChangeRequest
from weir.group_admin import register_group_commands
from weir.group_coordinator import GroupCoordinator
from weir.handlers import registry
from weir.housekeeping import Housekeeping
from weir.log.log import LogConfig
from weir.metadata.cache import MetadataCache
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.image import ClusterImage, ListenerEndpoint
from weir.metadata.partition_state import (
    PartitionStatePublisher,
    PartitionStatus,
    ReplicaStatus,
)
from weir.metadata.registration import BrokerRegistration
from weir.metadata.store import MetadataStore
from weir.metrics import BrokerMetrics
from weir.partition import Partition
from weir.replica_manager import Assignment, ReplicaManager
from weir.replication.fetcher import ReplicaFetcherManager
from weir.replication.quota import ReplicationQuota, is_throttled
from weir.security.acl import AclOperation, Authorizer, ResourceType
from weir.security.acl_store import AclCache, build_authorizer
from weir.security.client import inter_broker_security
from weir.security.listeners import (
    ListenerError,
    ListenerSpec,
    endpoint_rewriter,
    inter_broker_listener,
)
from weir.security.tls import TLS_PROTOCOLS, server_ssl_context, tls_config
from weir.server import KafkaServer
from weir.topic_names import INTERNAL_TOPICS

__all__ = ["Broker", "BrokerEndpoint", "BrokerSettings", "PartitionView", "TopicView"]

log = logging.getLogger("weir.broker")

CHECKPOINT_INTERVAL_S = 60.0
HW_CHECKPOINT_INTERVAL_S = 5.0
PUBLISH_INTERVAL_S = 1.0
# How often the controller trims metadata log history (metadata.max.retention.ms).
METADATA_TRIM_INTERVAL_S = 60.0


SHUTDOWN_STEP_S = 5.0


async def _bounded(step: Any, what: str) -> None:
    """Await one shutdown step for at most SHUTDOWN_STEP_S; log instead of hanging."""
    task = asyncio.ensure_future(step)
    done, _ = await asyncio.wait({task}, timeout=SHUTDOWN_STEP_S)
    if not done:
        task.cancel()
        log.warning("shutdown: %s did not finish in %.0f s; going on", what, SHUTDOWN_STEP_S)
    elif not task.cancelled() and task.exception() is not None:
        log.warning("shutdown: %s failed: %s", what, task.exception())


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    broker_id: int
    listen: tuple[str, int]
    advertise: tuple[str, int] | None
    data_dir: Path
    rack: str | None
    overrides: dict[str, str]
    redis_url: str
    cluster_id: str
    # Listeners besides the primary (``listen``): weir.security.listeners.ListenerSpec.
    extra_listeners: tuple[ListenerSpec, ...] = ()
    # The primary listener's name and protocol (None: PLAINTEXT on ``listen``).
    primary_listener: ListenerSpec | None = None


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    broker_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class PartitionView:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionView, ...]


class Broker:
    """One Weir broker process."""

    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        self.broker_id = settings.broker_id
        self.cluster_id = settings.cluster_id
        self.config = BrokerConfig(static=settings.overrides, broker_id=settings.broker_id)
        if self.config.get("broker.heartbeat.interval.ms") >= self.config.get(
            "broker.session.timeout.ms"
        ):
            raise InvalidConfigError(
                "broker.heartbeat.interval.ms",
                "--config broker.heartbeat.interval.ms must be below broker.session.timeout.ms",
            )
        self.handlers, self.supported_versions = registry(self)
        self.replicas = ReplicaManager(
            broker_id=settings.broker_id,
            data_dir=settings.data_dir,
            time_ms=wall_clock_ms,
            log_config_for=self.log_config,
        )
        self.metrics = BrokerMetrics()
        primary = settings.primary_listener or ListenerSpec(
            "PLAINTEXT", "PLAINTEXT", *settings.listen, settings.advertise
        )
        self.listeners: tuple[ListenerSpec, ...] = (primary, *settings.extra_listeners)
        try:
            self.inter_broker_listener = inter_broker_listener(
                list(self.listeners), settings.overrides
            )
        except ListenerError as exc:
            raise InvalidConfigError("inter.broker.listener.name", str(exc)) from None
        # How this broker logs in to the others (checked now: a bad JAAS stops start-up).
        self.inter_broker_security = inter_broker_security(
            settings.overrides,
            listener=self.inter_broker_listener.name,
            protocol=self.inter_broker_listener.protocol,
        )
        self.server = self._listener_server(primary)
        # Secondary listeners (e.g. SASL_SSL): name → (server, advertised endpoint).
        self.extra_servers: dict[str, tuple[KafkaServer, list[tuple[str, int]]]] = {
            spec.name: (self._listener_server(spec), [spec.advertised or (spec.host, spec.port)])
            for spec in settings.extra_listeners
        }
        self.redis: aioredis.Redis | None = None
        self.store: MetadataStore | None = None
        self.registration: BrokerRegistration | None = None
        self.metadata: MetadataCache | None = None
        self.controller_epoch: int | None = None
        self.endpoint: tuple[str, int] = settings.advertise or settings.listen
        self._tasks: list[asyncio.Task[None]] = []
        self._topic_views: dict[str, TopicView] = {}
        self._topic_configs: dict[str, Any] = {}
        self._topic_views_by_id: dict[uuid.UUID, TopicView] = {}
        self._metadata_changed = asyncio.Event()
        self._controller_clients: dict[int, BrokerClient] = {}
        self._incarnation = ""
        self.time_ms = wall_clock_ms
        self.groups = GroupCoordinator(self)
        self.fetchers = ReplicaFetcherManager(
            broker_id=settings.broker_id,
            endpoint=self.endpoint_of,
            time_ms=wall_clock_ms,
            security=self.inter_broker_security,
        )
        self.controller: Controller | None = None
        self._replication_quota = ReplicationQuota()
        self.fenced = asyncio.Event()
        # ACLs: every broker keeps them current; checks happen only with an authorizer.
        self.acls = AclCache(cluster_id=settings.cluster_id)
        self.authorizer: Authorizer | None = build_authorizer(self.config, self.acls)

    def _listener_server(self, spec: ListenerSpec) -> KafkaServer:
        """The server of one listener: its security protocol, TLS context (SSL, SASL_SSL)
        and a response filter naming every broker by its endpoint on this listener."""
        overrides = self.settings.overrides
        return KafkaServer(
            name=spec.name,
            handlers=self.handlers,
            supported_versions=self.supported_versions,
            max_request_size=self.config.get("socket.request.max.bytes"),
            metrics=self.metrics,
            security_protocol=spec.protocol,
            rewrite=endpoint_rewriter(spec.name, lambda: self._listener_endpoints(spec.name)),
            ssl_context=(
                server_ssl_context(overrides, spec.name, protocol=spec.protocol)
                if spec.protocol in TLS_PROTOCOLS
                else None
            ),
            principal_mapping_rules=(
                tls_config(overrides, spec.name, "ssl.principal.mapping.rules")[1] or "DEFAULT"
            ),
        )

    # lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        settings = self.settings
        self.redis = aioredis.Redis.from_url(settings.redis_url)
        self.store = MetadataStore(self.redis, cluster_id=settings.cluster_id)
        # Bound first (so the port is known for registration), accepting last: clients
        # never meet a broker that has no metadata or controller yet.
        host, port = await self.server.bind(*settings.listen)
        if settings.advertise is None:
            self.endpoint = (host, port)
        for spec in settings.extra_listeners:
            extra, advertised = self.extra_servers[spec.name]
            bound = await extra.bind(spec.host, spec.port)
            if spec.advertised is None:
                advertised[0] = bound
        self.registration = BrokerRegistration(
            self.redis,
            cluster_id=settings.cluster_id,
            broker_id=settings.broker_id,
            host=self.endpoint[0],
            port=self.endpoint[1],
            rack=settings.rack,
            endpoints=self.advertised_endpoints(),
            lease_ms=int(self.config.get("broker.session.timeout.ms")),
            heartbeat_ms=int(self.config.get("broker.heartbeat.interval.ms")),
            on_fenced=self._on_fenced,
        )
        await self.registration.register()
        self.controller = Controller(
            store=self.store,
            image=lambda: self.metadata.image,  # type: ignore[union-attr]
            epoch=lambda: self.controller_epoch,
            unclean_for=lambda topic: bool(self.topic_config(topic).unclean_leader_election_enable),
            auto_rebalance=lambda: bool(self.config.get("auto.leader.rebalance.enable")),
            rebalance_interval_s=lambda: float(
                self.config.get("leader.imbalance.check.interval.seconds")
            ),
            time_s=time.monotonic,
        )
        self.metadata = MetadataCache(self.redis, cluster_id=settings.cluster_id)
        await self.acls.start(self.redis)
        self.metadata.add_listener(self._on_metadata)
        await self.metadata.start()
        self._on_metadata(self.metadata.image)
        await self._try_controller()
        self._tasks.append(asyncio.create_task(self._controller_loop(), name="controller"))
        self._tasks.append(asyncio.create_task(self._checkpoint_loop(), name="checkpoint"))
        self._tasks.append(asyncio.create_task(self._isr_loop(), name="isr"))
        self._tasks.append(asyncio.create_task(self._publish_loop(), name="publish"))
        # The command channel from the control plane: forced group rebalances, retention
        # and compaction (Celery).
        commands = CommandServer(
            self.redis,
            cluster_id=settings.cluster_id,
            broker_id=self.broker_id,
            time_ms=self.time_ms,
        )
        register_group_commands(commands, self.groups)
        Housekeeping(self.replicas, topic_config=self.topic_config, time_ms=self.time_ms).register(
            commands
        )
        self._tasks.append(asyncio.create_task(commands.serve(), name="commands"))
        self.controller.start()
        await self.server.start_serving()
        for extra, advertised in self.extra_servers.values():
            await extra.start_serving()
            log.info("broker %d listener %s on %s:%d", self.broker_id, extra.name, *advertised[0])
        log.info(
            "broker %d serving Kafka on %s:%d (advertised %s:%d), data in %s",
            self.broker_id,
            host,
            port,
            *self.endpoint,
            settings.data_dir,
        )

    async def stop(self) -> None:
        """Stop serving, flush and checkpoint the logs, resign and deregister.

        Every step that waits is bounded: a shutdown must finish even if Redis or a peer
        hangs (the logs are closed whatever happens).
        """
        log.info("broker %d shutting down", self.broker_id)
        await _bounded(self.server.stop(), "closing the listener")
        for extra, _ in self.extra_servers.values():
            await _bounded(extra.stop(), f"closing the {extra.name} listener")
        if self.controller is not None:
            await _bounded(self.controller.stop(), "stopping the controller")
        await _bounded(self.groups.stop(), "stopping the group coordinator")
        await _bounded(self.fetchers.stop(), "stopping the replica fetchers")
        await _bounded(self.acls.stop(), "stopping the ACL cache")
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=SHUTDOWN_STEP_S)
        self.replicas.close()
        for client in self._controller_clients.values():
            await _bounded(client.close(), "closing controller connections")
        if self.metadata is not None:
            await _bounded(self.metadata.stop(), "stopping the metadata cache")
        if self.store is not None and self.controller_epoch is not None:
            await _bounded(
                self.store.resign_controller(self.broker_id, self.controller_epoch),
                "resigning the controller lease",
            )
        if self.registration is not None:
            await _bounded(self.registration.deregister(), "deregistering")
        if self.redis is not None:
            await _bounded(self.redis.aclose(), "closing the Redis client")
        log.info("broker %d stopped", self.broker_id)

    def authorize(self, ctx: object, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        """May the connection's principal do ``op`` on the resource? Always, when no
        authorizer is configured (``authorizer.class.name`` empty)."""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_connection(ctx, op, rtype, name)

    def _on_fenced(self, exc: Exception) -> None:
        """Another process registered this broker id: this one is a zombie and must stop."""
        log.error("broker %d was fenced (%s); shutting down", self.broker_id, exc)
        self.fenced.set()

    async def _try_controller(self) -> None:
        """Take or renew the controller lease (issue 3 adds the controller's duties)."""
        assert self.store is not None
        try:
            if self.controller_epoch is None:
                self.controller_epoch = await self.store.acquire_controller(
                    self.broker_id, self._controller_lease_ms()
                )
                if self.controller_epoch is not None:
                    log.info(
                        "broker %d is the controller (epoch %d)",
                        self.broker_id,
                        self.controller_epoch,
                    )
            elif not await self.store.renew_controller(
                self.broker_id, self.controller_epoch, self._controller_lease_ms()
            ):
                log.warning("broker %d lost the controller lease", self.broker_id)
                self.controller_epoch = None
        except Exception as exc:  # Redis away: keep serving, try again
            log.warning("controller lease check failed: %s", exc)
            self.controller_epoch = None

    def _controller_lease_ms(self) -> int:
        # The controller lease lives as long as a broker lease: a dead controller's broker
        # and its controllership expire together.
        return int(self.config.get("broker.session.timeout.ms"))

    async def _controller_loop(self) -> None:
        next_trim = 0.0
        while True:
            await asyncio.sleep(int(self.config.get("broker.heartbeat.interval.ms")) / 1000)
            await self._try_controller()
            if self.controller_epoch is not None and time.monotonic() >= next_trim:
                next_trim = time.monotonic() + METADATA_TRIM_INTERVAL_S
                await self._trim_metadata_log()

    async def _trim_metadata_log(self) -> None:
        """The controller drops metadata history older than ``metadata.max.retention.ms``."""
        assert self.store is not None
        retention = int(self.config.get("metadata.max.retention.ms"))
        try:
            removed = await self.store.trim_log(older_than_ms=int(time.time() * 1000) - retention)
        except MetadataUnavailableError as exc:
            log.warning("metadata log trim failed: %s", exc)
            return
        if removed:
            log.info("trimmed %d metadata log entries older than %d ms", removed, retention)

    # ISR maintenance (leader side) ------------------------------------------------------
    async def _isr_loop(self) -> None:
        """Propose ISR shrinks for laggards, like Kafka's isr-expiration task."""
        while True:
            lag_max = int(self.config.get("replica.lag.time.max.ms"))
            await asyncio.sleep(min(max(lag_max / 2000, 0.05), 1.0))
            now = self.time_ms()
            for partition in list(self.replicas.partitions()):
                state = partition.leader_state
                if state is None or partition.isr_change_pending:
                    continue
                proposed = state.proposed_isr(now_ms=now, lag_max_ms=lag_max)
                if proposed != frozenset(partition.isr) | {self.broker_id}:
                    self._propose_isr(partition, proposed)

    def maybe_expand_isr(self, partition: Partition) -> None:
        """After a follower fetch: a caught-up follower outside the ISR may rejoin."""
        state = partition.leader_state
        if state is None or partition.isr_change_pending:
            return
        joining = state.caught_up_outside_isr()
        if joining:
            self._propose_isr(partition, frozenset(partition.isr) | joining)

    def _propose_isr(self, partition: Partition, new_isr: frozenset[int]) -> None:
        partition.isr_change_pending = True
        ordered = tuple(r for r in partition.replicas if r in new_isr)
        asyncio.get_running_loop().create_task(self._send_isr_change(partition, ordered))

    async def _send_isr_change(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        """AlterPartition to the controller (or straight to it when we are the controller)."""
        request = IsrChangeRequest(
            broker_id=self.broker_id,
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.partition_epoch,
            new_isr=new_isr,
        )
        log.info(
            "%s-%d: proposing ISR %s (was %s)",
            partition.topic,
            partition.index,
            list(new_isr),
            list(partition.isr),
        )
        error = ErrorCode.unknown_server_error
        try:
            if self.controller is not None and self.controller_epoch is not None:
                error, _ = await self.controller.alter_isr(
                    self.controller_epoch, partition.topic, partition.index, request
                )
            else:
                error = await self._alter_partition_on_controller(partition, request)
        except Exception as exc:
            log.warning("ISR change of %s-%d failed: %s", partition.topic, partition.index, exc)
        if error is not ErrorCode.none:
            log.info(
                "ISR change of %s-%d not applied: %s", partition.topic, partition.index, error.name
            )
            await asyncio.sleep(0.5)
            partition.isr_change_pending = False
        else:
            # Cleared when the new partition state arrives through metadata; the timeout
            # covers a lost update.
            await asyncio.sleep(5.0)
            partition.isr_change_pending = False

    async def _alter_partition_on_controller(
        self, partition: Partition, request: IsrChangeRequest
    ) -> ErrorCode:
        from kio.schema.alter_partition.v2.request import (
            AlterPartitionRequest,
            PartitionData,
            TopicData,
        )

        client = self._controller_client()
        if client is None or self.registration is None:
            return ErrorCode.not_controller
        body = AlterPartitionRequest(
            broker_id=self.broker_id,
            broker_epoch=self.registration.epoch or -1,
            topics=(
                TopicData(
                    topic_id=uuid.UUID(partition.topic_id),
                    partitions=(
                        PartitionData(
                            partition_index=partition.index,
                            leader_epoch=request.leader_epoch,
                            new_isr=request.new_isr,
                            leader_recovery_state=0,
                            partition_epoch=request.partition_epoch,
                        ),
                    ),
                ),
            ),
        )
        response = await client.request(body, timeout=10)
        if response.error_code != ErrorCode.none:
            return ErrorCode(response.error_code)
        return ErrorCode(response.topics[0].partitions[0].error_code)

    async def _publish_loop(self) -> None:
        """Publish partition and replica state for the control plane, once a second."""
        assert self.redis is not None
        publisher = PartitionStatePublisher(
            self.redis, cluster_id=self.cluster_id, broker_id=self.broker_id
        )
        while True:
            await asyncio.sleep(PUBLISH_INTERVAL_S)
            now = self.time_ms()
            partitions: list[PartitionStatus] = []
            replicas: list[ReplicaStatus] = []
            for p in list(self.replicas.partitions()):
                log_obj = p.log
                replicas.append(
                    ReplicaStatus(
                        topic=p.topic,
                        partition=p.index,
                        broker_id=self.broker_id,
                        log_end_offset=log_obj.log_end_offset,
                        log_start_offset=log_obj.log_start_offset,
                        size_bytes=log_obj.size_bytes,
                        is_leader=p.is_leader,
                        updated_ms=now,
                    )
                )
                state = p.leader_state
                if state is None:
                    continue
                partitions.append(
                    PartitionStatus(
                        topic=p.topic,
                        partition=p.index,
                        leader=self.broker_id,
                        leader_epoch=p.leader_epoch,
                        isr=tuple(p.isr),
                        log_end_offset=log_obj.log_end_offset,
                        high_watermark=p.high_watermark,
                        log_start_offset=log_obj.log_start_offset,
                        size_bytes=log_obj.size_bytes,
                        follower_log_end_offsets={
                            str(f.broker_id): f.log_end_offset for f in state.followers.values()
                        },
                        updated_ms=now,
                    )
                )
            try:
                await publisher.publish(partitions, replicas)
                await self.metrics.publish(
                    self.redis,
                    keys=publisher.keys,
                    broker_id=self.broker_id,
                    now_ms=now,
                    # The control plane cannot see static configs; it needs this one to
                    # count under-min-ISR partitions.
                    extra={"min_insync_replicas": int(self.config.get("min.insync.replicas"))},
                )
            except Exception as exc:  # Redis away: observability only, try again later
                log.debug("publishing partition state failed: %s", exc)

    async def _checkpoint_loop(self) -> None:
        """HW checkpoint every 5 s; flush and recovery-point checkpoint every 60 s."""
        elapsed = 0.0
        while True:
            await asyncio.sleep(HW_CHECKPOINT_INTERVAL_S)
            elapsed += HW_CHECKPOINT_INTERVAL_S
            try:
                if elapsed >= CHECKPOINT_INTERVAL_S:
                    elapsed = 0.0
                    self.replicas.checkpoint(flush=True)
                else:
                    self.replicas.checkpoint_high_watermarks()
            except OSError as exc:
                log.error("checkpoint failed: %s", exc)

    # metadata ----------------------------------------------------------------------------
    def _on_metadata(self, image: ClusterImage) -> None:
        """Rebuild the views and reconcile local replicas with a new metadata image."""
        self.config = self.config.with_dynamic(
            dynamic_broker=image.broker_config(self.broker_id),
            dynamic_default=image.broker_config(""),
        )
        views: dict[str, TopicView] = {}
        assignments: list[Assignment] = []
        live = set(self._live_broker_ids(image))
        for topic in image.topics.values():
            parts = []
            for p in sorted(topic.partitions.values(), key=lambda p: p.partition):
                parts.append(
                    PartitionView(
                        index=p.partition,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replicas),
                        isr=tuple(p.isr),
                        offline_replicas=tuple(r for r in p.replicas if r not in live),
                    )
                )
                if self.broker_id in p.replicas:
                    assignments.append(
                        Assignment(
                            topic=topic.name,
                            index=p.partition,
                            topic_id=str(topic.topic_id),
                            leader=p.leader,
                            leader_epoch=p.leader_epoch,
                            partition_epoch=p.partition_epoch,
                            replicas=tuple(p.replicas),
                            isr=tuple(p.isr),
                        )
                    )
            views[topic.name] = TopicView(
                name=topic.name,
                topic_id=uuid.UUID(str(topic.topic_id)),
                is_internal=topic.name in INTERNAL_TOPICS,
                partitions=tuple(parts),
            )
        self._topic_views = views
        self._topic_configs = {}
        self._topic_views_by_id = {v.topic_id: v for v in views.values()}
        reset = bool(self._incarnation) and image.incarnation != self._incarnation
        self._incarnation = image.incarnation
        changes = self.replicas.reconcile(
            assignments, live_topics=set(views), now_ms=self.time_ms(), allow_delete=not reset
        )
        for key in changes.unfollow:
            self.fetchers.unfollow(key)
        for partition in changes.follow:
            self.fetchers.follow(partition)
        self.replicas.update_configs()
        self.groups.on_metadata()
        if self.controller is not None:
            self.controller.poke()
        self._metadata_changed.set()
        self._metadata_changed = asyncio.Event()

    def _live_broker_ids(self, image: ClusterImage) -> list[int]:
        return sorted(image.brokers)

    def advertised_endpoints(self) -> tuple[ListenerEndpoint, ...]:
        """This broker's listeners as registered: advertised endpoints, primary first."""
        primary = self.listeners[0]
        endpoints = [ListenerEndpoint(primary.name, *self.endpoint, primary.protocol)]
        for spec in self.settings.extra_listeners:
            _, advertised = self.extra_servers[spec.name]
            endpoints.append(ListenerEndpoint(spec.name, *advertised[0], spec.protocol))
        return tuple(endpoints)

    def _listener_endpoints(self, listener: str) -> dict[int, tuple[str, int]]:
        """Broker id → endpoint on ``listener``, for every registered broker that has it."""
        endpoints: dict[int, tuple[str, int]] = {}
        if self.metadata is not None:
            for broker_id, registration in self.metadata.image.registrations.items():
                endpoint = registration.endpoint(listener)
                if endpoint is not None:
                    endpoints[broker_id] = endpoint
        # This broker's own, even before its registration reached the image.
        for own in self.advertised_endpoints():
            if own.name == listener:
                endpoints[self.broker_id] = (own.host, own.port)
        return endpoints

    def endpoint_of(self, broker_id: int) -> tuple[str, int] | None:
        """Where to reach ``broker_id``: its endpoint on the inter-broker listener."""
        assert self.metadata is not None
        registration = self.metadata.image.registrations.get(broker_id)
        if registration is None:
            return None
        # None when it has no such listener (misconfigured): it is unreachable for us.
        return registration.endpoint(self.inter_broker_listener.name)

    async def wait_for_metadata(self, predicate: object, timeout_s: float) -> bool:
        """Wait until ``predicate()`` holds for the local image (or the timeout passes)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not predicate():  # type: ignore[operator]
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._metadata_changed.wait()
        return True

    # views for handlers -----------------------------------------------------------------
    def topic_views(self) -> dict[str, TopicView]:
        return self._topic_views

    def topic_view_by_id(self, topic_id: uuid.UUID) -> TopicView | None:
        return self._topic_views_by_id.get(topic_id)

    def live_brokers(self) -> list[BrokerEndpoint]:
        assert self.metadata is not None
        return [
            BrokerEndpoint(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
            for _, b in sorted(self.metadata.image.brokers.items())
        ]

    async def fresh_live_brokers(self) -> list[BrokerEndpoint]:
        """Live brokers read from Redis now (the image polls liveness once a second)."""
        if self.registration is not None:
            try:
                return [
                    BrokerEndpoint(broker_id=b.broker_id, host=b.host, port=b.port, rack=b.rack)
                    for b in await self.registration.live_brokers()
                ]
            except MetadataUnavailableError:
                pass
        return self.live_brokers()

    def controller_id(self) -> int:
        if self.controller_epoch is not None:
            return self.broker_id
        assert self.metadata is not None
        controller = self.metadata.image.controller_id
        return controller if controller is not None else -1

    @property
    def is_controller(self) -> bool:
        return self.controller_epoch is not None

    @property
    def auto_create_topics(self) -> bool:
        return bool(self.config.get("auto.create.topics.enable"))

    def leader_error(self, topic: str, index: int) -> ErrorCode:
        """NONE when this broker leads ``topic``-``index``, else the error clients expect."""
        view = self._topic_views.get(topic)
        if view is None or not 0 <= index < len(view.partitions):
            return ErrorCode.unknown_topic_or_partition
        partition = view.partitions[index]
        if partition.leader < 0:
            return ErrorCode.leader_not_available
        local = self.replicas.get(topic, index)
        if partition.leader != self.broker_id or local is None or not local.is_leader:
            return ErrorCode.not_leader_or_follower
        return ErrorCode.none

    # replication throttle (reassignments) --------------------------------------------
    def replication_throttled(self, topic: str, index: int, replica_id: int) -> bool:
        """Kafka's leader throttle: listed leader replica, follower not (yet) in sync."""
        local = self.replicas.get(topic, index)
        if local is None or replica_id in local.isr:
            return False
        config = self.topic_config(topic)
        return is_throttled(config.leader_replication_throttled_replicas, index, self.broker_id)

    def replication_quota_remaining(self) -> int:
        """Throttled catch-up bytes this leader may send now (negative: none)."""
        return self._replication_quota.remaining(
            rate=int(self.config.get("leader.replication.throttled.rate")),
            now_s=time.monotonic(),
        )

    def record_replication_bytes(self, size: int) -> None:
        self._replication_quota.record(
            size,
            rate=int(self.config.get("leader.replication.throttled.rate")),
            now_s=time.monotonic(),
        )

    def in_sync_replica_count(self, topic: str, index: int) -> int:
        local = self.replicas.get(topic, index)
        return 0 if local is None else len(local.isr)

    def topic_overrides(self, topic: str) -> dict[str, str]:
        assert self.metadata is not None
        return dict(self.metadata.image.topic_configs.get(topic, {}))

    def topic_config(self, topic: str):  # -> TopicConfig
        # Produce asks for every request; configs change only with a new metadata image,
        # which clears this cache.
        config = self._topic_configs.get(topic)
        if config is None:
            config = effective_topic_config(self.config, self.topic_overrides(topic))
            self._topic_configs[topic] = config
        return config

    def log_config(self, topic: str) -> LogConfig:
        config = self.topic_config(topic)
        return LogConfig(
            segment_bytes=config.segment_bytes,
            segment_ms=config.segment_ms,
            index_interval_bytes=config.index_interval_bytes,
            segment_index_bytes=config.segment_index_bytes,
            message_timestamp_type=config.message_timestamp_type,
            max_message_bytes=config.max_message_bytes,
        )

    async def allocate_producer_id(self) -> int:
        assert self.store is not None
        return await self.store.allocate_producer_id()

    async def auto_create_topic(
        self,
        name: str,
        *,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: dict[str, str] | None = None,
    ) -> tuple[ErrorCode, TopicView | None]:
        """Create ``name`` (broker defaults unless given): Metadata auto-creation, and the
        internal ``__consumer_offsets`` on first FindCoordinator.

        The controller creates it; any other broker asks the controller with CreateTopics,
        as Kafka's AutoTopicCreationManager does.
        """
        from weir import topic_admin as admin

        if self.is_controller:
            outcome = await admin.create_topic(
                self,
                name=name,
                num_partitions=num_partitions,
                replication_factor=replication_factor,
                assignments={},
                configs=dict(configs or {}),
                validate_only=False,
                timeout_ms=5000,
            )
            error = outcome.error
        else:
            error = await self._create_topic_on_controller(
                name, num_partitions, replication_factor, configs or {}
            )
        if error not in (ErrorCode.none, ErrorCode.topic_already_exists):
            return error, None
        await self.wait_for_metadata(lambda: name in self._topic_views, 5.0)
        view = self._topic_views.get(name)
        if view is None:
            return ErrorCode.leader_not_available, None
        return ErrorCode.none, view

    def _controller_client(self) -> BrokerClient | None:
        """A connection to the controller on the inter-broker listener."""
        controller = self.controller_id()
        assert self.metadata is not None
        if controller not in self.metadata.image.brokers:
            return None
        endpoint = self.endpoint_of(controller)
        if endpoint is None:
            return None
        client = self._controller_clients.get(controller)
        if client is None or (client.host, client.port) != endpoint:
            client = BrokerClient(
                *endpoint,
                client_id=f"weir-broker-{self.broker_id}",
                security=self.inter_broker_security,
            )
            self._controller_clients[controller] = client
        return client

    async def forward_to_controller(self, body: Any, timeout_s: float) -> Any | None:
        """Send an admin request on to the controller; its response, or None if unreachable."""
        if self.controller_id() == self.broker_id:
            return None
        client = self._controller_client()
        if client is None:
            return None
        try:
            return await client.request(body, timeout=timeout_s)
        except BrokerClientError as exc:
            log.warning("forwarding to the controller failed: %s", exc)
            return None

    async def _create_topic_on_controller(
        self, name: str, num_partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> ErrorCode:
        from kio.schema.create_topics.v7.request import (
            CreatableTopic,
            CreatableTopicConfig,
            CreateTopicsRequest,
        )

        client = self._controller_client()
        if client is None:
            return ErrorCode.leader_not_available
        request = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name,
                    num_partitions=num_partitions,
                    replication_factor=replication_factor,
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v) for k, v in configs.items()
                    ),
                ),
            ),
            timeout=timedelta(seconds=5),
            validate_only=False,
        )
        try:
            response = await client.request(request, timeout=10)
        except BrokerClientError as exc:
            log.warning("auto-creating %s on the controller failed: %s", name, exc)
            return ErrorCode.leader_not_available
        return ErrorCode(response.topics[0].error_code)

    async def forward_config_change(
        self, resource_type: int, resource_name: str, changes: list[tuple[str, int, str | None]]
    ) -> tuple[ErrorCode, str | None]:
        """Send a config change to the controller as IncrementalAlterConfigs."""
        from kio.schema.incremental_alter_configs.v1.request import (
            AlterableConfig,
            AlterConfigsResource,
            IncrementalAlterConfigsRequest,
        )

        client = self._controller_client()
        if client is None:
            return ErrorCode.not_controller, "no controller is available; retry"
        request = IncrementalAlterConfigsRequest(
            resources=(
                AlterConfigsResource(
                    resource_type=resource_type,
                    resource_name=resource_name,
                    configs=tuple(
                        AlterableConfig(name=name, config_operation=op, value=value)
                        for name, op, value in changes
                    ),
                ),
            ),
            validate_only=False,
        )
        try:
            response = await client.request(request, timeout=10)
        except BrokerClientError as exc:
            return ErrorCode.not_controller, f"forwarding to the controller failed: {exc}"
        result = response.responses[0]
        return ErrorCode(result.error_code), result.error_message

    # configs ----------------------------------------------------------------------------
    def broker_dynamic_overrides(self, resource_name: str) -> dict[str, str]:
        """Dynamic overrides of one broker (``"<id>"``) or the cluster default (``""``)."""
        assert self.metadata is not None
        return dict(self.metadata.image.broker_configs.get(resource_name, {}))

    def current_overrides(self, scope: tuple[str, str]) -> dict[str, str]:
        kind, name = scope
        if kind == "topic":
            return self.topic_overrides(name)
        return self.broker_dynamic_overrides(name)

    def effective_config_value(self, scope: tuple[str, str], name: str) -> str | None:
        kind, resource = scope
        if kind == "topic":
            entries = describe_topic_config(
                self.config, self.topic_overrides(resource), keys=[name]
            )
        else:
            entries = describe_broker_config(self.config, keys=[name])
        return entries[0].value if entries else None

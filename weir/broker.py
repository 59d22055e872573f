"""The broker process: builds its parts, starts them in order and stops them in reverse.

Theory of operation
-------------------
``Broker`` does no work of its own; each concern is a part in its own module, given only
what it needs (the metadata store, the replica manager, a config getter, a clock):

* ``MetadataView`` (weir.metadata_view): the read side of the cluster image -- topic views,
  live brokers, the controller id, effective broker and topic configs, listener endpoints.
* ``ReplicaManager`` and ``ReplicaFetcherManager``: the local logs and the follower side.
* ``ControllerLease`` (the controller lease and metadata-log trimming) and ``Controller``
  (the controller's decisions while the lease is held).
* ``ControllerChannel``: requests to the controller (forwarded admin requests, topic
  auto-creation, config changes, AlterPartition).
* ``IsrManager`` and ``ReplicationThrottle`` (weir.replication): the leader side of
  replication.
* ``TopicAdmin``, ``GroupCoordinator``, the ACL cache and the SCRAM credential store.
* ``QuotaManager`` (weir.quotas): client quotas, measured and enforced by the handlers.
* ``StatePublisher`` and ``Checkpointer``: periodic state for the control plane and the disk.

Handlers get the parts their signatures name (``weir.handlers.registry``), never the broker.

Start-up: register (every listener's advertised endpoint) with an expiring lease and a fresh
broker epoch, load the metadata image and tail the metadata log, open the local logs of every
partition placed here (recovering them), then open the Kafka listener. A background task
competes for the controller lease; while this broker holds it, it is the one that creates and
deletes topics. On each new image the view is rebuilt first, then local replicas and fetchers
follow it, then the parts that react to it; waiters wake last. When Redis is away the data
plane keeps serving with the last image it has.

A partition whose disk fails (at open or while running, see ``ReplicaManager``) goes
offline here: the fetchers drop it and the registration lease reports it, so the controller
elects another leader from its ISR.

Listeners: the first one is the primary (any security protocol); answers on each listener
name the brokers by their endpoints on that listener (``endpoint_rewriter``). Brokers reach
each other -- replica fetchers, requests forwarded to the controller, ISR changes -- on the
listener named by ``inter.broker.listener.name`` (default: the primary), logging in with
``sasl.mechanism.inter.broker.protocol`` and the JAAS credentials of ``sasl.jaas.config`` on a
SASL listener and presenting the listener's keystore on a TLS one
(``weir.security.client.inter_broker_security``). With an authorizer, that principal needs
ClusterAction on the cluster (followers' Fetch, AlterPartition) or a place in super.users.

Shutdown (SIGTERM): with ``controlled.shutdown.enable`` (the default) first a controlled
shutdown, as a KRaft broker does: the lease asks the controller to move this broker's
leaderships and ISR memberships to other in-sync replicas, and the broker keeps serving
until the metadata shows it leads nothing another replica could take over (or
``broker.session.timeout.ms`` passes: by then a crashed broker's leaderships would have moved
too). Then stop accepting; stop every part that can
open logs (the metadata cache and its listener too) and the background loops
(``weir.loop_task``: ended for sure, not merely cancelled); then close the logs (flush,
producer snapshots, checkpoints), resign the controller lease and deregister.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from weir.checkpointer import Checkpointer
from weir.commands import CommandServer
from weir.config import BrokerConfig, InvalidConfigError, check_broker_constraints
from weir.connection_limits import ConnectionQuotas, CurrentLimits, RequestQueue
from weir.controller import Controller, Grace, leads_movable_partitions
from weir.controller_channel import ControllerChannel
from weir.controller_lease import ControllerLease
from weir.credential_store import ScramCredentialStore
from weir.group_admin import register_group_commands
from weir.group_coordinator import GroupCoordinator
from weir.handlers import registry
from weir.housekeeping import Housekeeping
from weir.loop_task import stop_tasks
from weir.metadata.cache import MetadataCache
from weir.metadata.image import BrokerImage, ClusterImage, ListenerEndpoint
from weir.metadata.redis_url import AsyncReconnectRetry, async_client
from weir.metadata.registration import BrokerRegistration, live_brokers
from weir.metadata.store import MetadataStore
from weir.metadata_view import BrokerEndpoint, MetadataView, PartitionView, TopicView
from weir.metrics import BrokerMetrics
from weir.quotas import QuotaManager
from weir.replica_manager import ReplicaManager
from weir.replication.fetcher import FetchSettings, FollowerThrottle, ReplicaFetcherManager
from weir.replication.isr_manager import IsrManager
from weir.replication.throttle import ReplicationThrottle
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
from weir.state_publisher import StatePublisher
from weir.topic_admin import TopicAdmin
from weir.transaction_coordinator import TransactionCoordinator
from weir.txn_markers import MarkerChannel

__all__ = ["Broker", "BrokerEndpoint", "BrokerSettings", "PartitionView", "TopicView"]

log = logging.getLogger("weir.broker")

SHUTDOWN_STEP_S = 5.0
# Redis commands (blocking reads wait at most 1 s, a quorum WAIT 2 s) time out after this.
REDIS_SOCKET_TIMEOUT_S = 5.0
REDIS_CONNECT_TIMEOUT_S = 2.0
# How long a Redis command retries a lost connection before its caller hears of it.
REDIS_RETRY_BUDGET_S = 0.5


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


class Broker:
    """One Weir broker process: builds its parts, starts and stops them in order."""

    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        self.broker_id = settings.broker_id
        self.cluster_id = settings.cluster_id
        config = BrokerConfig(static=settings.overrides, broker_id=settings.broker_id)
        check_broker_constraints(config)
        self.time_ms = wall_clock_ms
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
        self.endpoint: tuple[str, int] = settings.advertise or settings.listen
        # No I/O yet: the Redis client connects on first use (in ``start``). A primary that
        # hangs (paused, cut off) must not hang the broker: commands time out, and the next
        # connection asks the sentinels for the primary again.
        self.redis = async_client(
            settings.redis_url,
            socket_timeout=REDIS_SOCKET_TIMEOUT_S,
            socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S,
            # The broker's loops retry on their own schedule: a failure must reach them fast,
            # so a heartbeat failing tells the controller's grace an outage began.
            retry=AsyncReconnectRetry(budget_s=REDIS_RETRY_BUDGET_S),
        )
        self.store = MetadataStore(self.redis, cluster_id=settings.cluster_id)
        self.metadata = MetadataCache(self.redis, cluster_id=settings.cluster_id)
        self.registration: BrokerRegistration | None = None
        self.view = MetadataView(
            broker_id=settings.broker_id,
            cluster_id=settings.cluster_id,
            config=config,
            inter_broker_listener=self.inter_broker_listener.name,
            own_endpoints=self.advertised_endpoints,
            is_controller=lambda: self.lease.is_controller,
            fresh_brokers=self._fresh_brokers,
        )

        def current_config() -> BrokerConfig:
            # Dynamic configs change with each metadata image: parts read the current one.
            return self.view.config

        self.lease = ControllerLease(
            store=self.store,
            broker_id=settings.broker_id,
            config=current_config,
            monotonic=time.monotonic,
            wall_ms=wall_clock_ms,
        )
        self.replicas = ReplicaManager(
            broker_id=settings.broker_id,
            data_dir=settings.data_dir,
            time_ms=wall_clock_ms,
            log_config_for=self.view.log_config,
            on_offline=self._on_partition_offline,
            recovery_threads=lambda: int(self.view.config.get("num.recovery.threads.per.data.dir")),
        )
        # Offline-partition reports in flight (see _on_partition_offline).
        self._reports: set[asyncio.Task[None]] = set()
        # Client quotas: quota.window.* are read-only in Kafka (read once, at start); the
        # quotas themselves follow the metadata image.
        self.quotas = QuotaManager(
            window_num=int(config.get("quota.window.num")),
            window_size_s=int(config.get("quota.window.size.seconds")),
        )
        self.metrics = BrokerMetrics(client_quotas=self.quotas.snapshot)
        self.channel = ControllerChannel(
            broker_id=settings.broker_id,
            view=self.view,
            security=self.inter_broker_security,
            broker_epoch=lambda: (self.registration.epoch if self.registration else None) or -1,
        )
        self.controller = Controller(
            store=self.store,
            image=self._controller_image,
            refresh_liveness=self.metadata.refresh_liveness,
            epoch=lambda: self.lease.epoch,
            unclean_for=lambda topic: bool(
                self.view.topic_config(topic).unclean_leader_election_enable
            ),
            auto_rebalance=lambda: bool(self.view.config.get("auto.leader.rebalance.enable")),
            rebalance_interval_s=lambda: float(
                self.view.config.get("leader.imbalance.check.interval.seconds")
            ),
            time_s=time.monotonic,
            imbalance_percentage=lambda: int(
                self.view.config.get("leader.imbalance.per.broker.percentage")
            ),
        )
        self.isr = IsrManager(
            broker_id=settings.broker_id,
            replicas=self.replicas,
            config=current_config,
            time_ms=wall_clock_ms,
            lease=self.lease,
            controller=self.controller,
            channel=self.channel,
        )
        self.throttle = ReplicationThrottle(
            broker_id=settings.broker_id,
            replicas=self.replicas,
            topic_config=self.view.topic_config,
            config=current_config,
            now_s=time.monotonic,
        )
        self.publisher = StatePublisher(
            redis=self.redis,
            cluster_id=settings.cluster_id,
            broker_id=settings.broker_id,
            replicas=self.replicas,
            metrics=self.metrics,
            config=current_config,
            time_ms=wall_clock_ms,
        )
        self.checkpointer = Checkpointer(
            self.replicas,
            time_ms=lambda: time.monotonic_ns() // 1_000_000,
            # Read-only in Kafka: read once, at start.
            high_watermark_interval_ms=int(
                config.get("replica.high.watermark.checkpoint.interval.ms")
            ),
            recovery_interval_ms=int(config.get("log.flush.offset.checkpoint.interval.ms")),
            log_start_interval_ms=int(config.get("log.flush.start.offset.checkpoint.interval.ms")),
            flush_check_interval_ms=int(config.get("log.flush.scheduler.interval.ms")),
            producer_expiration_check_interval_ms=int(
                config.get("producer.id.expiration.check.interval.ms")
            ),
            # Dynamic in Kafka: read at each check.
            producer_expiration_ms=lambda: int(self.view.config.get("producer.id.expiration.ms")),
        )
        self.admin = TopicAdmin(
            view=self.view, store=self.store, lease=self.lease, channel=self.channel
        )
        self.groups = GroupCoordinator(
            view=self.view,
            replicas=self.replicas,
            create_topic=self.admin.auto_create_topic,
            time_ms=wall_clock_ms,
        )
        self.markers = MarkerChannel(
            broker_id=settings.broker_id, view=self.view, security=self.inter_broker_security
        )
        self.transactions = TransactionCoordinator(
            view=self.view,
            replicas=self.replicas,
            create_topic=self.admin.auto_create_topic,
            allocate_producer_ids=self.store.allocate_producer_ids,
            send_markers=self.markers,
            time_ms=wall_clock_ms,
        )
        self.fetchers = ReplicaFetcherManager(
            broker_id=settings.broker_id,
            endpoint=self.view.endpoint_of,
            time_ms=wall_clock_ms,
            security=self.inter_broker_security,
            # replica.fetch.* are read-only in Kafka: read once, at start.
            settings=FetchSettings.from_config(config),
            num_fetchers=int(config.get("num.replica.fetchers")),
            throttle=FollowerThrottle(
                broker_id=settings.broker_id,
                topic_config=self.view.topic_config,
                config=current_config,
                now_s=time.monotonic,
            ),
        )
        self.fenced = asyncio.Event()
        # ACLs: every broker keeps them current; checks happen only with an authorizer.
        self.acls = AclCache(cluster_id=settings.cluster_id)
        self.handlers, self.supported_versions = registry(
            metadata=self.view,
            replicas=self.replicas,
            authorizer=build_authorizer(config, self.acls),
            groups=self.groups,
            transactions=self.transactions,
            controller=self.controller,
            channel=self.channel,
            admin=self.admin,
            isr=self.isr,
            throttle=self.throttle,
            acls=self.acls,
            credentials=ScramCredentialStore(self.redis, cluster_id=settings.cluster_id),
            allocate_producer_id=self.store.allocate_producer_id,
            time_ms=wall_clock_ms,
            quotas=self.quotas,
        )
        # Connection limits shared by every listener (weir.connection_limits); max.connections
        # and max.connections.per.ip(.overrides) are dynamic: read per connection.
        self.connection_quotas = ConnectionQuotas(
            CurrentLimits(current_config, listeners=tuple(spec.name for spec in self.listeners)),
            protected_listener=(
                self.inter_broker_listener.name if len(self.listeners) > 1 else None
            ),
        )
        self.request_queue: RequestQueue[Any] = RequestQueue(int(config.get("queued.max.requests")))
        self.server = self._listener_server(primary)
        # Secondary listeners (e.g. SASL_SSL): name → (server, advertised endpoint).
        self.extra_servers: dict[str, tuple[KafkaServer, list[tuple[str, int]]]] = {
            spec.name: (self._listener_server(spec), [spec.advertised or (spec.host, spec.port)])
            for spec in settings.extra_listeners
        }
        self._tasks: list[asyncio.Task[None]] = []
        self.commands: CommandServer | None = None

    def _listener_server(self, spec: ListenerSpec) -> KafkaServer:
        """The server of one listener: its security protocol, TLS context (SSL, SASL_SSL)
        and a response filter naming every broker by its endpoint on this listener."""
        overrides = self.settings.overrides
        return KafkaServer(
            name=spec.name,
            handlers=self.handlers,
            supported_versions=self.supported_versions,
            max_request_size=self.view.config.get("socket.request.max.bytes"),
            metrics=self.metrics,
            security_protocol=spec.protocol,
            rewrite=endpoint_rewriter(spec.name, lambda: self.view.listener_endpoints(spec.name)),
            ssl_context=(
                server_ssl_context(overrides, spec.name, protocol=spec.protocol)
                if spec.protocol in TLS_PROTOCOLS
                else None
            ),
            principal_mapping_rules=(
                tls_config(overrides, spec.name, "ssl.principal.mapping.rules")[1] or "DEFAULT"
            ),
            **self._connection_settings(),
        )

    def _connection_settings(self) -> dict[str, Any]:
        """What every listener shares: connection limits, the request queue bound and the
        socket settings (read-only in Kafka: read once, at start)."""
        config = self.view.config
        return {
            "quotas": self.connection_quotas,
            "request_queue": self.request_queue,
            "send_buffer_bytes": int(config.get("socket.send.buffer.bytes")),
            "receive_buffer_bytes": int(config.get("socket.receive.buffer.bytes")),
            "max_idle_ms": int(config.get("connections.max.idle.ms")),
        }

    # lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        settings = self.settings
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
        config = self.view.config
        self.registration = BrokerRegistration(
            self.redis,
            cluster_id=settings.cluster_id,
            broker_id=settings.broker_id,
            host=self.endpoint[0],
            port=self.endpoint[1],
            rack=settings.rack,
            endpoints=self.advertised_endpoints(),
            lease_ms=int(config.get("broker.session.timeout.ms")),
            heartbeat_ms=int(config.get("broker.heartbeat.interval.ms")),
            on_fenced=self._on_fenced,
            on_unavailable=self.metadata.outage_began,
            on_available=self.metadata.outage_ended,
        )
        await self.registration.register()
        await self.acls.start(self.redis)
        self.metadata.add_listener(self._on_metadata)
        await self.metadata.start()
        self._on_metadata(self.metadata.image)
        await self.lease.try_acquire()
        self._spawn(self.lease.run(), "controller")
        self._spawn(self.checkpointer.run(), "checkpoint")
        self._spawn(self.isr.run(), "isr")
        self._spawn(self.publisher.run(), "publish")
        # The command channel from the control plane: forced group rebalances, retention
        # and compaction (Celery).
        self.commands = commands = CommandServer(
            self.redis,
            cluster_id=settings.cluster_id,
            broker_id=self.broker_id,
            time_ms=self.time_ms,
        )
        register_group_commands(commands, self.groups)
        Housekeeping(
            self.replicas,
            topic_config=self.view.topic_config,
            time_ms=self.time_ms,
            # Read-only in Kafka: read once, at start.
            cleaner_enabled=bool(self.view.config.get("log.cleaner.enable")),
        ).register(commands)
        self._spawn(commands.serve(), "commands")
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

    def _spawn(self, coro: Any, name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def stop(self) -> None:
        """Stop serving, flush and checkpoint the logs, resign and deregister.

        Every step that waits is bounded: a shutdown must finish even if Redis or a peer
        hangs (the logs are closed whatever happens).
        """
        log.info("broker %d shutting down", self.broker_id)
        if self.registration is not None and self.view.config.get("controlled.shutdown.enable"):
            await self._controlled_shutdown(self.registration)
        await _bounded(self.server.stop(), "closing the listener")
        for extra, _ in self.extra_servers.values():
            await _bounded(extra.stop(), f"closing the {extra.name} listener")
        # Everything that can open logs stops before the logs close: from here on a
        # metadata update (e.g. __consumer_offsets just created) no longer reaches the
        # replicas or the fetchers, and the cache itself stops before the logs close.
        with contextlib.suppress(ValueError):  # a start that failed before adding it
            self.metadata.remove_listener(self._on_metadata)
        await _bounded(self.controller.stop(), "stopping the controller")
        await _bounded(self.groups.stop(), "stopping the group coordinator")
        await _bounded(self.transactions.stop(), "stopping the transaction coordinator")
        await _bounded(self.fetchers.stop(), "stopping the replica fetchers")
        await _bounded(self.acls.stop(), "stopping the ACL cache")
        if self.commands is not None:
            await _bounded(self.commands.stop(), "stopping the command server")
        await _bounded(self.metadata.stop(), "stopping the metadata cache")
        # The part loops, ended for sure (a cancel alone can be swallowed: weir.loop_task).
        left = await stop_tasks([*self._tasks, *self._reports], SHUTDOWN_STEP_S)
        if left:
            names = ", ".join(sorted(task.get_name() for task in left))
            log.warning("shutdown: %s did not stop in %.0f s; going on", names, SHUTDOWN_STEP_S)
        await _bounded(self.isr.stop(), "ending ISR proposals")
        self.replicas.close()
        await _bounded(self.channel.close(), "closing controller connections")
        await _bounded(self.markers.close(), "closing transaction marker connections")
        await _bounded(self.lease.resign(), "resigning the controller lease")
        if self.registration is not None:
            await _bounded(self.registration.deregister(), "deregistering")
        await _bounded(self.redis.aclose(), "closing the Redis client")
        log.info("broker %d stopped", self.broker_id)

    async def _controlled_shutdown(self, registration: BrokerRegistration) -> None:
        """Move leadership away while still serving (Kafka's controlled shutdown); bounded
        by ``broker.session.timeout.ms``, after which the stop goes on regardless."""
        broker_id = self.broker_id

        def handed_over(image: ClusterImage) -> bool:
            return broker_id in image.shutting_down and not leads_movable_partitions(
                image, broker_id
            )

        timeout_s = int(self.view.config.get("broker.session.timeout.ms")) / 1000
        log.info("broker %d: controlled shutdown, moving leadership away", broker_id)
        if not await registration.begin_controlled_shutdown():
            return  # no controller can hear it: stop as after a crash
        try:
            await self.metadata.wait_for(handed_over, timeout_s)
        except TimeoutError:
            log.error(
                "broker %d: timed out after %.0f s waiting for the controller to move its "
                "leaderships away; shutting down anyway",
                broker_id,
                timeout_s,
            )
        else:
            log.info(
                "broker %d: controlled shutdown done, no other replica left to take over",
                broker_id,
            )

    def _on_fenced(self, exc: Exception) -> None:
        """Another process registered this broker id: this one is a zombie and must stop."""
        log.error("broker %d was fenced (%s); shutting down", self.broker_id, exc)
        self.fenced.set()

    def _grace(self) -> Grace:
        """The brokers' grace after a Redis outage, as of now."""
        now = time.monotonic()
        return Grace(
            live_before_outage=self.metadata.live_before_outage,
            # Still in the outage (this broker's heartbeats keep failing, yet the controller
            # could write): the grace holds until a session timeout after it ends.
            reconnected_at=now if self.metadata.in_outage else self.metadata.reconnected_at,
            now=now,
            session_timeout_s=int(self.view.config.get("broker.session.timeout.ms")) / 1000,
        )

    def _controller_image(self) -> ClusterImage:
        """The image the controller decides on: with the brokers' grace after an outage."""
        return self._grace().apply(self.metadata.image)

    async def _fresh_brokers(self) -> list[BrokerImage]:
        """Brokers holding a lease now, and those the grace after an outage keeps alive
        (topic creation places replicas on them)."""
        fresh = await live_brokers(self.redis, cluster_id=self.settings.cluster_id)
        image = self.metadata.image
        graced = self._grace().brokers(image) - {b.broker_id for b in fresh}
        return sorted(
            [*fresh, *(image.registrations[b] for b in graced)], key=lambda b: b.broker_id
        )

    def _on_partition_offline(self, key: tuple[str, int]) -> None:
        """A partition's disk failed here: stop following it and tell the controller (in
        the registration lease), which moves its leadership and ISR to other replicas."""
        self.fetchers.unfollow(key)
        registration = self.registration
        if registration is None:
            return  # not registered yet: register() is followed by reconcile, which reports
        task = asyncio.get_running_loop().create_task(
            registration.report_offline(list(self.replicas.offline_partitions())),
            name="report-offline",
        )
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    def _on_metadata(self, image: ClusterImage) -> None:
        """A new image: the view first, then local replicas and fetchers, then the parts
        that react to it; waiters wake last, when all of that is in place."""
        change = self.view.apply(image)
        self.quotas.update(image.client_quotas)
        changes = self.replicas.reconcile(
            change.placed,
            live_topics=set(change.live_topics),
            now_ms=self.time_ms(),
            allow_delete=not change.store_reset,
        )
        # num.replica.fetchers is dynamic: a new count moves partitions between fetchers.
        self.fetchers.resize(int(self.view.config.get("num.replica.fetchers")))
        for key in changes.unfollow:
            self.fetchers.unfollow(key)
        for partition in changes.follow:
            self.fetchers.follow(partition)
        self.fetchers.shutdown_idle()
        # max.connections may have been raised: a waiting acceptor looks again.
        self.connection_quotas.changed()
        self.replicas.update_configs()
        self.groups.on_metadata()
        self.transactions.on_metadata()
        self.controller.poke()
        self.view.announce()

    def advertised_endpoints(self) -> tuple[ListenerEndpoint, ...]:
        """This broker's listeners as registered: advertised endpoints, primary first."""
        primary = self.listeners[0]
        endpoints = [ListenerEndpoint(primary.name, *self.endpoint, primary.protocol)]
        for spec in self.settings.extra_listeners:
            _, advertised = self.extra_servers[spec.name]
            endpoints.append(ListenerEndpoint(spec.name, *advertised[0], spec.protocol))
        return tuple(endpoints)

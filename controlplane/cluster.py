"""The control plane's one way into the cluster: Redis state, Kafka requests, Kafka clients.

Theory of operation
-------------------
Django views, management commands and Celery tasks are synchronous; Weir's metadata store and
its kio-based :class:`~weir.client.BrokerClient` are asyncio. A :class:`ClusterGateway`
owns one event loop in a daemon thread and runs coroutines there (``call``), so every thread
of the web process shares the same Redis connections and broker connections instead of
opening new ones per request. Async code (Channels consumers) uses ``acall``.

What it offers:

* ``image()`` — the metadata image (topics, partitions, brokers, configs, controller) read
  from Redis in one consistent snapshot;
* ``partition_states()`` — LEO, HW, log start, ISR and size per partition, as leaders publish
  them every second;
* ``request_*`` — a Kafka request (kio entity) to the controller, any broker, one broker or a
  group's coordinator, for what confluent-kafka's AdminClient cannot express
  (reassignments, elections, ...);
* ``admin()`` and ``producer()`` — shared confluent-kafka clients (thread-safe) bootstrapped
  from ``WEIR_BOOTSTRAP_SERVERS`` or, when unset, from the brokers registered in Redis.

Every client authenticates as the gateway's :class:`~controlplane.kafka_security.KafkaSecurity`
says (``WEIR_KAFKA_*``): librdkafka gets its ``security.protocol``/``sasl.*``/``ssl.*``
properties, kio clients a ``ClientSecurity``, and registered endpoints are those of the
listener ``WEIR_KAFKA_LISTENER`` names (the primary when empty). The security object is passed
in rather than read from settings here, so tests can run gateways with other credentials, and
anything with the same three members (:class:`ClientCredentials`) will do: ``manage.py
scram-users --command-config FILE`` runs a gateway with the file's credentials.

``gateway()`` returns the process-wide gateway for the current settings.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import redis
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from django.conf import settings

from controlplane.errors import KafkaUnavailable
from controlplane.kafka_security import KafkaSecurity
from weir.client import BrokerClient, BrokerClientError
from weir.commands import CommandClient
from weir.metadata.errors import MetadataError
from weir.metadata.image import BrokerImage, ClusterImage
from weir.metadata.keys import KeyLayout
from weir.metadata.partition_state import PartitionStatus, ReplicaStatus, read_partition_states
from weir.metadata.redis_url import sync_client
from weir.metadata.store import MetadataStore

if TYPE_CHECKING:
    from weir.client import BrokerClient as _BrokerClient

__all__ = ["ClientCredentials", "ClusterGateway", "gateway", "reset_gateways"]

T = TypeVar("T")

# A partition state older than this was written by a broker that stopped publishing.
STALE_STATE_MS = 5_000
# How long the registered brokers' endpoints are reused for client bootstrap.
ENDPOINTS_TTL_S = 5.0


class ClientCredentials(Protocol):
    """How a client of the cluster authenticates: what the gateway and the admin tools need.

    :class:`~controlplane.kafka_security.KafkaSecurity` (the ``WEIR_KAFKA_*`` settings) and the
    admin tools' ``--command-config`` (``brokers.management.command_config.ToolSecurity``)
    both provide it."""

    @property
    def listener(self) -> str:
        """The registered listener to connect to ("" for each broker's primary endpoint)."""
        ...

    def librdkafka_config(self) -> dict[str, str]:
        """confluent-kafka's ``security.protocol``/``sasl.*``/``ssl.*`` properties."""
        ...

    def broker_client(self, host: str, port: int, *, client_id: str) -> _BrokerClient:
        """A kio client of one broker that authenticates so."""
        ...


class ClusterGateway:
    """Shared access to one Weir cluster (see the module docstring)."""

    def __init__(
        self,
        *,
        redis_url: str,
        cluster_id: str,
        bootstrap_servers: str = "",
        security: ClientCredentials | None = None,
    ) -> None:
        self.redis_url = redis_url
        self.security: ClientCredentials = security or KafkaSecurity()
        self.cluster_id = cluster_id
        self.keys = KeyLayout(cluster_id)
        self._configured_bootstrap = bootstrap_servers
        self.redis = sync_client(
            redis_url, decode_responses=True, socket_timeout=5, socket_connect_timeout=5
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"weir-gateway-{cluster_id}", daemon=True
        )
        self._thread.start()
        self._store: MetadataStore | None = None
        self._clients: dict[tuple[str, int], BrokerClient] = {}
        self._lock = threading.Lock()
        self._admin: tuple[str, AdminClient] | None = None
        self._producer: tuple[str, Producer] | None = None
        self._poller: threading.Thread | None = None
        self._closed = False
        self._registered: tuple[float, list[tuple[str, int]]] | None = None

    # running coroutines -------------------------------------------------------------------
    def call(self, make: Callable[[], Awaitable[T]], *, timeout: float = 30.0) -> T:
        """Run the coroutine ``make()`` on the gateway's loop and wait for its result."""
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(make), self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise KafkaUnavailable(f"the cluster did not answer within {timeout:.0f} s") from None

    async def acall(self, make: Callable[[], Awaitable[T]], *, timeout: float = 30.0) -> T:
        """``call`` for async callers (Channels consumers) on another loop."""
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(make), self._loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            raise KafkaUnavailable(f"the cluster did not answer within {timeout:.0f} s") from None

    # Redis state --------------------------------------------------------------------------
    def _metadata_store(self) -> MetadataStore:
        if self._store is None:
            self._store = MetadataStore.from_url(self.redis_url, cluster_id=self.cluster_id)
        return self._store

    def image(self) -> ClusterImage:
        """The current metadata image (a consistent snapshot read from Redis)."""

        async def snapshot() -> ClusterImage:
            try:
                return await self._metadata_store().snapshot()
            except MetadataError as exc:
                raise KafkaUnavailable(str(exc)) from None

        return self.call(snapshot, timeout=10)

    def partition_states(
        self,
    ) -> tuple[dict[tuple[str, int], PartitionStatus], list[ReplicaStatus]]:
        """Fresh partition states by (topic, partition), and every fresh replica state."""

        async def read() -> tuple[list[PartitionStatus], list[ReplicaStatus]]:
            try:
                return await read_partition_states(
                    self._metadata_store().redis, cluster_id=self.cluster_id
                )
            except (redis.RedisError, OSError) as exc:
                raise KafkaUnavailable(f"metadata store unavailable: {exc}") from None

        partitions, replicas = self.call(read, timeout=10)
        cutoff = int(time.time() * 1000) - STALE_STATE_MS
        fresh = {(p.topic, p.partition): p for p in partitions if p.updated_ms >= cutoff}
        return fresh, [r for r in replicas if r.updated_ms >= cutoff]

    def commands(self, *, timeout_s: float) -> CommandClient:
        """A client of the broker command channel (``weir.commands``) that waits at most
        ``timeout_s`` for the replies to what it sends."""
        return CommandClient(self.redis, self.keys, deadline=time.monotonic() + timeout_s)

    # Kafka requests -----------------------------------------------------------------------
    def _client(self, host: str, port: int) -> BrokerClient:
        client = self._clients.get((host, port))
        if client is None:
            client = self.security.broker_client(host, port, client_id="weir-controlplane")
            self._clients[(host, port)] = client
        return client

    def request_broker(self, broker_id: int, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` (a kio request) to one live broker and return its response."""
        broker = self.image().brokers.get(broker_id)
        if broker is None:
            raise KafkaUnavailable(f"broker {broker_id} is not alive")
        return self._request(*self.address(broker), body, timeout)

    def request_controller(self, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` to the active controller."""
        image = self.image()
        controller = image.controller_id
        broker = image.brokers.get(controller) if controller is not None else None
        if broker is None:
            raise KafkaUnavailable("the cluster has no controller right now; retry shortly")
        return self._request(*self.address(broker), body, timeout)

    def request_any(self, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` to the first live broker that answers."""
        errors = []
        for host, port in self._endpoints():
            try:
                return self._request(host, port, body, timeout)
            except KafkaUnavailable as exc:
                errors.append(f"{host}:{port}: {exc.message}")
        raise KafkaUnavailable("no broker answered: " + ("; ".join(errors) or "none registered"))

    def request_coordinator(self, group: str, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` to the coordinator of consumer group ``group``."""
        from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

        found = self.request_any(
            FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)), timeout=timeout
        )
        (coordinator,) = found.coordinators
        if coordinator.error_code != 0:
            raise KafkaUnavailable(
                f"no coordinator for group {group!r} (Kafka error {coordinator.error_code})"
            )
        return self._request(coordinator.host, coordinator.port, body, timeout)

    def _request(self, host: str, port: int, body: Any, timeout: float) -> Any:
        async def send() -> Any:
            try:
                return await self._client(host, port).request(body, timeout=timeout)
            except BrokerClientError as exc:
                raise KafkaUnavailable(f"broker {host}:{port}: {exc}") from None

        return self.call(send, timeout=timeout + 5)

    def address(self, broker: BrokerImage) -> tuple[str, int]:
        """Where this gateway connects to ``broker``: its ``WEIR_KAFKA_LISTENER`` endpoint."""
        listener = self.security.listener
        if not listener:
            return broker.host, broker.port
        found = broker.endpoint(listener)
        if found is None:
            names = ", ".join(e.name for e in broker.endpoints)
            raise KafkaUnavailable(
                f"broker {broker.broker_id} has no listener {listener!r} "
                f"(WEIR_KAFKA_LISTENER); it registered {names}"
            )
        return found

    def _endpoints(self) -> list[tuple[str, int]]:
        if self._configured_bootstrap:
            endpoints = []
            for item in self._configured_bootstrap.split(","):
                host, _, port = item.strip().rpartition(":")
                endpoints.append((host, int(port)))
            return endpoints
        # admin() and producer() ask for every call (every REST produce): a metadata snapshot
        # each time would double the work, and brokers rarely move, so keep it a few seconds.
        now = time.monotonic()
        cached = self._registered
        if cached is not None and now - cached[0] < ENDPOINTS_TTL_S:
            return cached[1]
        brokers = self.image().brokers
        endpoints = []
        for _, broker in sorted(brokers.items()):
            try:
                endpoints.append(self.address(broker))
            except KafkaUnavailable:
                continue  # a broker without the listener is no bootstrap; others may be
        if endpoints:
            self._registered = (now, endpoints)
        return endpoints

    # confluent-kafka clients --------------------------------------------------------------
    def bootstrap_servers(self) -> str:
        """``host:port,...`` for Kafka clients."""
        endpoints = self._endpoints()
        if not endpoints:
            listener = self.security.listener
            where = f" with a listener named {listener!r} (WEIR_KAFKA_LISTENER)" if listener else ""
            raise KafkaUnavailable(f"no broker is registered in the cluster{where}")
        return ",".join(f"{host}:{port}" for host, port in endpoints)

    def client_config(self, **extra: Any) -> dict[str, Any]:
        """A confluent-kafka configuration for this cluster (plus ``extra``)."""
        return {
            "bootstrap.servers": self.bootstrap_servers(),
            "client.id": "weir-controlplane",
            **self.security.librdkafka_config(),
            **extra,
        }

    def admin(self) -> AdminClient:
        """A shared AdminClient (rebuilt when the brokers' addresses change)."""
        bootstrap = self.bootstrap_servers()
        with self._lock:
            if self._admin is None or self._admin[0] != bootstrap:
                self._admin = (bootstrap, AdminClient(self.client_config()))
            return self._admin[1]

    def producer(self) -> Producer:
        """A shared Producer using the Java client's partitioner (murmur2 of the key).

        A background thread serves its delivery callbacks, so callers attach an ``on_delivery``
        callback and wait on their own future.
        """
        bootstrap = self.bootstrap_servers()
        with self._lock:
            if self._producer is None or self._producer[0] != bootstrap:
                if self._producer is not None:
                    self._producer[1].flush(5)
                producer = Producer(
                    self.client_config(
                        **{
                            "partitioner": "murmur2_random",
                            "linger.ms": 2,
                            "acks": "all",
                            "enable.idempotence": True,
                            "message.max.bytes": 1_000_000,
                        }
                    )
                )
                self._producer = (bootstrap, producer)
                if self._poller is None:
                    self._poller = threading.Thread(
                        target=self._poll_producer, name="weir-producer-poll", daemon=True
                    )
                    self._poller.start()
            return self._producer[1]

    def _poll_producer(self) -> None:
        while not self._closed:
            current = self._producer
            if current is None:
                time.sleep(0.05)
                continue
            current[1].poll(0.05)

    def close(self) -> None:
        self._closed = True
        if self._producer is not None:
            self._producer[1].flush(5)

        async def shutdown() -> None:
            for client in self._clients.values():
                await client.close()
            if self._store is not None:
                await self._store.aclose()

        try:
            self.call(shutdown, timeout=5)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            if not self._loop.is_running():
                self._loop.close()  # also closes its self-pipe sockets
            self.redis.close()


async def _as_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


_gateways: dict[tuple[str, str, str, KafkaSecurity], ClusterGateway] = {}
_gateways_lock = threading.Lock()


def gateway() -> ClusterGateway:
    """The process-wide gateway for the current ``WEIR_*`` settings."""
    security = KafkaSecurity.from_settings(settings)
    key = (
        settings.WEIR_REDIS_URL,
        settings.WEIR_CLUSTER_ID,
        settings.WEIR_BOOTSTRAP_SERVERS,
        security,
    )
    with _gateways_lock:
        found = _gateways.get(key)
        if found is None:
            found = ClusterGateway(
                redis_url=key[0], cluster_id=key[1], bootstrap_servers=key[2], security=security
            )
            _gateways[key] = found
        return found


def reset_gateways() -> None:
    """Close every gateway (tests switch clusters between sessions)."""
    with _gateways_lock:
        for found in _gateways.values():
            found.close()
        _gateways.clear()

"""One broker's parts wired in-process, as ``Broker`` wires them, for tests that call handlers
and coordinators directly: no process, no socket.

The parts are the real ones: a ``ReplicaManager`` with its logs under a test directory, a
``MetadataView`` over a ``MetadataCache`` tailing a real Redis (the suite's ``redis_server``,
isolated by ``cluster_id``), the controller lease (this broker takes it, so it is the
controller and creates topics through its own ``TopicAdmin``) and the controller channel.
Every metadata image reaches the view, then the local replicas, then the coordinators the test
added to ``coordinators`` (in ``Broker``'s order); they are stopped before the logs close.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode

from weir.config import BrokerConfig
from weir.controller_channel import ControllerChannel
from weir.controller_lease import ControllerLease
from weir.metadata.cache import MetadataCache
from weir.metadata.image import ClusterImage
from weir.metadata.registration import BrokerRegistration
from weir.metadata.store import MetadataStore
from weir.metadata_view import MetadataView
from weir.protocol.codec import Request
from weir.replica_manager import ReplicaManager
from weir.server import ConnectionContext
from weir.topic_admin import TopicAdmin

__all__ = [
    "BROKER_ID",
    "SingleBroker",
    "connection",
    "eventually",
    "now_ms",
    "request",
    "single_broker",
]

BROKER_ID = 1


def now_ms() -> int:
    return time.time_ns() // 1_000_000


async def eventually(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


def connection() -> ConnectionContext:
    return ConnectionContext(peer_host="127.0.0.1", peer_port=50000, listener="PLAINTEXT")


def request(api_key: int, version: int, body: Any) -> Request:
    """A decoded request as ``KafkaServer`` hands it to a handler."""
    return Request(
        api_key=api_key,
        api_version=version,
        correlation_id=7,
        client_id="in-process-test",
        body=body,
        size=0,
    )


class Coordinator(Protocol):
    """A group or transaction coordinator, as the broker drives it."""

    def on_metadata(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(eq=False)
class SingleBroker:
    """The parts, and where images go."""

    redis: aioredis.Redis
    store: MetadataStore
    lease: ControllerLease
    view: MetadataView
    replicas: ReplicaManager
    cache: MetadataCache
    channel: ControllerChannel
    admin: TopicAdmin
    data_dir: Path
    coordinators: list[Coordinator] = field(default_factory=list)

    def apply_image(self, image: ClusterImage) -> None:
        """What ``Broker`` does with a new image: view, then local replicas, then waiters."""
        change = self.view.apply(image)
        self.replicas.reconcile(
            change.placed,
            live_topics=set(change.live_topics),
            now_ms=now_ms(),
            allow_delete=not change.store_reset,
        )
        self.view.announce()
        for coordinator in self.coordinators:
            coordinator.on_metadata()

    async def create_topic(self, name: str, partitions: int, **configs: str) -> None:
        """Create ``name`` (RF 1) through this broker's topic admin, as the controller."""
        created = await self.admin.create_topic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            assignments={},
            configs=dict(configs),
            validate_only=False,
            timeout_ms=5000,
        )
        assert created.error == ErrorCode.none, created


@contextlib.asynccontextmanager
async def single_broker(
    *, redis_url: str, cluster_id: str, data_dir: Path
) -> AsyncIterator[SingleBroker]:
    """The parts of broker ``BROKER_ID``, registered and holding the controller lease."""
    redis = aioredis.Redis.from_url(redis_url)
    store = MetadataStore(redis, cluster_id=cluster_id)
    registration = BrokerRegistration(
        redis, cluster_id=cluster_id, broker_id=BROKER_ID, host="127.0.0.1", port=19092
    )
    await registration.register(heartbeat=False)
    lease = ControllerLease(
        store=store,
        broker_id=BROKER_ID,
        config=lambda: view.config,
        monotonic=time.monotonic,
        wall_ms=now_ms,
    )
    view = MetadataView(
        broker_id=BROKER_ID,
        cluster_id=cluster_id,
        config=BrokerConfig(broker_id=BROKER_ID),
        inter_broker_listener="PLAINTEXT",
        own_endpoints=lambda: (),
        is_controller=lambda: lease.is_controller,
    )
    replicas = ReplicaManager(
        broker_id=BROKER_ID, data_dir=data_dir, time_ms=now_ms, log_config_for=view.log_config
    )
    cache = MetadataCache(redis, cluster_id=cluster_id)
    channel = ControllerChannel(
        broker_id=BROKER_ID, view=view, security=None, broker_epoch=lambda: -1
    )
    broker = SingleBroker(
        redis=redis,
        store=store,
        lease=lease,
        view=view,
        replicas=replicas,
        cache=cache,
        channel=channel,
        admin=TopicAdmin(view=view, store=store, lease=lease, channel=channel),
        data_dir=data_dir,
    )
    # The cache tails the metadata log; every image reaches the view and the replicas.
    cache.add_listener(broker.apply_image)
    await cache.start()
    broker.apply_image(cache.image)
    await lease.try_acquire()
    assert lease.is_controller
    try:
        yield broker
    finally:
        for coordinator in broker.coordinators:
            await coordinator.stop()
        broker.replicas.close()  # a test may have replaced them (a restart)
        await cache.stop()
        await registration.deregister()
        await redis.aclose()

"""MetadataCache: tails the log, calls listeners, survives Redis going away and coming back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as aioredis

from tests.conftest import RedisServer
from weir.metadata.cache import MetadataCache
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.image import ClusterImage, ImageDiff
from weir.metadata.registration import BrokerRegistration
from weir.metadata.store import MetadataStore, PartitionChange

FAST = {"block_ms": 100, "poll_interval_s": 0.1, "max_backoff_s": 0.2}


@pytest.fixture
async def cache(redis_client: aioredis.Redis, cluster_id: str) -> AsyncIterator[MetadataCache]:
    cache = MetadataCache(redis_client, cluster_id=cluster_id, **FAST)  # type: ignore[arg-type]
    await cache.start()
    yield cache
    await cache.stop()


async def test_cache_starts_from_the_snapshot(
    redis_client: aioredis.Redis, cluster_id: str, store: MetadataStore, controller_epoch: int
) -> None:
    await store.create_topic(controller_epoch=controller_epoch, name="early", assignments=[[1]])
    cache = MetadataCache(redis_client, cluster_id=cluster_id, **FAST)  # type: ignore[arg-type]
    await cache.start()
    try:
        assert "early" in cache.image.topics and cache.connected
        assert cache.image.stream_id == (await store.snapshot()).stream_id
    finally:
        await cache.stop()


async def test_cache_tails_topic_changes_and_calls_listeners(
    cache: MetadataCache, store: MetadataStore, controller_epoch: int
) -> None:
    seen: list[ClusterImage] = []
    cache.add_listener(seen.append)
    topic_id = await store.create_topic(
        controller_epoch=controller_epoch,
        name="t",
        assignments=[[1, 2], [2, 1]],
        configs={"retention.ms": "9"},
    )
    image = await cache.wait_for(lambda i: "t" in i.topics, 5)
    assert image.topics["t"].topic_id == topic_id
    assert dict(image.topic_config("t")) == {"retention.ms": "9"}
    assert seen and seen[-1] is cache.image

    await store.create_partitions(controller_epoch=controller_epoch, name="t", assignments=[[1, 2]])
    await cache.wait_for(lambda i: len(i.topics["t"].partitions) == 3, 5)
    await store.alter_partitions(
        controller_epoch=controller_epoch, name="t", changes=[PartitionChange(0, leader=2, isr=[2])]
    )
    image = await cache.wait_for(lambda i: i.topics["t"].partitions[0].leader == 2, 5)
    assert image.topics["t"].partitions[0].isr == (2,)
    await store.alter_configs(
        controller_epoch=controller_epoch,
        resource_type="broker",
        resource_name="",
        set={"log.retention.ms": "5"},
    )
    await cache.wait_for(lambda i: dict(i.broker_config("")) == {"log.retention.ms": "5"}, 5)
    await store.delete_topic(controller_epoch=controller_epoch, name="t")
    image = await cache.wait_for(lambda i: "t" not in i.topics, 5)
    assert topic_id not in image.topics_by_id
    assert image == await store.snapshot() or image.topics == (await store.snapshot()).topics


async def test_async_listeners_are_awaited_and_failing_ones_do_not_stop_the_cache(
    cache: MetadataCache, store: MetadataStore, controller_epoch: int
) -> None:
    names: list[set[str]] = []

    async def slow(image: ClusterImage) -> None:
        await asyncio.sleep(0.01)
        names.append(set(image.topics))

    def broken(image: ClusterImage) -> None:
        raise RuntimeError("listener bug")

    cache.add_listener(broken)
    cache.add_listener(slow)
    await store.create_topic(controller_epoch=controller_epoch, name="a", assignments=[[1]])
    await cache.wait_for(lambda i: "a" in i.topics, 5)
    await store.create_topic(controller_epoch=controller_epoch, name="b", assignments=[[1]])
    await cache.wait_for(lambda i: "b" in i.topics, 5)
    await asyncio.sleep(0.05)
    assert {"a", "b"} in names


async def test_listeners_never_see_half_a_write(
    redis_client: aioredis.Redis, cluster_id: str, store: MetadataStore, controller_epoch: int
) -> None:
    """Reading one entry at a time, a topic still appears with all its partitions at once."""
    cache = MetadataCache(
        redis_client,
        cluster_id=cluster_id,
        batch_size=1,
        **FAST,  # type: ignore[arg-type]
    )
    await cache.start()
    partition_counts: list[int] = []
    cache.add_listener(
        lambda image: (
            partition_counts.append(len(image.topics["big"].partitions))
            if "big" in image.topics
            else None
        )
    )
    try:
        await store.create_topic(
            controller_epoch=controller_epoch, name="big", assignments=[[1]] * 20
        )
        await cache.wait_for(lambda i: "big" in i.topics, 5)
        assert partition_counts and set(partition_counts) == {20}
    finally:
        await cache.stop()


async def test_cache_tracks_live_brokers_and_the_controller(
    cache: MetadataCache, redis_client: aioredis.Redis, cluster_id: str, store: MetadataStore
) -> None:
    broker = BrokerRegistration(
        redis_client,
        cluster_id=cluster_id,
        broker_id=4,
        host="h",
        port=4,
        rack="r",
        lease_ms=300,
        heartbeat_ms=100,
    )
    await broker.register(heartbeat=False)
    image = await cache.wait_for(lambda i: 4 in i.brokers, 5)
    assert (image.brokers[4].host, image.brokers[4].rack) == ("h", "r")
    epoch = await store.acquire_controller(4, 30_000)
    image = await cache.wait_for(lambda i: i.controller_id == 4, 5)
    assert image.controller is not None and image.controller.epoch == epoch
    # no heartbeats: the lease expires and the broker drops out of the live set
    image = await cache.wait_for(lambda i: 4 not in i.brokers, 5)
    assert 4 in image.registrations
    await broker.register()
    await cache.wait_for(lambda i: 4 in i.brokers, 5)
    await broker.deregister()
    await cache.wait_for(lambda i: 4 not in i.registrations, 5)


async def test_partitions_a_broker_reports_offline_reach_the_image_until_it_registers_again(
    cache: MetadataCache, redis_client: aioredis.Redis, cluster_id: str
) -> None:
    """The offline report rides on the lease (KRaft's heartbeat carries offline log dirs):
    renewals keep it, a new registration (a restart) starts without it."""
    broker = BrokerRegistration(
        redis_client, cluster_id=cluster_id, broker_id=5, host="h", port=5, lease_ms=30_000
    )
    await broker.register(heartbeat=False)
    await cache.wait_for(lambda i: 5 in i.brokers, 5)
    assert cache.image.offline_brokers("orders", 2) == frozenset()
    await broker.report_offline([("orders", 2)])
    image = await cache.wait_for(lambda i: i.offline_brokers("orders", 2) == {5}, 5)
    assert image.offline_brokers("orders", 1) == frozenset() and 5 in image.brokers
    await broker.renew()  # a heartbeat keeps the report
    await asyncio.sleep(FAST["poll_interval_s"] * 3)
    assert cache.image.offline_brokers("orders", 2) == {5}
    await broker.deregister()
    restarted = BrokerRegistration(
        redis_client, cluster_id=cluster_id, broker_id=5, host="h", port=5, lease_ms=30_000
    )
    await restarted.register(heartbeat=False)
    await cache.wait_for(lambda i: 5 in i.brokers and not i.offline_brokers("orders", 2), 5)
    await restarted.report_offline([])  # an emptied report (Redis' cjson writes it as {})
    await restarted.renew()
    await asyncio.sleep(FAST["poll_interval_s"] * 3)
    assert 5 in cache.image.brokers and not cache.image.offline_replicas
    await restarted.deregister()


async def test_a_controlled_shutdown_request_rides_on_the_lease_until_deregistration(
    cache: MetadataCache, redis_client: aioredis.Redis, cluster_id: str
) -> None:
    """KRaft's heartbeat carries ``wantShutDown``; Weir's lease carries ``shutting_down``,
    kept by renewals alongside an offline report."""
    broker = BrokerRegistration(
        redis_client, cluster_id=cluster_id, broker_id=6, host="h", port=6, lease_ms=30_000
    )
    await broker.register(heartbeat=False)
    await cache.wait_for(lambda i: 6 in i.brokers, 5)
    assert cache.image.shutting_down == frozenset()
    assert await broker.begin_controlled_shutdown()
    image = await cache.wait_for(lambda i: i.shutting_down == {6}, 5)
    assert 6 in image.brokers  # still live: it serves until its leaderships moved
    await broker.report_offline([("orders", 0)])
    image = await cache.wait_for(lambda i: i.offline_brokers("orders", 0) == {6}, 5)
    assert image.shutting_down == {6}
    await broker.deregister()
    await cache.wait_for(lambda i: 6 not in i.registrations and not i.shutting_down, 5)
    assert not await broker.begin_controlled_shutdown()  # nothing left to hand over


# -- Redis going away ----------------------------------------------------------------------
@pytest.fixture
async def own_redis(
    make_redis_server: Callable[[], RedisServer],
) -> AsyncIterator[tuple[RedisServer, aioredis.Redis]]:
    server = make_redis_server()
    client = aioredis.Redis.from_url(server.url)
    yield server, client
    await client.aclose()


async def cache_after_topic(
    client: aioredis.Redis, cluster_id: str, topic: str
) -> tuple[MetadataStore, int, MetadataCache]:
    """A controller (its store and epoch) that created ``topic``, then a started cache."""
    store = MetadataStore(client, cluster_id=cluster_id)
    epoch = await store.acquire_controller(1, 60_000)
    assert epoch is not None
    await store.create_topic(controller_epoch=epoch, name=topic, assignments=[[1]])
    cache = MetadataCache(client, cluster_id=cluster_id, **FAST)  # type: ignore[arg-type]
    await cache.start()
    return store, epoch, cache


async def test_cache_serves_the_last_image_while_redis_is_down_and_resyncs(
    own_redis: tuple[RedisServer, aioredis.Redis], cluster_id: str
) -> None:
    server, client = own_redis
    store, epoch, cache = await cache_after_topic(client, cluster_id, "before")
    try:
        await client.save()  # keep the data across the restart
        incarnation = cache.image.incarnation
        server.stop()
        async with asyncio.timeout(30):
            while cache.connected:
                await asyncio.sleep(0.05)
        # still serving what it knew
        assert "before" in cache.image.topics
        with pytest.raises(MetadataUnavailableError):
            await store.snapshot()

        server.start()
        writer = MetadataStore(client, cluster_id=cluster_id)
        async with asyncio.timeout(30):
            while True:  # the client reconnects on its own
                try:
                    await writer.create_topic(
                        controller_epoch=epoch, name="after", assignments=[[1]]
                    )
                    break
                except MetadataUnavailableError:
                    await asyncio.sleep(0.1)
        image = await cache.wait_for(lambda i: "after" in i.topics, 30)
        assert "before" in image.topics
        assert image.incarnation == incarnation
        await cache.wait_for(lambda i: cache.connected, 30)
    finally:
        await cache.stop()


async def test_cache_notices_a_wiped_store_and_reports_a_reset(
    own_redis: tuple[RedisServer, aioredis.Redis], cluster_id: str
) -> None:
    server, client = own_redis
    _, _, cache = await cache_after_topic(client, cluster_id, "lost")
    diffs: list[ImageDiff] = []
    previous = [cache.image]

    def listener(image: ClusterImage) -> None:
        diffs.append(ImageDiff.between(previous[0], image))
        previous[0] = image

    cache.add_listener(listener)
    try:
        server.restart()  # nothing saved: Redis comes back empty
        image = await cache.wait_for(lambda i: "lost" not in i.topics, 30)
        assert (image.incarnation and image.incarnation != previous[0].incarnation) or diffs
        assert any(d.reset and "lost" in d.deleted_topics for d in diffs)
    finally:
        await cache.stop()


async def test_start_fails_clearly_when_redis_is_unreachable(cluster_id: str) -> None:
    from tests.conftest import _free_port

    client = aioredis.Redis.from_url(f"redis://127.0.0.1:{_free_port()}/0", retry=None)
    cache = MetadataCache(client, cluster_id=cluster_id)
    try:
        with pytest.raises(MetadataUnavailableError, match="unavailable"):
            await cache.start()
    finally:
        await client.aclose()


async def test_a_cache_behind_the_trimmed_history_re_snapshots(
    redis_client: aioredis.Redis, cluster_id: str, store: MetadataStore, controller_epoch: int
) -> None:
    cache = MetadataCache(redis_client, cluster_id=cluster_id, **FAST)  # type: ignore[arg-type]
    await cache.start()
    try:
        await store.create_topic(controller_epoch=controller_epoch, name="x", assignments=[[1]])
        await cache.wait_for(lambda i: "x" in i.topics, 5)
        # Simulate a cache that stopped reading (a paused broker) while history it never
        # read was trimmed: its read position is before the trimmed point.
        cache._read_id = "1-0"
        await store.create_topic(controller_epoch=controller_epoch, name="y", assignments=[[1]])
        await store.create_topic(controller_epoch=controller_epoch, name="z", assignments=[[1]])
        await store.trim_log(older_than_ms=2**50)
        image = await cache.wait_for(lambda i: {"x", "y", "z"} <= set(i.topics), 5)
        assert image.stream_id == (await store.snapshot()).stream_id
    finally:
        await cache.stop()


async def test_liveness_polls_far_apart_mark_an_outage_for_the_controllers_grace(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    """Redis away for a while (even with the client's retries hiding the errors): the cache
    remembers who was alive before, and when it could see Redis again."""
    clock = [100.0]
    cache = MetadataCache(
        redis_client, cluster_id=cluster_id, monotonic=lambda: clock[0], poll_interval_s=1.0
    )
    broker = BrokerRegistration(
        redis_client, cluster_id=cluster_id, broker_id=5, host="h", port=5, lease_ms=60_000
    )
    await broker.register(heartbeat=False)
    cache._install(await cache.store.snapshot())  # no loops: this test polls by hand
    await cache._poll_liveness()
    clock[0] += 1.0
    await cache._poll_liveness()
    assert cache.reconnected_at is None and cache.image.live_broker_ids == {5}
    await redis_client.delete(cache.keys.broker_lease(5))  # expired while Redis was away
    clock[0] += 10.0
    await cache._poll_liveness()
    assert cache.reconnected_at == 111.0
    assert cache.live_before_outage == {5}
    assert cache.image.live_broker_ids == frozenset()


async def test_an_outage_heard_of_late_still_remembers_brokers_whose_leases_expired_in_it(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    """A heartbeat stuck on a paused primary fails a socket timeout late, after the leases
    expired: the brokers seen alive shortly before still count for the grace."""
    clock = [100.0]
    cache = MetadataCache(redis_client, cluster_id=cluster_id, monotonic=lambda: clock[0])
    broker = BrokerRegistration(
        redis_client, cluster_id=cluster_id, broker_id=6, host="h", port=6, lease_ms=60_000
    )
    await broker.register(heartbeat=False)
    cache._install(await cache.store.snapshot())
    await cache._poll_liveness()
    await redis_client.delete(cache.keys.broker_lease(6))
    clock[0] += 1.0
    await cache._poll_liveness()
    assert cache.image.live_broker_ids == frozenset()
    clock[0] += 5.0
    cache.outage_began()
    cache.outage_ended()
    assert cache.live_before_outage == {6} and cache.reconnected_at == 106.0
    clock[0] += cache.live_window_s + 1
    cache.outage_began()  # a later outage: broker 6 was not seen for longer than the window
    assert cache.live_before_outage == frozenset()

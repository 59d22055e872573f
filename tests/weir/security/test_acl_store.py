"""AclStore / AclCache on the suite's real Redis: round trips, atomic delete by filter, and a
second cache (another broker) seeing a change within a second."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from weir.config import BrokerConfig, InvalidConfigError
from weir.metadata.keys import KeyLayout
from weir.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)
from weir.security.acl_store import AclCache, AclStore, build_authorizer

READ_T = AclBinding(
    ResourceType.TOPIC,
    "t",
    PatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermission.ALLOW,
)
WRITE_PREFIX = AclBinding(
    ResourceType.TOPIC,
    "fin-",
    PatternType.PREFIXED,
    "User:bob",
    "*",
    AclOperation.WRITE,
    AclPermission.ALLOW,
)
GROUP_G = AclBinding(
    ResourceType.GROUP,
    "g",
    PatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermission.ALLOW,
)


@pytest.fixture
async def redis(redis_server: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_server)
    yield client
    await client.aclose()


async def test_store_round_trip_is_a_set_and_bumps_the_version(
    redis: aioredis.Redis, cluster_id: str
) -> None:
    store = AclStore(redis, cluster_id=cluster_id)
    assert await store.load() == (0, [])
    await store.add([READ_T, WRITE_PREFIX])
    await store.add([READ_T])  # adding an existing ACL is a no-op (but a new version)
    version, bindings = await store.load()
    assert version == 2 and sorted(bindings) == sorted([READ_T, WRITE_PREFIX])
    await store.remove([READ_T])
    assert (await store.load())[1] == [WRITE_PREFIX]
    keys = KeyLayout(cluster_id)
    assert await redis.exists(keys.acls, keys.acls_version) == 2


async def test_delete_matching_returns_matches_per_filter_and_removes_them_once(
    redis: aioredis.Redis, cluster_id: str
) -> None:
    store = AclStore(redis, cluster_id=cluster_id)
    await store.add([READ_T, WRITE_PREFIX, GROUP_G])
    matched = await store.delete_matching(
        [
            AclBindingFilter(principal="User:alice"),
            AclBindingFilter(resource_type=ResourceType.GROUP),
            AclBindingFilter(principal="User:nobody"),
        ]
    )
    assert matched == [sorted([READ_T, GROUP_G]), [GROUP_G], []]
    assert (await store.load())[1] == [WRITE_PREFIX]


async def test_a_second_broker_cache_sees_a_change_within_a_second(
    redis: aioredis.Redis, cluster_id: str
) -> None:
    writer = AclCache(cluster_id=cluster_id)
    other = AclCache(cluster_id=cluster_id)
    await writer.start(redis)
    await other.start(redis)
    try:
        assert len(other.index) == 0
        started = time.monotonic()
        await writer.store.add([READ_T])
        while READ_T not in other.index.bindings:
            assert time.monotonic() - started < 1.0, "the other cache did not reload in 1 s"
            await asyncio.sleep(0.02)
        await writer.store.remove([READ_T])
        started = time.monotonic()
        while READ_T in other.index.bindings:
            assert time.monotonic() - started < 1.0, "the removal did not reach the other cache"
            await asyncio.sleep(0.02)
    finally:
        await writer.stop()
        await other.stop()


async def test_cache_reloads_when_redis_is_wiped_and_the_counter_restarts(
    redis: aioredis.Redis, cluster_id: str
) -> None:
    cache = AclCache(cluster_id=cluster_id, poll_interval_s=0.05)
    await cache.start(redis)
    try:
        await cache.store.add([READ_T])
        await cache.reload()
        keys = KeyLayout(cluster_id)
        await redis.delete(keys.acls, keys.acls_version)
        deadline = time.monotonic() + 1.0
        while len(cache.index):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
    finally:
        await cache.stop()


def test_build_authorizer_is_off_by_default_and_on_for_kafka_class_names() -> None:
    cache = AclCache(cluster_id="x")
    assert build_authorizer(BrokerConfig(static={}, broker_id=1), cache) is None
    on = build_authorizer(
        BrokerConfig(
            static={
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:admin;User:ops",
                "allow.everyone.if.no.acl.found": "true",
            },
            broker_id=1,
        ),
        cache,
    )
    assert on is not None
    assert on.super_users == {"User:admin", "User:ops"} and on.allow_everyone_if_no_acl
    with pytest.raises(InvalidConfigError, match=r"authorizer\.class\.name"):
        build_authorizer(
            BrokerConfig(static={"authorizer.class.name": "com.example.Nope"}, broker_id=1),
            cache,
        )

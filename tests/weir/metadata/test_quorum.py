"""Metadata writes on a Sentinel deployment count only once a majority of the Redis data
nodes holds them (weir.metadata.quorum), and nobody applies what a majority does not hold.

Against a real deployment (three redis-servers, three sentinels): the required count comes
from the sentinels, a confirmed write is on a replica, and with both replicas gone a write
is refused (``min-replicas-to-write``) or not confirmed, so the store reports it failed and
a cache does not apply a log entry that was never confirmed.
"""

from __future__ import annotations

import uuid

import pytest

from tests.sentinel import SentinelDeployment
from weir.metadata.cache import MetadataCache
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WriteQuorum, stream_order
from weir.metadata.redis_url import AsyncReconnectRetry, aclose_client, async_client
from weir.metadata.store import MetadataStore


def test_stream_ids_compare_by_time_then_sequence() -> None:
    assert stream_order("10-2") > stream_order("10-1") > stream_order("9-99")
    assert stream_order("0-0") < stream_order("1-0")


async def test_a_plain_redis_requires_no_replica(redis_server: str, cluster_id: str) -> None:
    client = async_client(redis_server)
    try:
        quorum = WriteQuorum(client, KeyLayout(cluster_id))
        assert not quorum.replicated
        assert await quorum.replicas_required() == 0
        assert await quorum.confirm() == ""  # nothing to wait for, nothing written
        assert await client.exists(KeyLayout(cluster_id).metadata_log_committed) == 0
    finally:
        await aclose_client(client)


async def test_confirmed_writes_are_on_a_replica_and_unconfirmed_ones_never_count(
    sentinel_deployment: SentinelDeployment,
) -> None:
    cluster_id = f"test-{uuid.uuid4().hex[:12]}"
    keys = KeyLayout(cluster_id)
    # A short retry budget, as the brokers have: a refused write surfaces at once.
    client = async_client(
        sentinel_deployment.url,
        socket_timeout=5,
        decode_responses=True,
        retry=AsyncReconnectRetry(budget_s=0.5),
    )
    store = MetadataStore(client, cluster_id=cluster_id)
    try:
        # Three data nodes, both replicas in sync: a write waits for both (Sentinel may
        # promote either); a majority (one replica) is the floor when one is down.
        assert await store.quorum.replicas_required() == 2
        epoch = await store.acquire_controller(1, 60_000)
        assert epoch == 1
        await store.create_topic(controller_epoch=epoch, name="kept", assignments=[[1]])
        committed = await client.get(keys.metadata_log_committed)
        newest = (await client.xrevrange(keys.metadata_log, count=1))[0][0]
        assert committed == newest
        primary = sentinel_deployment.primary()
        for server in sentinel_deployment.servers:
            if server is not primary:
                with server.client() as replica:
                    assert replica.hexists(keys.topics, "kept")
                    assert replica.get(keys.controller_epoch) == b"1"

        cache = MetadataCache(client, cluster_id=cluster_id)
        await cache.start()
        try:
            assert "kept" in cache.image.topics
            # An entry nobody could confirm (written behind the store's back, then both
            # replicas lost) is not applied, and a write now fails instead of counting.
            for server in sentinel_deployment.servers:
                if server is not primary:
                    sentinel_deployment.kill(server)
            with pytest.raises(MetadataUnavailableError):
                await store.create_topic(
                    controller_epoch=epoch,
                    name="lost",
                    assignments=[[1]],
                )
            with pytest.raises(MetadataUnavailableError):
                await store.allocate_producer_ids(1)
            assert "lost" not in cache.image.topics
            with pytest.raises(MetadataUnavailableError):
                await store.snapshot()
        finally:
            await cache.stop()
    finally:
        await aclose_client(client)

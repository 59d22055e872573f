"""Fixtures for the coordination-layer tests: clients on the suite's private redis-server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from weir.metadata.keys import KeyLayout
from weir.metadata.store import MetadataStore


@pytest.fixture
async def redis_client(redis_server: str) -> AsyncIterator[aioredis.Redis]:
    """A bytes-returning client, like the broker's own."""
    client = aioredis.Redis.from_url(redis_server)
    yield client
    await client.aclose()


@pytest.fixture
def keys(cluster_id: str) -> KeyLayout:
    return KeyLayout(cluster_id)


@pytest.fixture
async def store(redis_client: aioredis.Redis, cluster_id: str) -> MetadataStore:
    return MetadataStore(redis_client, cluster_id=cluster_id)


@pytest.fixture
async def controller_epoch(store: MetadataStore) -> int:
    """Broker 1 holds the controller lease; its epoch."""
    epoch = await store.acquire_controller(1, 30_000)
    assert epoch is not None
    return epoch

"""``Broker.stop`` is prompt and complete: a broker that served a consumer group stops well
within one shutdown step, closes every log it opened and leaves no task running."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from tests.weir.inprocess import build_settings
from weir.broker import SHUTDOWN_STEP_S, Broker
from weir.group_coordinator import OFFSETS_TOPIC


@pytest.fixture
async def broker(
    redis_server: str, cluster_id: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> Broker:
    """A started broker in the test's loop; the test stops it (that is what it checks)."""
    caplog.set_level(logging.WARNING, logger="weir")
    started = Broker(
        build_settings(
            broker_id=1, data_dir=tmp_path / "data", redis_url=redis_server, cluster_id=cluster_id
        )
    )
    await started.start()
    return started


async def _stop_promptly_and_completely(broker: Broker, caplog: pytest.LogCaptureFixture) -> None:
    """Stop ``broker``: well under one step (no step waited for a loop that swallowed its
    cancellation), no step gave up, and no task of the broker's left running."""
    started = time.monotonic()
    await broker.stop()
    elapsed = time.monotonic() - started
    assert elapsed < SHUTDOWN_STEP_S / 2, elapsed
    assert not [r for r in caplog.records if r.getMessage().startswith("shutdown:")]
    left = asyncio.all_tasks() - {asyncio.current_task()}
    assert not left, sorted(t.get_name() for t in left)


async def _serve_a_group(bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait("stop-topic", b"x")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        "stop-topic", bootstrap_servers=bootstrap, group_id="g", auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        assert await consumer.getmany(timeout_ms=10_000)
        await consumer.commit()
    finally:
        await consumer.stop()


async def test_a_broker_that_served_a_group_stops_promptly_and_completely(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    await _serve_a_group("{}:{}".format(*broker.endpoint))
    partitions = list(broker.replicas.partitions())
    assert any(p.topic == OFFSETS_TOPIC for p in partitions)

    await _stop_promptly_and_completely(broker, caplog)
    # Every log opened is closed, the late ones too (the cache stopped before the logs).
    assert all(p.log.closed for p in partitions)
    assert not list(broker.replicas.partitions())


class _SwallowingRedis:
    """The broker's Redis client, except that ``xread`` and the ACL version read hang until
    cancelled and then return as if the reply had won the race (Python 3.11's ``wait_for``
    inside redis-py): each cancel of the loop making them is swallowed."""

    def __init__(self, redis: Any) -> None:
        self._redis = redis
        self.swallowed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._redis, name)

    async def _hang(self) -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.swallowed += 1

    async def xread(self, *args: Any, **kwargs: Any) -> None:
        await self._hang()

    async def get(self, key: Any) -> Any:
        await self._hang()
        return None


async def test_loops_whose_redis_calls_swallow_the_cancel_still_stop(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    assert broker.commands is not None
    swallowing = _SwallowingRedis(broker.redis)
    broker.commands.redis = swallowing
    broker.acls.store.redis = swallowing
    # The command loop's current read (1 s block) ends; the next ones hang in the fake.
    await asyncio.sleep(1.5)

    await _stop_promptly_and_completely(broker, caplog)
    assert swallowing.swallowed >= 2  # both loops were cancelled inside the fake, and went on

"""Broker registration: expiring leases, duplicate ids, zombie epochs fenced."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode

from weir.metadata.errors import BrokerFencedError, DuplicateBrokerError
from weir.metadata.image import ClusterImage
from weir.metadata.keys import KeyLayout
from weir.metadata.records import (
    ListenerEndpoint,
    RegisterBrokerRecord,
    UnregisterBrokerRecord,
    record_from_fields,
)
from weir.metadata.registration import BrokerRegistration, live_brokers


def registration(
    redis: aioredis.Redis, cluster_id: str, broker_id: int = 1, **kwargs: object
) -> BrokerRegistration:
    options: dict[str, object] = {"host": "127.0.0.1", "port": 9092 + broker_id, **kwargs}
    return BrokerRegistration(redis, cluster_id=cluster_id, broker_id=broker_id, **options)  # type: ignore[arg-type]


async def wait_until(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    async with asyncio.timeout(timeout):
        while not await predicate():
            await asyncio.sleep(0.02)


async def test_register_logs_the_broker_and_makes_it_live(
    redis_client: aioredis.Redis, cluster_id: str, keys: KeyLayout
) -> None:
    broker = registration(redis_client, cluster_id, rack="r1")
    epoch = await broker.register(heartbeat=False)
    live = await live_brokers(redis_client, cluster_id=cluster_id)
    assert [(b.broker_id, b.epoch, b.host, b.port, b.rack) for b in live] == [
        (1, epoch, "127.0.0.1", 9093, "r1")
    ]
    entries = await redis_client.xrange(keys.metadata_log)
    assert record_from_fields(entries[-1][1]) == RegisterBrokerRecord(
        broker_id=1,
        epoch=epoch,
        host="127.0.0.1",
        port=9093,
        rack="r1",
        endpoints=(ListenerEndpoint("PLAINTEXT", "127.0.0.1", 9093, "PLAINTEXT"),),
    )
    await broker.deregister()


async def test_every_listener_is_registered_and_logged(
    redis_client: aioredis.Redis, cluster_id: str, keys: KeyLayout
) -> None:
    endpoints = (
        ListenerEndpoint("PLAINTEXT", "127.0.0.1", 9093, "PLAINTEXT"),
        ListenerEndpoint("INTERNAL", "10.0.0.1", 9193, "SASL_SSL"),
    )
    broker = registration(redis_client, cluster_id, endpoints=endpoints)
    epoch = await broker.register(heartbeat=False)
    (live,) = await live_brokers(redis_client, cluster_id=cluster_id)
    assert live.endpoints == endpoints
    assert live.endpoint("INTERNAL") == ("10.0.0.1", 9193)
    assert live.endpoint("SASL_PLAINTEXT") is None
    entries = await redis_client.xrange(keys.metadata_log)
    record = record_from_fields(entries[-1][1])
    assert isinstance(record, RegisterBrokerRecord)
    assert (record.epoch, record.endpoints) == (epoch, endpoints)
    # The image built from the materialized registration and the one built from the log agree.
    from_log = ClusterImage().apply([record])
    assert from_log.registrations[1] == live
    await broker.deregister()


async def test_a_registration_without_endpoints_has_only_its_primary_plaintext_listener(
    redis_client: aioredis.Redis, cluster_id: str, keys: KeyLayout
) -> None:
    # What a broker from before every listener was registered wrote.
    old = '{"broker_id":4,"epoch":7,"host":"h","port":9092,"rack":null,"instance":"x"}'
    await redis_client.hset(keys.brokers, "4", old)
    await redis_client.set(keys.broker_lease(4), old, px=5000)
    (live,) = await live_brokers(redis_client, cluster_id=cluster_id)
    assert live.endpoints == (ListenerEndpoint("PLAINTEXT", "h", 9092, "PLAINTEXT"),)
    assert live.endpoint("PLAINTEXT") == ("h", 9092)
    assert live.endpoint("SASL_SSL") is None
    record = RegisterBrokerRecord.from_json('{"broker_id":4,"epoch":7,"host":"h","port":9092}')
    assert record.endpoints == ()
    assert ClusterImage().apply([record]).registrations[4] == live


async def test_epochs_increase_with_every_registration(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    first = registration(redis_client, cluster_id, 1)
    second = registration(redis_client, cluster_id, 2)
    e1 = await first.register(heartbeat=False)
    e2 = await second.register(heartbeat=False)
    assert e2 > e1
    assert await first.register(heartbeat=False) > e2  # same process may re-register
    await first.deregister()
    await second.deregister()


async def test_duplicate_broker_id_is_rejected_while_the_lease_is_renewed(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    original = registration(redis_client, cluster_id, 3, lease_ms=300, heartbeat_ms=60)
    await original.register()
    imposter = registration(redis_client, cluster_id, 3, port=9999, lease_ms=300, heartbeat_ms=60)
    with pytest.raises(DuplicateBrokerError) as caught:
        await imposter.register(heartbeat=False)
    assert caught.value.error_code is ErrorCode.duplicate_broker_registration
    assert "broker id 3 is already registered" in str(caught.value)
    assert "--broker-id 3" in str(caught.value)
    await original.deregister()
    await imposter.register(heartbeat=False)  # free once the original left
    await imposter.deregister()


async def test_restart_after_a_crash_waits_out_the_previous_incarnations_lease(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    crashed = registration(redis_client, cluster_id, 4, lease_ms=400, heartbeat_ms=100)
    old_epoch = await crashed.register(heartbeat=False)  # then "kill -9": no more renewals
    restarted = registration(redis_client, cluster_id, 4, lease_ms=400, heartbeat_ms=100)
    loop = asyncio.get_running_loop()
    started = loop.time()
    new_epoch = await restarted.register(heartbeat=False)
    assert new_epoch > old_epoch
    assert loop.time() - started > 0.2  # it did wait for the old lease
    assert [b.epoch for b in await restarted.live_brokers()] == [new_epoch]
    await restarted.deregister()


async def test_lease_expires_without_heartbeats(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    broker = registration(redis_client, cluster_id, lease_ms=150, heartbeat_ms=50)
    await broker.register(heartbeat=False)
    assert len(await live_brokers(redis_client, cluster_id=cluster_id)) == 1

    async def gone() -> bool:
        return not await live_brokers(redis_client, cluster_id=cluster_id)

    await wait_until(gone, 2.0)


async def test_heartbeats_keep_the_lease_alive(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    broker = registration(redis_client, cluster_id, lease_ms=300, heartbeat_ms=60)
    await broker.register()
    await asyncio.sleep(1.0)
    assert [b.broker_id for b in await broker.live_brokers()] == [1]
    await broker.deregister()
    assert await broker.live_brokers() == []


async def test_a_paused_broker_gets_its_expired_lease_back_if_nobody_took_the_id(
    redis_client: aioredis.Redis, cluster_id: str
) -> None:
    broker = registration(redis_client, cluster_id, lease_ms=100, heartbeat_ms=50)
    epoch = await broker.register(heartbeat=False)
    await asyncio.sleep(0.3)
    assert not await broker.live_brokers()
    await broker.renew()
    assert [(b.broker_id, b.epoch) for b in await broker.live_brokers()] == [(1, epoch)]
    await broker.deregister()


async def test_zombie_with_an_old_epoch_is_fenced(
    redis_client: aioredis.Redis, cluster_id: str, keys: KeyLayout
) -> None:
    zombie = registration(redis_client, cluster_id, lease_ms=100, heartbeat_ms=50)
    old_epoch = await zombie.register(heartbeat=False)
    await asyncio.sleep(0.3)  # the zombie pauses past its lease
    successor = registration(redis_client, cluster_id, port=7777)
    new_epoch = await successor.register(heartbeat=False)
    assert new_epoch > old_epoch
    with pytest.raises(BrokerFencedError) as caught:
        await zombie.renew()
    assert caught.value.error_code is ErrorCode.stale_broker_epoch
    assert f"epoch {old_epoch} was fenced" in str(caught.value)
    # the zombie's clean shutdown must not remove the successor's registration
    await zombie.deregister()
    live = await live_brokers(redis_client, cluster_id=cluster_id)
    assert [(b.port, b.epoch) for b in live] == [(7777, new_epoch)]
    await successor.deregister()
    entries = await redis_client.xrange(keys.metadata_log)
    unregisters = [record_from_fields(f) for _, f in entries if f[b"type"] == b"UnregisterBroker"]
    assert unregisters == [UnregisterBrokerRecord(broker_id=1, epoch=new_epoch)]


async def test_heartbeat_stops_and_reports_when_fenced(
    redis_client: aioredis.Redis, cluster_id: str, keys: KeyLayout
) -> None:
    fenced: list[BrokerFencedError] = []
    zombie = registration(
        redis_client, cluster_id, lease_ms=1000, heartbeat_ms=50, on_fenced=fenced.append
    )
    await zombie.register()
    await redis_client.delete(keys.broker_lease(1))  # as if its lease had expired
    successor = registration(redis_client, cluster_id)
    await successor.register(heartbeat=False)

    async def reported() -> bool:
        return bool(fenced)

    await wait_until(reported)
    assert zombie.fenced is fenced[0]
    await zombie.deregister()
    await successor.deregister()


async def test_lost_registration_is_renewed_with_a_new_epoch(
    redis_client: aioredis.Redis, cluster_id: str, keys: KeyLayout
) -> None:
    broker = registration(redis_client, cluster_id, lease_ms=1000, heartbeat_ms=50)
    epoch = await broker.register()
    await redis_client.delete(keys.broker_lease(1), keys.brokers)  # e.g. Redis was wiped

    async def re_registered() -> bool:
        return broker.epoch is not None and broker.epoch > epoch

    await wait_until(re_registered)
    assert [b.epoch for b in await broker.live_brokers()] == [broker.epoch]
    await broker.deregister()

"""aiokafka against a real broker in the test's event loop (manual assignment: no consumer groups
yet)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from itertools import pairwise

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import InvalidPartitionsError, OffsetOutOfRangeError

from tests.weir.clients.helpers import (
    CODEC_IDS,
    CODECS,
    consume_aiokafka_async,
    make_records,
    produce_aiokafka_async,
    stored_batches,
)
from tests.weir.inprocess import InProcessBroker

pytestmark = pytest.mark.integration

TOPIC_ALREADY_EXISTS = 36
INVALID_TOPIC_EXCEPTION = 17
INVALID_REPLICATION_FACTOR = 38
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_CONFIG = 40
DYNAMIC_TOPIC_CONFIG = 1
DEFAULT_CONFIG = 5


@pytest.fixture
async def admin(loop_broker: InProcessBroker) -> AsyncIterator[AIOKafkaAdminClient]:
    client = AIOKafkaAdminClient(bootstrap_servers=loop_broker.bootstrap)
    await client.start()
    yield client
    await client.close()


async def create(
    admin: AIOKafkaAdminClient, name: str, partitions: int = 1, **configs: str
) -> None:
    response = await admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs)])
    assert [(t[0], t[1]) for t in response.topic_errors] == [(name, 0)]


def topic_configs(response: object) -> dict[str, tuple[str, int]]:
    """``{name: (value, source)}`` of a DescribeConfigs response's only resource."""
    (resource,) = response.resources  # type: ignore[attr-defined]
    error_code, _, _, _, entries = resource
    assert error_code == 0
    return {entry[0]: (entry[1], entry[3]) for entry in entries}


async def consumer_for(broker: InProcessBroker) -> AIOKafkaConsumer:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    return consumer


@pytest.mark.parametrize("codec", CODECS)
async def test_idempotent_keyed_records_round_trip_in_every_codec(
    loop_broker: InProcessBroker, admin: AIOKafkaAdminClient, codec: str
) -> None:
    topic = f"ak-codec-{codec}"
    await create(admin, topic)
    sent = make_records("aiokafka", 300)
    offsets = await produce_aiokafka_async(
        loop_broker.bootstrap, topic, sent, codec=codec, enable_idempotence=True
    )
    assert offsets == list(range(300))

    received = await consume_aiokafka_async(loop_broker.bootstrap, topic, 300)
    assert [offset for offset, _ in received] == list(range(300))
    assert [rec for _, rec in received] == sent

    batches = stored_batches(loop_broker.data_dir, topic)
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}
    assert sum(b.records_count for b in batches) == 300
    # Idempotent: one producer id, epoch 0, sequences contiguous from 0.
    assert len({b.producer_id for b in batches}) == 1 and batches[0].producer_id >= 0
    assert batches[0].base_sequence == 0
    for previous, batch in pairwise(batches):
        assert batch.base_sequence == previous.last_sequence + 1

    tail = await consume_aiokafka_async(loop_broker.bootstrap, topic, 51, start=249)
    assert [offset for offset, _ in tail] == list(range(249, 300))


async def test_offsets_for_times_and_beginning_end_offsets(
    loop_broker: InProcessBroker, admin: AIOKafkaAdminClient
) -> None:
    topic = "ak-times"
    await create(admin, topic)
    base = 1_600_000_000_000
    records = [
        replace(rec, timestamp=base + i * 1000) for i, rec in enumerate(make_records("ak", 100))
    ]
    await produce_aiokafka_async(loop_broker.bootstrap, topic, records, codec="lz4")
    tp = TopicPartition(topic, 0)
    consumer = await consumer_for(loop_broker)
    try:
        found = (await consumer.offsets_for_times({tp: base + 42_500}))[tp]
        assert (found.offset, found.timestamp) == (43, base + 43_000)
        assert (await consumer.offsets_for_times({tp: base + 99_001}))[tp] is None
        assert await consumer.beginning_offsets([tp]) == {tp: 0}
        assert await consumer.end_offsets([tp]) == {tp: 100}
    finally:
        await consumer.stop()


async def test_acks_zero_records_land_without_responses(
    loop_broker: InProcessBroker, admin: AIOKafkaAdminClient
) -> None:
    topic = "ak-acks0"
    await create(admin, topic)
    producer = AIOKafkaProducer(bootstrap_servers=loop_broker.bootstrap, acks=0, linger_ms=5)
    await producer.start()
    try:
        for i in range(200):
            await producer.send(topic, value=str(i).encode(), partition=0)
        await producer.flush()
        # The connection still works after many unanswered requests.
        await producer.send_and_wait(topic, value=b"last", partition=0)
    finally:
        await producer.stop()
    tp = TopicPartition(topic, 0)
    consumer = await consumer_for(loop_broker)
    try:
        deadline = time.monotonic() + 10
        while (await consumer.end_offsets([tp]))[tp] < 201 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert (await consumer.end_offsets([tp]))[tp] == 201
    finally:
        await consumer.stop()
    received = await consume_aiokafka_async(loop_broker.bootstrap, topic, 201)
    assert [rec.value for _, rec in received] == [str(i).encode() for i in range(200)] + [b"last"]


async def test_admin_creates_alters_and_deletes_topics(
    loop_broker: InProcessBroker, admin: AIOKafkaAdminClient
) -> None:
    await create(admin, "ak-adm", partitions=2)
    assert "ak-adm" in await admin.list_topics()
    response = await admin.create_topics(
        [NewTopic("ak-adm", 1, 1), NewTopic("bad/name", 1, 1), NewTopic("ak-rf3", 1, 3)]
    )
    assert {t[0]: t[1] for t in response.topic_errors} == {
        "ak-adm": TOPIC_ALREADY_EXISTS,
        "bad/name": INVALID_TOPIC_EXCEPTION,
        "ak-rf3": INVALID_REPLICATION_FACTOR,
    }

    await admin.create_partitions({"ak-adm": NewPartitions(6)})
    (described,) = await admin.describe_topics(["ak-adm"])
    assert sorted(p["partition"] for p in described["partitions"]) == list(range(6))
    with pytest.raises(InvalidPartitionsError):
        await admin.create_partitions({"ak-adm": NewPartitions(2)})

    response = await admin.delete_topics(["ak-adm", "ak-nosuch"])
    assert dict(response.topic_error_codes) == {
        "ak-adm": 0,
        "ak-nosuch": UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert "ak-adm" not in await admin.list_topics()
    assert not (loop_broker.data_dir / "ak-adm-5").exists()


async def test_describe_and_legacy_alter_configs(
    loop_broker: InProcessBroker, admin: AIOKafkaAdminClient
) -> None:
    topic = "ak-configs"
    await create(admin, topic, **{"retention.ms": "5555", "segment.ms": "100000"})
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    (described,) = await admin.describe_configs([resource])
    configs = topic_configs(described)
    assert configs["retention.ms"] == ("5555", DYNAMIC_TOPIC_CONFIG)
    assert configs["segment.ms"] == ("100000", DYNAMIC_TOPIC_CONFIG)
    assert configs["cleanup.policy"] == ("delete", DEFAULT_CONFIG)

    # AlterConfigs (not incremental) replaces the whole set of overrides, as in Kafka.
    change = ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "999"})
    (altered,) = await admin.alter_configs([change])
    assert [tuple(r[:2]) for r in altered.resources] == [(0, None)]
    (described,) = await admin.describe_configs([resource])
    configs = topic_configs(described)
    assert configs["retention.ms"] == ("999", DYNAMIC_TOPIC_CONFIG)
    assert configs["segment.ms"] == ("604800000", DEFAULT_CONFIG)

    bad = ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": "soon"})
    (altered,) = await admin.alter_configs([bad])
    assert altered.resources[0][0] == INVALID_CONFIG
    (described,) = await admin.describe_configs([resource])
    assert topic_configs(described)["retention.ms"] == ("999", DYNAMIC_TOPIC_CONFIG)

    only = ConfigResource(ConfigResourceType.TOPIC, topic, {"cleanup.policy": None})
    (described,) = await admin.describe_configs([only])
    assert topic_configs(described) == {"cleanup.policy": ("delete", DEFAULT_CONFIG)}

    broker = ConfigResource(ConfigResourceType.BROKER, "1")
    (described,) = await admin.describe_configs([broker])
    assert topic_configs(described)["num.partitions"][0] == "1"


async def test_delete_records_moves_log_start_offset(
    loop_broker: InProcessBroker, admin: AIOKafkaAdminClient
) -> None:
    topic = "ak-trim"
    await create(admin, topic)
    await produce_aiokafka_async(loop_broker.bootstrap, topic, make_records("ak", 40))
    tp = TopicPartition(topic, 0)
    assert await admin.delete_records({tp: RecordsToDelete(25)}) == {tp: 25}
    with pytest.raises(OffsetOutOfRangeError):
        await admin.delete_records({tp: RecordsToDelete(41)})
    consumer = await consumer_for(loop_broker)
    try:
        assert await consumer.beginning_offsets([tp]) == {tp: 25}
        assert await consumer.end_offsets([tp]) == {tp: 40}
    finally:
        await consumer.stop()
    received = await consume_aiokafka_async(loop_broker.bootstrap, topic, 15, start=25)
    assert [offset for offset, _ in received] == list(range(25, 40))

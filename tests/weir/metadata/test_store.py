"""MetadataStore: fenced atomic writes land in the log and the materialized state together."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode

from weir.metadata.errors import (
    FencedError,
    InvalidReplicaAssignmentError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicError,
)
from weir.metadata.keys import KeyLayout
from weir.metadata.records import (
    ConfigRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
    record_from_fields,
)
from weir.metadata.store import MetadataStore, PartitionChange, StalePartitionEpochError


async def log_entries(redis: aioredis.Redis, keys: KeyLayout) -> list[tuple[object, bool]]:
    """(record, ends a batch) for every entry of the metadata log."""
    entries = await redis.xrange(keys.metadata_log)
    return [(record_from_fields(fields), b"end" in fields) for _, fields in entries]


async def state_keys(redis: aioredis.Redis, keys: KeyLayout) -> dict[str, object]:
    return {
        "topics": await redis.hgetall(keys.topics),
        "topic_ids": await redis.hgetall(keys.topic_ids),
        "resources": await redis.smembers(keys.config_resources),
        "log": await redis.xlen(keys.metadata_log),
    }


# -- controller lease and fencing ----------------------------------------------------------
async def test_only_one_broker_holds_the_controller_lease(store: MetadataStore) -> None:
    first = await store.acquire_controller(1, 30_000)
    assert first is not None
    assert await store.acquire_controller(2, 30_000) is None
    assert await store.renew_controller(1, first, 30_000)
    lease = await store.controller()
    assert lease is not None and (lease.broker_id, lease.epoch) == (1, first)


async def test_resigning_lets_the_next_controller_in_with_a_higher_epoch(
    store: MetadataStore,
) -> None:
    first = await store.acquire_controller(1, 30_000)
    assert first is not None
    await store.resign_controller(1, first)
    second = await store.acquire_controller(2, 30_000)
    assert second == first + 1
    assert not await store.renew_controller(1, first, 30_000)


async def test_expired_lease_is_taken_over_and_the_old_controller_is_fenced(
    store: MetadataStore, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    old = await store.acquire_controller(1, 100)
    assert old is not None
    await asyncio.sleep(0.25)
    new = await store.acquire_controller(2, 30_000)
    assert new == old + 1
    assert not await store.renew_controller(1, old, 30_000)
    before = await state_keys(redis_client, keys)
    with pytest.raises(FencedError) as caught:
        await store.create_topic(controller_epoch=old, name="t", assignments=[[1]])
    assert caught.value.error_code is ErrorCode.not_controller
    # nothing at all was written by the fenced controller
    assert await state_keys(redis_client, keys) == before
    await store.create_topic(controller_epoch=new, name="t", assignments=[[2]])


@pytest.mark.parametrize(
    "write",
    ["create", "delete", "partitions", "alter", "replace", "change"],
)
async def test_every_write_is_fenced_by_the_controller_epoch(
    store: MetadataStore,
    controller_epoch: int,
    redis_client: aioredis.Redis,
    keys: KeyLayout,
    write: str,
) -> None:
    await store.create_topic(controller_epoch=controller_epoch, name="t", assignments=[[1]])
    stale = controller_epoch - 1
    before = await state_keys(redis_client, keys)
    with pytest.raises(FencedError):
        if write == "create":
            await store.create_topic(controller_epoch=stale, name="u", assignments=[[1]])
        elif write == "delete":
            await store.delete_topic(controller_epoch=stale, name="t")
        elif write == "partitions":
            await store.create_partitions(controller_epoch=stale, name="t", assignments=[[1]])
        elif write == "alter":
            await store.alter_configs(
                controller_epoch=stale,
                resource_type="topic",
                resource_name="t",
                set={"retention.ms": "1"},
            )
        elif write == "replace":
            await store.replace_configs(
                controller_epoch=stale,
                resource_type="broker",
                resource_name="",
                configs={"log.retention.ms": "1"},
            )
        else:
            await store.alter_partitions(
                controller_epoch=stale, name="t", changes=[PartitionChange(0, isr=[1])]
            )
    assert await state_keys(redis_client, keys) == before


async def test_concurrent_controllers_never_both_write(
    store: MetadataStore, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    """Epochs 1..5 are handed out in turn; only writes by the newest epoch succeed."""
    epochs = []
    for broker in range(5):
        epoch = await store.acquire_controller(broker, 30_000)
        assert epoch is not None
        epochs.append(epoch)
        await store.resign_controller(broker, epoch)
    results = await asyncio.gather(
        *(store.create_topic(controller_epoch=e, name=f"t{e}", assignments=[[1]]) for e in epochs),
        return_exceptions=True,
    )
    succeeded = [e for e, r in zip(epochs, results, strict=True) if not isinstance(r, Exception)]
    assert succeeded == [epochs[-1]]
    assert list(await redis_client.hkeys(keys.topics)) == [f"t{epochs[-1]}".encode()]


# -- topics --------------------------------------------------------------------------------
async def test_create_topic_appends_one_batch_and_materializes_the_state(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    topic_id = await store.create_topic(
        controller_epoch=controller_epoch,
        name="orders",
        assignments=[[1, 2], [2, 3], [3, 1]],
        configs={"retention.ms": "1000", "cleanup.policy": "compact"},
    )
    entries = await log_entries(redis_client, keys)
    records = [r for r, _ in entries]
    assert records[0] == TopicRecord(name="orders", topic_id=topic_id)
    assert records[1:4] == [
        PartitionRecord(topic_id=topic_id, partition=0, replicas=(1, 2), isr=(1, 2), leader=1),
        PartitionRecord(topic_id=topic_id, partition=1, replicas=(2, 3), isr=(2, 3), leader=2),
        PartitionRecord(topic_id=topic_id, partition=2, replicas=(3, 1), isr=(3, 1), leader=3),
    ]
    assert set(records[4:]) == {
        ConfigRecord("topic", "orders", "retention.ms", "1000"),
        ConfigRecord("topic", "orders", "cleanup.policy", "compact"),
    }
    assert [end for _, end in entries] == [False] * 5 + [True]
    stored = json.loads(await redis_client.hget(keys.topics, "orders"))
    assert stored["topic_id"] == str(topic_id)
    assert stored["partitions"][1] == {
        "partition": 1,
        "replicas": [2, 3],
        "isr": [2, 3],
        "leader": 2,
        "leader_epoch": 0,
        "partition_epoch": 0,
        "adding_replicas": [],
        "removing_replicas": [],
    }
    assert await redis_client.hgetall(keys.configs("topic", "orders")) == {
        b"retention.ms": b"1000",
        b"cleanup.policy": b"compact",
    }
    assert await redis_client.hget(keys.topic_ids, str(topic_id)) == b"orders"


async def test_isr_and_leader_skip_brokers_that_are_not_live(
    store: MetadataStore, controller_epoch: int
) -> None:
    await store.create_topic(
        controller_epoch=controller_epoch, name="t", assignments=[[1, 2, 3]], live_brokers={2, 3}
    )
    topic = await store.get_topic("t")
    assert topic is not None
    partition = topic.partitions[0]
    assert (partition.replicas, partition.isr, partition.leader) == ((1, 2, 3), (2, 3), 2)
    with pytest.raises(InvalidReplicaAssignmentError, match="fenced or in controlled shutdown"):
        await store.create_topic(
            controller_epoch=controller_epoch, name="u", assignments=[[1]], live_brokers={2}
        )


async def test_existing_or_colliding_names_are_rejected(
    store: MetadataStore, controller_epoch: int
) -> None:
    await store.create_topic(controller_epoch=controller_epoch, name="a.b", assignments=[[1]])
    with pytest.raises(TopicExistsError, match=r"Topic 'a\.b' already exists\.") as caught:
        await store.create_topic(controller_epoch=controller_epoch, name="a.b", assignments=[[1]])
    assert caught.value.error_code is ErrorCode.topic_already_exists
    with pytest.raises(InvalidTopicError, match=r"collides with existing topic: a\.b"):
        await store.create_topic(controller_epoch=controller_epoch, name="a_b", assignments=[[1]])
    with pytest.raises(InvalidTopicError, match="illegal"):
        await store.create_topic(controller_epoch=controller_epoch, name="a/b", assignments=[[1]])


@pytest.mark.parametrize(
    ("assignments", "message"),
    [([], "at least one partition"), ([[]], "empty replica list"), ([[1, 1]], "more than once")],
)
async def test_bad_assignments_are_rejected(
    store: MetadataStore, controller_epoch: int, assignments: list[list[int]], message: str
) -> None:
    with pytest.raises(InvalidReplicaAssignmentError, match=message):
        await store.create_topic(
            controller_epoch=controller_epoch, name="t", assignments=assignments
        )


async def test_delete_topic_removes_state_and_configs_and_logs_it(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    topic_id = await store.create_topic(
        controller_epoch=controller_epoch,
        name="a.b",
        assignments=[[1]],
        configs={"retention.ms": "5"},
    )
    assert await store.delete_topic(controller_epoch=controller_epoch, name="a.b") == topic_id
    assert await redis_client.hgetall(keys.topics) == {}
    assert await redis_client.hgetall(keys.topic_ids) == {}
    assert await redis_client.hgetall(keys.topic_collisions) == {}
    assert await redis_client.exists(keys.configs("topic", "a.b")) == 0
    assert await redis_client.smembers(keys.config_resources) == set()
    last, end = (await log_entries(redis_client, keys))[-1]
    assert last == RemoveTopicRecord(name="a.b", topic_id=topic_id) and end
    with pytest.raises(UnknownTopicError) as caught:
        await store.delete_topic(controller_epoch=controller_epoch, name="a.b")
    assert caught.value.error_code is ErrorCode.unknown_topic_or_partition
    # the name is free again, for '.' and '_' alike
    await store.create_topic(controller_epoch=controller_epoch, name="a_b", assignments=[[1]])


async def test_delete_by_id_only_deletes_that_incarnation_of_the_name(
    store: MetadataStore, controller_epoch: int
) -> None:
    await store.create_topic(controller_epoch=controller_epoch, name="t", assignments=[[1]])
    with pytest.raises(UnknownTopicError):
        await store.delete_topic(controller_epoch=controller_epoch, name="t", topic_id=uuid.uuid4())
    assert await store.get_topic("t") is not None


async def test_create_partitions_appends_numbered_partitions(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    topic_id = await store.create_topic(
        controller_epoch=controller_epoch, name="t", assignments=[[1, 2]]
    )
    count = await store.create_partitions(
        controller_epoch=controller_epoch, name="t", assignments=[[2, 1], [1, 2]]
    )
    assert count == 3
    topic = await store.get_topic("t")
    assert topic is not None
    assert [(p.partition, p.replicas, p.leader) for p in topic.partitions.values()] == [
        (0, (1, 2), 1),
        (1, (2, 1), 2),
        (2, (1, 2), 1),
    ]
    entries = (await log_entries(redis_client, keys))[-2:]
    assert [r.partition for r, _ in entries] == [1, 2]  # type: ignore[attr-defined]
    assert [end for _, end in entries] == [False, True]
    assert all(r.topic_id == topic_id for r, _ in entries)  # type: ignore[attr-defined]
    with pytest.raises(UnknownTopicError):
        await store.create_partitions(
            controller_epoch=controller_epoch, name="x", assignments=[[1]]
        )


async def test_concurrent_partition_additions_do_not_lose_each_other(
    store: MetadataStore, controller_epoch: int
) -> None:
    await store.create_topic(controller_epoch=controller_epoch, name="t", assignments=[[1]])
    await asyncio.gather(
        *(
            store.create_partitions(controller_epoch=controller_epoch, name="t", assignments=[[1]])
            for _ in range(8)
        )
    )
    topic = await store.get_topic("t")
    assert topic is not None and sorted(topic.partitions) == list(range(9))


async def test_alter_partitions_bumps_epochs_and_fences_stale_callers(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    topic_id = await store.create_topic(
        controller_epoch=controller_epoch, name="t", assignments=[[1, 2, 3]]
    )
    topic = await store.alter_partitions(
        controller_epoch=controller_epoch,
        name="t",
        changes=[PartitionChange(0, isr=[1, 2], expected_partition_epoch=0)],
    )
    assert (topic.partitions[0].isr, topic.partitions[0].leader_epoch) == ((1, 2), 0)
    assert topic.partitions[0].partition_epoch == 1
    topic = await store.alter_partitions(
        controller_epoch=controller_epoch, name="t", changes=[PartitionChange(0, leader=2)]
    )
    assert (topic.partitions[0].leader, topic.partitions[0].leader_epoch) == (2, 1)
    last, _ = (await log_entries(redis_client, keys))[-1]
    assert last == PartitionChangeRecord(
        topic_id=topic_id, partition=0, leader_epoch=1, partition_epoch=2, leader=2
    )
    with pytest.raises(StalePartitionEpochError) as caught:
        await store.alter_partitions(
            controller_epoch=controller_epoch,
            name="t",
            changes=[PartitionChange(0, isr=[2], expected_partition_epoch=1)],
        )
    assert caught.value.error_code is ErrorCode.invalid_update_version


# -- configs -------------------------------------------------------------------------------
async def test_incremental_config_changes_log_only_real_changes(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    await store.create_topic(
        controller_epoch=controller_epoch,
        name="t",
        assignments=[[1]],
        configs={"retention.ms": "1", "segment.bytes": "2000"},
    )
    length = await redis_client.xlen(keys.metadata_log)
    await store.alter_configs(
        controller_epoch=controller_epoch,
        resource_type="topic",
        resource_name="t",
        set={"retention.ms": "5", "segment.bytes": "2000"},
        delete=["cleanup.policy"],
    )
    new = (await log_entries(redis_client, keys))[length:]
    assert new == [(ConfigRecord("topic", "t", "retention.ms", "5"), True)]
    await store.alter_configs(
        controller_epoch=controller_epoch,
        resource_type="topic",
        resource_name="t",
        set={},
        delete=["retention.ms", "segment.bytes"],
    )
    assert await redis_client.exists(keys.configs("topic", "t")) == 0
    assert await redis_client.smembers(keys.config_resources) == set()
    with pytest.raises(UnknownTopicError):
        await store.alter_configs(
            controller_epoch=controller_epoch,
            resource_type="topic",
            resource_name="nope",
            set={"retention.ms": "5"},
        )


async def test_replace_configs_replaces_the_whole_set(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    await store.alter_configs(
        controller_epoch=controller_epoch,
        resource_type="broker",
        resource_name="",
        set={"log.retention.ms": "1", "message.max.bytes": "2000"},
    )
    length = await redis_client.xlen(keys.metadata_log)
    await store.replace_configs(
        controller_epoch=controller_epoch,
        resource_type="broker",
        resource_name="",
        configs={"message.max.bytes": "3000"},
    )
    assert await redis_client.hgetall(keys.configs("broker", "")) == {b"message.max.bytes": b"3000"}
    new = [r for r, _ in (await log_entries(redis_client, keys))[length:]]
    assert new == [
        ConfigRecord("broker", "", "log.retention.ms", None),
        ConfigRecord("broker", "", "message.max.bytes", "3000"),
    ]
    await store.alter_configs(
        controller_epoch=controller_epoch,
        resource_type="broker",
        resource_name="7",
        set={"log.retention.ms": "9"},
    )
    image = await store.snapshot()
    assert dict(image.broker_config("")) == {"message.max.bytes": "3000"}
    assert dict(image.broker_config(7)) == {"log.retention.ms": "9"}


# -- snapshot ------------------------------------------------------------------------------
async def test_snapshot_is_the_state_at_the_last_stream_id(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    empty = await store.snapshot()
    assert empty.stream_id == "0-0" and not empty.topics and empty.incarnation
    topic_id = await store.create_topic(
        controller_epoch=controller_epoch,
        name="t",
        assignments=[[1], [1]],
        configs={"retention.ms": "7"},
    )
    image = await store.snapshot()
    newest = await redis_client.xrevrange(keys.metadata_log, count=1)
    assert image.stream_id == newest[0][0].decode()
    assert image.topics["t"].topic_id == topic_id
    assert image.topics_by_id[topic_id].name == "t"
    assert sorted(image.topics["t"].partitions) == [0, 1]
    assert dict(image.topic_config("t")) == {"retention.ms": "7"}
    assert image.controller is not None and image.controller.epoch == controller_epoch
    assert image.incarnation == empty.incarnation


async def test_snapshot_equals_replaying_the_log(
    store: MetadataStore, controller_epoch: int, redis_client: aioredis.Redis, keys: KeyLayout
) -> None:
    from weir.metadata.image import ClusterImage

    await store.create_topic(
        controller_epoch=controller_epoch,
        name="a",
        assignments=[[1, 2]],
        configs={"retention.ms": "1"},
    )
    await store.create_topic(controller_epoch=controller_epoch, name="b", assignments=[[2]])
    await store.create_partitions(controller_epoch=controller_epoch, name="a", assignments=[[2, 1]])
    await store.alter_partitions(
        controller_epoch=controller_epoch, name="a", changes=[PartitionChange(1, leader=1, isr=[1])]
    )
    await store.alter_configs(
        controller_epoch=controller_epoch,
        resource_type="topic",
        resource_name="a",
        set={"segment.bytes": "100"},
    )
    await store.delete_topic(controller_epoch=controller_epoch, name="b")
    snapshot = await store.snapshot()
    replayed = ClusterImage().apply(r for r, _ in await log_entries(redis_client, keys))
    assert replayed.topics == snapshot.topics
    assert replayed.topic_configs == snapshot.topic_configs


async def test_producer_ids_are_unique_blocks(store: MetadataStore) -> None:
    blocks = await asyncio.gather(*(store.allocate_producer_ids(10) for _ in range(5)))
    ids = [i for block in blocks for i in block]
    assert sorted(ids) == list(range(50))
    assert await store.allocate_producer_id() == 50


async def test_store_works_with_a_decoding_client(redis_server: str, cluster_id: str) -> None:
    store = MetadataStore.from_url(redis_server, cluster_id=cluster_id)
    try:
        epoch = await store.acquire_controller(1, 30_000)
        assert epoch is not None
        await store.create_topic(
            controller_epoch=epoch, name="t", assignments=[[1]], configs={"retention.ms": "1"}
        )
        image = await store.snapshot()
        assert "t" in image.topics and dict(image.topic_config("t")) == {"retention.ms": "1"}
    finally:
        await store.aclose()


async def test_trimming_removes_old_history_but_never_the_newest_entry(
    redis_client: aioredis.Redis, keys: KeyLayout, store: MetadataStore, controller_epoch: int
) -> None:
    lengths = []
    for name in ("a", "b", "c"):
        await asyncio.sleep(0.01)  # distinct stream id milliseconds per topic
        await store.create_topic(controller_epoch=controller_epoch, name=name, assignments=[[1]])
        lengths.append(await redis_client.xlen(keys.metadata_log))
    entries = await redis_client.xrange(keys.metadata_log)
    assert await store.trim_log(older_than_ms=0) == 0  # nothing is that old
    # Cut at the first record of topic "c": the history before it goes.
    first_of_c = entries[lengths[1]][0].decode()
    removed = await store.trim_log(older_than_ms=int(first_of_c.split("-")[0]))
    remaining = await redis_client.xrange(keys.metadata_log)
    assert removed == lengths[1] and remaining == entries[lengths[1] :]
    trimmed = await redis_client.get(keys.metadata_log_trimmed)
    assert trimmed == entries[lengths[1] - 1][0]
    # Everything older than "now": all but the newest entry go.
    await store.trim_log(older_than_ms=2**50)
    assert [e[0] for e in await redis_client.xrange(keys.metadata_log)] == [entries[-1][0]]
    # The materialized state is untouched: it is the snapshot.
    assert set((await store.snapshot()).topics) == {"a", "b", "c"}

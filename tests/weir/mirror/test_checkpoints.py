"""Checkpoints, group offset sync and heartbeats of east->west between two in-process Weir
clusters: MM2's record formats on the internal topics, exact translated offsets (the target
also holds foreign records, so target offsets are not source offsets), a consumer failing
over with no skip and no re-read, active target groups skipped and reported, never a rewind
nor an offset past the target's end, and one checkpoint leader among two tasks."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.weir.inprocess import ThreadedBroker
from tests.weir.mirror.test_replicate import read_all, sync_topics, topic_config
from weir.mirror.checkpoints import CheckpointRound, CheckpointTask, HeartbeatTask
from weir.mirror.config import Flow, MirrorConfig
from weir.mirror.formats import Checkpoint, Heartbeat
from weir.mirror.replicate import Replicator
from weir.mirror.status import GroupCheckpoint


def mirror_config(east: ThreadedBroker, west: ThreadedBroker) -> MirrorConfig:
    return MirrorConfig.from_properties(
        {
            "clusters": "east, west",
            "east.bootstrap.servers": east.bootstrap,
            "west.bootstrap.servers": west.bootstrap,
            "east->west.enabled": "true",
            "east->west.topics": "orders",
            "east->west.sync.group.offsets.enabled": "true",
            "offset.lag.max": "3",
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            "checkpoints.topic.replication.factor": "1",
            "heartbeats.topic.replication.factor": "1",
        }
    )


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=0)
    assert producer.flush(30) == 0


def replicate_all(config: MirrorConfig, flow: Flow, topics: dict[str, str], count: int) -> None:
    """A replicator (a new lifetime) copying ``count`` records in batches of 7, then closed."""
    replicator = Replicator(
        flow,
        topics=topics,
        source_config=config.client_config("east", "consumer"),
        target_config=config.client_config("west", "producer"),
        batch_size=7,
    )
    deadline = time.monotonic() + 30
    try:
        while sum(s.records for s in replicator.stats.values()) < count:
            assert time.monotonic() < deadline, replicator.stats
            replicator.run_once(0.5)
    finally:
        replicator.close()


def commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()


def committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    [tp] = consumer.committed([TopicPartition(topic, 0)], timeout=30)
    consumer.close()
    return tp.offset


def checkpoint_task(config: MirrorConfig, flow: Flow) -> CheckpointTask:
    return CheckpointTask(
        flow,
        source_admin_config=config.client_config("east", "admin"),
        target_admin_config=config.client_config("west", "admin"),
        target_producer_config=config.client_config("west", "producer"),
        syncs_consumer_config=config.client_config("east", "consumer"),
        topics={"orders": "east.orders"},
    )


def lead(*tasks: CheckpointTask) -> tuple[CheckpointTask, CheckpointRound]:
    """Rounds of every task (each keeps its membership alive) until one leads; it and its
    round. Never two leaders at once."""
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline, "no leader"
        rounds = [(task, task.run_once()) for task in tasks]
        leaders = [(task, result) for task, result in rounds if result.leader]
        assert len(leaders) <= 1, "two checkpoint leaders"
        if leaders:
            return leaders[0]


def test_checkpoints_translate_exactly_and_a_failed_over_consumer_resumes(
    east: ThreadedBroker, west: ThreadedBroker
) -> None:
    config = mirror_config(east, west)
    flow = config.flow("east", "west")
    east_admin = AdminClient(config.client_config("east", "admin"))
    west_admin = AdminClient(config.client_config("west", "admin"))
    east_admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
    topics = sync_topics(flow, east_admin, west_admin).remote_names
    values = [f"v{i}" for i in range(35)]

    # Target offsets drift from source ones: 3 foreign records first, 2 more mid-way (a
    # break), and two replicator lifetimes. Source u < 20 lands at u + 3, the rest at u + 5.
    produce(west.bootstrap, "east.orders", ["foreign"] * 3)
    produce(east.bootstrap, "orders", values[:20])
    replicate_all(config, flow, topics, 20)
    produce(west.bootstrap, "east.orders", ["foreign"] * 2)
    produce(east.bootstrap, "orders", values[20:30])
    replicate_all(config, flow, topics, 10)
    produce(east.bootstrap, "orders", values[30:])  # not mirrored yet

    commit(east.bootstrap, "billing", "orders", 22)  # processed v0..v21 on east
    commit(east.bootstrap, "caught-up", "orders", 30)  # one past the last mirrored record
    commit(east.bootstrap, "ahead", "orders", 35)  # past what the mirror copied
    commit(east.bootstrap, "early", "orders", 4)
    commit(west.bootstrap, "early", "east.orders", 20)  # already further on the target
    commit(east.bootstrap, "live", "orders", 10)
    live = Consumer({"bootstrap.servers": west.bootstrap, "group.id": "live"})
    live.subscribe(["east.orders"])
    deadline = time.monotonic() + 30
    while not live.assignment():
        assert time.monotonic() < deadline
        live.poll(0.2)
    live_before = committed(west.bootstrap, "live", "east.orders")

    task = checkpoint_task(config, flow)
    try:
        _, first = lead(task)
        assert first.errors == []
        assert sorted(first.checkpoints, key=lambda c: c.group) == [
            GroupCheckpoint("ahead", "orders", 0, "east.orders", 35, 35, exact=False),
            GroupCheckpoint("billing", "orders", 0, "east.orders", 22, 27, exact=True),
            GroupCheckpoint("caught-up", "orders", 0, "east.orders", 30, 35, exact=True),
            GroupCheckpoint("early", "orders", 0, "east.orders", 4, 7, exact=True),
            GroupCheckpoint("live", "orders", 0, "east.orders", 10, 13, exact=True),
        ]
        assert sorted(first.synced_groups) == ["ahead", "billing", "caught-up"]
        assert first.skipped_active_groups == ["live"]
        # Nothing changed: no checkpoint is written again; the active group is still skipped.
        again = task.run_once()
        assert (again.leader, again.checkpoints, again.synced_groups) == (True, [], [])
        assert again.skipped_active_groups == ["live"]
    finally:
        task.close()
        live.close()

    # MM2's records on west's east.checkpoints.internal, compacted, one partition.
    records = read_all(west.bootstrap, flow.checkpoints_topic, partitions=1, count=5)
    decoded = {Checkpoint.from_record(key, value) for key, value, *_ in records}
    assert Checkpoint("billing", "east.orders", 0, 22, 27, "") in decoded
    assert len(decoded) == 5
    assert topic_config(west_admin, flow.checkpoints_topic, "cleanup.policy") == "compact"

    # Synced on the target where inactive; never rewound, never past the end, active untouched.
    assert committed(west.bootstrap, "billing", "east.orders") == 27
    assert committed(west.bootstrap, "ahead", "east.orders") == 35
    assert committed(west.bootstrap, "early", "east.orders") == 20
    assert committed(west.bootstrap, "live", "east.orders") == live_before

    # billing fails over to west: it reads exactly v22..v29, no skip, no re-read.
    consumer = Consumer(
        {"bootstrap.servers": west.bootstrap, "group.id": "billing", "enable.auto.commit": False}
    )
    consumer.subscribe(["east.orders"])
    read: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while len(read) < 8 and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.3):
                assert m.error() is None, m.error()
                read.append(m.value().decode())
        for m in consumer.consume(100, 0.5):  # and nothing more
            read.append(m.value().decode())
    finally:
        consumer.close()
    assert read == values[22:30]


def test_one_checkpoint_leader_among_two_tasks_and_heartbeats(
    east: ThreadedBroker, west: ThreadedBroker
) -> None:
    config = mirror_config(east, west)
    flow = config.flow("east", "west")
    tasks = [checkpoint_task(config, flow), checkpoint_task(config, flow)]
    try:
        leader, _ = lead(*tasks)
        follower = next(task for task in tasks if task is not leader)
        assert not follower.run_once().leader
        tasks.remove(leader)
        leader.close()  # the leader leaves: the other takes over
        assert lead(follower)[0] is follower
    finally:
        for task in tasks:
            task.close()

    heartbeats = HeartbeatTask(
        flow,
        target_producer_config=config.client_config("west", "producer"),
        target_admin_config=config.client_config("west", "admin"),
    )
    try:
        assert heartbeats.run_once(1_700_000_000_000) == Heartbeat(
            "east", "west", 1_700_000_000_000
        )
        heartbeats.run_once(1_700_000_001_000)
    finally:
        heartbeats.close()
    records = read_all(west.bootstrap, "heartbeats", partitions=1, count=2)
    assert [Heartbeat.from_record(key, value) for key, value, *_ in records] == [
        Heartbeat("east", "west", 1_700_000_000_000),
        Heartbeat("east", "west", 1_700_000_001_000),
    ]
    west_admin = AdminClient(config.client_config("west", "admin"))
    assert topic_config(west_admin, "heartbeats", "cleanup.policy") == "compact"

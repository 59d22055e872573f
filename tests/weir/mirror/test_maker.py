"""``MirrorMaker`` processes (here on threads) between two in-process Weir clusters: topics
created after the start are picked up, status reaches Redis, a target that goes away and comes
back is caught up with nothing lost, and two makers with one configuration split the
partitions and one takes over when the other stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.weir.inprocess import ThreadedBroker
from weir.metadata.redis_url import sync_client
from weir.mirror.config import MirrorConfig
from weir.mirror.maker import MirrorMaker
from weir.mirror.status import FlowStatus, StatusStore


def properties(east: ThreadedBroker, west: ThreadedBroker, **extra: str) -> dict[str, str]:
    return {
        "clusters": "east, west",
        "east.bootstrap.servers": east.bootstrap,
        "west.bootstrap.servers": west.bootstrap,
        "east->west.enabled": "true",
        "east->west.topics": "orders.*",
        "refresh.topics.interval.seconds": "1",
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "emit.checkpoints.enabled": "false",
        "emit.heartbeats.enabled": "false",
        **extra,
    }


class Running:
    """A MirrorMaker on a thread for the ``with`` block."""

    def __init__(self, config: MirrorConfig, store: StatusStore | None = None) -> None:
        self.maker = MirrorMaker(config, status_store=store)
        self.thread = threading.Thread(target=self.maker.run, daemon=True)

    def __enter__(self) -> MirrorMaker:
        self.thread.start()
        return self.maker

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.maker.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive()


def produce(bootstrap: str, topic: str, values: range, partitions: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in values:
        producer.produce(topic, key=b"k", value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def read_values(bootstrap: str, topic: str, partitions: int) -> list[int]:
    """Every value of ``topic`` (read to its end)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        ends = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        ]
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[int] = []
        deadline = time.monotonic() + 30
        while len(values) < sum(ends):
            assert time.monotonic() < deadline, (len(values), ends)
            for m in consumer.consume(500, 0.5):
                assert m.error() is None, m.error()
                values.append(int(m.value()))
        return values
    finally:
        consumer.close()


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def target_count(bootstrap: str, topic: str, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        total = 0
        for p in range(partitions):
            try:
                total += consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
            except Exception:
                return -1
        return total
    finally:
        consumer.close()


def test_new_topics_are_mirrored_status_is_published_and_an_absent_target_is_caught_up(
    east: ThreadedBroker, west: ThreadedBroker, redis_server: str
) -> None:
    config = MirrorConfig.from_properties(properties(east, west))
    store = StatusStore(sync_client(redis_server), "mirror-test")
    admin = AdminClient({"bootstrap.servers": east.bootstrap})
    with Running(config, store) as maker:
        # A topic created after the start is found by the next refresh.
        admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(30)
        admin.create_topics([NewTopic("other", 1, 1)])["other"].result(30)
        produce(east.bootstrap, "orders", range(100), 2)
        wait_for(lambda: target_count(west.bootstrap, "east.orders", 2) == 100, "first copy")

        def published() -> FlowStatus | None:
            found = [s for s in store.read_all() if s.flow == "east->west"]
            return found[0] if found else None

        wait_for(
            lambda: (s := published()) is not None and s.records_total == 100, "status in Redis"
        )
        status = published()
        assert status is not None and status.process_id == maker.process_id
        assert status.state == "running" and status.topics == ["orders"]
        assert status.skipped_topics["other"] == "not selected by topics/topics.exclude"
        assert sorted((p.source_topic, p.partition) for p in status.partitions) == [
            ("orders", 0),
            ("orders", 1),
        ]
        assert all(p.target_topic == "east.orders" for p in status.partitions)
        assert all(
            p.record_age_ms >= 0 and p.replication_latency_ms >= 0 for p in status.partitions
        )

        # The target goes away: records keep arriving on the source; the flow says it waits.
        west.stop()
        produce(east.bootstrap, "orders", range(100, 300), 2)
        wait_for(
            lambda: (s := published()) is not None and s.state == "retrying" and bool(s.error),
            "the flow to report the absent target",
        )
        west.start()
        wait_for(lambda: target_count(west.bootstrap, "east.orders", 2) >= 300, "catch-up", 90)
        wait_for(lambda: (s := published()) is not None and s.state == "running", "recovery")
    # Stopped: its status is gone at once (not after the TTL).
    assert [s for s in store.read_all() if s.flow == "east->west"] == []
    values = read_values(west.bootstrap, "east.orders", 2)
    assert set(values) == set(range(300))  # nothing lost (a retried batch may repeat)


def test_two_makers_split_the_partitions_and_one_takes_over(
    east: ThreadedBroker, west: ThreadedBroker
) -> None:
    config = MirrorConfig.from_properties(properties(east, west))
    admin = AdminClient({"bootstrap.servers": east.bootstrap})
    admin.create_topics([NewTopic("orders", 4, 1)])["orders"].result(30)
    produce(east.bootstrap, "orders", range(200), 4)
    first, second = Running(config), Running(config)
    with first as a, second as b:

        def owned(maker: MirrorMaker) -> set[int]:
            return {p.partition for p in maker.statuses()[0].partitions}

        wait_for(
            lambda: owned(a) and owned(b) and owned(a) | owned(b) == {0, 1, 2, 3},
            "both makers to own partitions",
        )
        assert not owned(a) & owned(b)
        wait_for(lambda: target_count(west.bootstrap, "east.orders", 4) == 200, "first copy")
        second.stop()
        wait_for(lambda: owned(a) == {0, 1, 2, 3}, "the survivor to take every partition")
        produce(east.bootstrap, "orders", range(200, 400), 4)
        wait_for(lambda: target_count(west.bootstrap, "east.orders", 4) == 400, "second copy")
    values = read_values(west.bootstrap, "east.orders", 4)
    assert sorted(values) == list(range(400))  # clean hand-over: no gap, no duplicate


def test_active_active_never_loops_and_a_failed_over_group_resumes_exactly(
    east: ThreadedBroker, west: ThreadedBroker
) -> None:
    config = MirrorConfig.from_properties(
        properties(
            east,
            west,
            **{
                "west->east.enabled": "true",
                "west->east.topics": "orders.*",
                "emit.checkpoints.enabled": "true",
                "emit.checkpoints.interval.seconds": "1",
                "emit.heartbeats.enabled": "true",
                "sync.group.offsets.enabled": "true",
                "sync.group.offsets.interval.seconds": "1",
            },
        )
    )
    for broker in (east, west):
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("orders", 2, 1)])["orders"].result(30)
    produce(east.bootstrap, "orders", range(100), 2)
    produce(west.bootstrap, "orders", range(1000, 1050), 2)
    # A group reads 60 records on east and commits (then stops: east is "lost").
    group = Consumer(
        {
            "bootstrap.servers": east.bootstrap,
            "group.id": "billing",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    group.subscribe(["orders"])
    seen: list[int] = []
    deadline = time.monotonic() + 30
    while len(seen) < 60:
        assert time.monotonic() < deadline
        for m in group.consume(60 - len(seen), 0.5):
            assert m.error() is None
            seen.append(int(m.value()))
    group.commit(asynchronous=False)
    group.close()
    with Running(config) as maker:
        wait_for(lambda: target_count(west.bootstrap, "east.orders", 2) == 100, "east -> west")
        wait_for(lambda: target_count(east.bootstrap, "west.orders", 2) == 50, "west -> east")
        # Nothing else writes east.orders: the translation is the source position itself.
        source_positions = committed(east.bootstrap, "billing", "orders", 2)
        assert sum(source_positions) == 60
        wait_for(
            lambda: committed(west.bootstrap, "billing", "east.orders", 2) == source_positions,
            "billing's translated offsets on west",
        )
        wait_for(
            lambda: all(s.leader and s.last_heartbeat_ms for s in maker.statuses()),
            "each flow's checkpoint leader and heartbeats",
        )
        time.sleep(2.5)  # two more refreshes: mirrored topics must not come back
    topics = set(AdminClient({"bootstrap.servers": west.bootstrap}).list_topics(timeout=10).topics)
    assert "east.orders" in topics and "east.heartbeats" in topics
    assert not any(t.startswith("west.east.") or t.startswith("east.west.") for t in topics)
    topics = set(AdminClient({"bootstrap.servers": east.bootstrap}).list_topics(timeout=10).topics)
    assert "west.orders" in topics
    assert not any(t.startswith("east.west.") or t.startswith("west.east.") for t in topics)
    # The consumer fails over to west and reads exactly what it had not processed.
    standby = Consumer(
        {"bootstrap.servers": west.bootstrap, "group.id": "billing", "enable.auto.commit": False}
    )
    standby.subscribe(["east.orders"])
    rest: list[int] = []
    deadline = time.monotonic() + 30
    while len(rest) < 40:
        assert time.monotonic() < deadline, rest
        for m in standby.consume(100, 0.5):
            assert m.error() is None
            rest.append(int(m.value()))
    assert not standby.consume(100, 1.0)
    standby.close()
    assert sorted(seen + rest) == list(range(100))


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        offsets = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=10
        )
        return [tp.offset for tp in offsets]
    finally:
        consumer.close()


def test_identity_policy_keeps_topic_names(east: ThreadedBroker, west: ThreadedBroker) -> None:
    config = MirrorConfig.from_properties(
        properties(
            east,
            west,
            **{
                "replication.policy.class": "IdentityReplicationPolicy",
                "east->west.topics.exclude": "orders\\.internal.*, orders-audit",
            },
        )
    )
    admin = AdminClient({"bootstrap.servers": east.bootstrap})
    for name in ("orders", "orders-audit"):
        admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    produce(east.bootstrap, "orders", range(10), 1)
    with Running(config) as maker:
        wait_for(lambda: target_count(west.bootstrap, "orders", 1) == 10, "orders on west")
        status = maker.statuses()[0]
        assert status.topics == ["orders"]
        assert status.skipped_topics["orders-audit"] == "not selected by topics/topics.exclude"
    assert read_values(west.bootstrap, "orders", 1) == list(range(10))

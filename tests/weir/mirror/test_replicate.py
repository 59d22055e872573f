"""One flow east->west between two in-process Weir clusters: topics planned and created, records
copied with key, value, headers, timestamp and partition, offsets committed, offset syncs in
MM2's format. Also the offset-sync rule on its own (pure)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)

from tests.weir.inprocess import ThreadedBroker
from weir.mirror.config import Flow, MirrorConfig
from weir.mirror.formats import OffsetSync
from weir.mirror.replicate import OffsetSyncPolicy, Replicator, group_id
from weir.mirror.topics import (
    TopicsPlan,
    apply_plan,
    describe_source,
    describe_target,
    plan_topics,
)

RETENTION_1H = {"retention.ms": "3600000"}


def test_offset_sync_rule_is_mm2s_plus_break_syncs() -> None:
    rule = OffsetSyncPolicy(offset_lag_max=2)
    tp = ("orders", 0)
    assert rule.update(tp, 10, 0) == [(10, 0)]  # first record of the lifetime
    assert rule.update(tp, 11, 1) == []
    assert rule.update(tp, 12, 2) == []
    assert rule.update(tp, 13, 3) == [(13, 3)]  # 3 - (0 + 1) >= 2: translation too stale
    assert rule.update(tp, 14, 4) == []
    # Source offsets skipped (MM2 syncs the current pair): the end of the run too.
    assert rule.update(tp, 20, 5) == [(14, 4), (20, 5)]
    # The target went backwards, right after a sync: the previous end is that sync already.
    assert rule.update(tp, 21, 2) == [(21, 2)]
    assert rule.update(tp, 22, 3) == []
    assert rule.update(tp, 23, 9) == [(22, 3), (23, 9)]  # a target gap is a break too
    rule.forget(tp)
    assert rule.update(tp, 24, 10) == [(24, 10)]  # a new lifetime starts with a sync


def test_east_to_west_copies_records_exactly(east: ThreadedBroker, west: ThreadedBroker) -> None:
    assert east.cluster_id != west.cluster_id
    config = MirrorConfig.from_properties(
        {
            "clusters": "east, west",
            "east.bootstrap.servers": east.bootstrap,
            "west.bootstrap.servers": west.bootstrap,
            "east->west.enabled": "true",
            "east->west.topics": "orders",
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
        }
    )
    flow = config.flow("east", "west")
    east_admin = AdminClient(config.client_config("east", "admin"))
    new = NewTopic("orders", num_partitions=2, replication_factor=1, config=RETENTION_1H)
    east_admin.create_topics([new])["orders"].result(30)

    producer = Producer({"bootstrap.servers": east.bootstrap, "enable.idempotence": True})
    sent = []
    for i in range(20):
        record = (
            f"k{i}".encode(),
            f"v{i}".encode(),
            [("trace", f"t{i}".encode()), ("dup", b"1"), ("dup", b"2")],
            1_700_000_000_000 + i,
            i % 2,
        )
        key, value, headers, ts, partition = record
        producer.produce(
            "orders", key=key, value=value, headers=headers, timestamp=ts, partition=partition
        )
        sent.append(record)
    assert producer.flush(30) == 0

    west_admin = AdminClient(config.client_config("west", "admin"))
    plan = sync_topics(flow, east_admin, west_admin)
    assert plan.remote_names == {"orders": "east.orders"}
    assert describe_target(west_admin, cluster="west")["east.orders"] == 2
    assert topic_config(west_admin, "east.orders", "retention.ms") == "3600000"

    replicator = mirror_until(config, flow, plan.remote_names, len(sent))
    assert {tp: s.committed_offset for tp, s in replicator.stats.items()} == {
        ("orders", 0): 10,
        ("orders", 1): 10,
    }
    assert replicator.stats[("orders", 0)].last_source_offset == 9

    copied = read_all(west.bootstrap, "east.orders", partitions=2, count=len(sent))
    expected = sorted(sent, key=lambda r: (r[4], r[3]))
    assert sorted(copied, key=lambda r: (r[4], r[3])) == expected

    # The source group committed the positions (a restart resumes after them).
    probe = Consumer({"bootstrap.servers": east.bootstrap, "group.id": group_id(flow)})
    committed = probe.committed([TopicPartition("orders", p) for p in (0, 1)], timeout=30)
    probe.close()
    assert [tp.offset for tp in committed] == [10, 10]

    # Offset syncs live on the source by default, named after the target, in MM2's bytes.
    syncs = [
        OffsetSync.from_record(key, value)
        for key, value, *_ in read_all(
            east.bootstrap, flow.offset_syncs_topic, partitions=1, count=4
        )
    ]
    assert flow.offset_syncs_topic == "mm2-offset-syncs.west.internal"
    assert OffsetSync("orders", 0, 0, 0) in syncs
    assert OffsetSync("orders", 1, 0, 0) in syncs
    assert OffsetSync("orders", 0, 9, 9) in syncs  # the delayed one, written at the commit

    # The source grows a partition and changes a config; a second replicator (a restart)
    # resumes from the commits: the target grows, gets the config, and nothing is copied twice.
    east_admin.create_partitions([NewPartitions("orders", 3)])["orders"].result(30)
    change = ConfigResource(
        ConfigResource.Type.TOPIC,
        "orders",
        incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    east_admin.incremental_alter_configs([change])[change].result(30)
    late = Producer({"bootstrap.servers": east.bootstrap})  # fresh metadata: 3 partitions
    for partition in (0, 1, 2):
        late.produce("orders", key=b"late", value=b"late", partition=partition)
    assert late.flush(30) == 0
    plan = sync_topics(flow, east_admin, west_admin)
    assert [(t.action, t.partitions, t.alter_configs) for t in plan.topics] == [("grow", 3, True)]
    assert describe_target(west_admin, cluster="west")["east.orders"] == 3
    assert topic_config(west_admin, "east.orders", "retention.ms") == "7200000"
    restarted = mirror_until(config, flow, plan.remote_names, 3)
    assert {tp: s.last_source_offset for tp, s in restarted.stats.items()} == {
        ("orders", 0): 10,
        ("orders", 1): 10,
        ("orders", 2): 0,
    }
    probe = Consumer({"bootstrap.servers": west.bootstrap, "group.id": "probe"})
    ends = [probe.get_watermark_offsets(TopicPartition("east.orders", p))[1] for p in (0, 1, 2)]
    probe.close()
    assert ends == [11, 11, 1]


def sync_topics(flow: Flow, source: AdminClient, target: AdminClient) -> TopicsPlan:
    """Plan east's topics on west and apply the plan; the plan."""
    plan = plan_topics(
        flow, describe_source(source, cluster="east"), describe_target(target, cluster="west")
    )
    apply_plan(target, plan, cluster="west", replication_factor=flow.replication_factor)
    return plan


def mirror_until(
    config: MirrorConfig, flow: Flow, topics: dict[str, str], count: int
) -> Replicator:
    """A replicator (a new process, as after a restart) run until it copied ``count``
    records, then closed; it, for its counters."""
    replicator = Replicator(
        flow,
        topics=topics,
        source_config=config.client_config("east", "consumer"),
        target_config=config.client_config("west", "producer"),
    )
    deadline = time.monotonic() + 60
    try:
        while sum(s.records for s in replicator.stats.values()) < count:
            assert time.monotonic() < deadline, replicator.stats
            replicator.run_once(0.5)
    finally:
        replicator.close()
    return replicator


def topic_config(admin: AdminClient, topic: str, name: str) -> str | None:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return entries[name].value


def read_all(
    bootstrap: str, topic: str, *, partitions: int, count: int
) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int, int]]:
    """At least ``count`` records of ``topic``: key, value, headers, timestamp, partition."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "probe", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + 30
    try:
        while len(out) < count and time.monotonic() < deadline:
            for m in consumer.consume(100, 0.5):
                assert m.error() is None, m.error()
                out.append((m.key(), m.value(), m.headers() or [], m.timestamp()[1], m.partition()))
    finally:
        consumer.close()
    return out

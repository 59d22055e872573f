"""The mirror with a source that is not Weir: Tansu (a Kafka-compatible broker in Rust) ->
an in-process Weir cluster, through the same pieces ``mirror-maker`` runs (properties, topic
plan, replicator). Records must arrive exactly -- key (null too), value (empty too), headers
(repeated names, empty values) in order, timestamp, partition and per-partition order -- the
source group's commits and the offset syncs must land on the foreign cluster, in MM2's format.

Starts a process (Tansu, see ``conftest.py``): a foreign broker is the point of the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.weir.inprocess import ThreadedBroker, threaded_broker
from tests.weir.mirror.conftest import FAST_GROUPS, TansuBroker
from tests.weir.mirror.test_replicate import read_all
from weir.mirror.config import MirrorConfig
from weir.mirror.formats import OffsetSync
from weir.mirror.replicate import Replicator, group_id
from weir.mirror.topics import apply_plan, describe_source, describe_target, plan_topics

Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes]], int, int]
PARTITIONS = 3
COUNT = 30


@pytest.fixture
def weir(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with threaded_broker(
        data_dir=tmp_path / "weir" / "broker-1", redis_url=redis_server, configs=FAST_GROUPS
    ) as b:
        yield b


def records() -> list[Record]:
    """What the test produces on the source: the edge cases of key, value and headers."""
    out: list[Record] = []
    for i in range(COUNT):
        key = None if i % 7 == 3 else f"k{i}".encode()
        value = b"" if i % 5 == 4 else f"v{i}".encode() * (1 + i % 4)
        headers = [("trace", f"t{i}".encode()), ("dup", b"1"), ("dup", b"2"), ("empty", b"")]
        out.append((key, value, headers, 1_700_000_000_000 + 1000 * i, i % PARTITIONS))
    return out


def test_tansu_topic_mirrors_into_weir_exactly(
    tansu_broker: TansuBroker, weir: ThreadedBroker
) -> None:
    config = MirrorConfig.from_properties(
        {
            "clusters": "tansu, weir",
            "tansu.bootstrap.servers": tansu_broker.bootstrap,
            "weir.bootstrap.servers": weir.bootstrap,
            "tansu->weir.enabled": "true",
            "tansu->weir.topics": "orders",
            "replication.factor": "1",
            "offset-syncs.topic.replication.factor": "1",
            # Tansu answers a new member's JoinGroup after half the session timeout (22.5 s
            # with librdkafka's default); 6 s is Kafka's smallest (group.min.session.timeout.ms).
            "tansu.consumer.session.timeout.ms": "6000",
        }
    )
    flow = config.flow("tansu", "weir")
    tansu_admin = AdminClient(config.client_config("tansu", "admin"))
    new = NewTopic("orders", num_partitions=PARTITIONS, replication_factor=1)
    tansu_admin.create_topics([new])["orders"].result(30)
    producer = Producer({"bootstrap.servers": tansu_broker.bootstrap, "enable.idempotence": True})
    sent = records()
    for key, value, headers, ts, partition in sent:
        producer.produce(
            "orders", key=key, value=value, headers=headers, timestamp=ts, partition=partition
        )
    assert producer.flush(30) == 0

    weir_admin = AdminClient(config.client_config("weir", "admin"))
    plan = plan_topics(
        flow,
        describe_source(tansu_admin, cluster="tansu"),
        describe_target(weir_admin, cluster="weir"),
    )
    assert plan.remote_names == {"orders": "tansu.orders"}
    apply_plan(weir_admin, plan, cluster="weir", replication_factor=flow.replication_factor)
    assert describe_target(weir_admin, cluster="weir")["tansu.orders"] == PARTITIONS

    replicator = Replicator(
        flow,
        topics=plan.remote_names,
        source_config=config.client_config("tansu", "consumer"),
        target_config=config.client_config("weir", "producer"),
    )
    try:
        while sum(s.records for s in replicator.stats.values()) < COUNT:
            replicator.run_once(0.5)  # pytest-timeout ends a replicator that copies nothing
    finally:
        replicator.close()
    per_partition = COUNT // PARTITIONS
    assert {tp: s.committed_offset for tp, s in replicator.stats.items()} == {
        ("orders", p): per_partition for p in range(PARTITIONS)
    }

    copied = read_all(weir.bootstrap, "tansu.orders", partitions=PARTITIONS, count=COUNT)
    for p in range(PARTITIONS):  # read_all keeps each partition's order
        assert [r for r in copied if r[4] == p] == [r for r in sent if r[4] == p]
    assert len(copied) == COUNT

    # The replicator's group committed its positions on Tansu (a restart resumes there) ...
    probe = Consumer({"bootstrap.servers": tansu_broker.bootstrap, "group.id": group_id(flow)})
    tps = [TopicPartition("orders", p) for p in range(PARTITIONS)]
    committed = probe.committed(tps, timeout=30)
    probe.close()
    assert [tp.offset for tp in committed] == [per_partition] * PARTITIONS

    # ... and wrote the offset syncs there too (the source is their default home), in MM2's
    # format: each partition's first record, and its last one at the commit, among others.
    syncs = {
        OffsetSync.from_record(key, value)
        for key, value, *_ in read_all(
            tansu_broker.bootstrap,
            flow.offset_syncs_topic,
            partitions=1,
            count=2 * PARTITIONS,
        )
    }
    last = per_partition - 1
    assert syncs >= {
        *(OffsetSync("orders", p, 0, 0) for p in range(PARTITIONS)),
        *(OffsetSync("orders", p, last, last) for p in range(PARTITIONS)),
    }

"""The group coordinator fails over with its ``__consumer_offsets`` partition: nothing lost."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from brokers.coordinator import partition_for
from tests.brokers.cluster.conftest import ClusterFactory, raw_request, wait_until
from tests.brokers.groups.test_consumer_groups import ConfluentMember

pytestmark = pytest.mark.integration

GROUP_CLUSTER_CONFIGS = [
    "offsets.topic.num.partitions=3",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
]


def test_committed_offsets_and_the_group_survive_a_coordinator_kill(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(configs=GROUP_CLUSTER_CONFIGS)
    topic = "orders"
    cluster.create_topic(topic, partitions=3)
    group = f"fo-{uuid.uuid4().hex[:6]}"

    def produce(start: int, count: int) -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
        for i in range(start, start + count):
            producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
        assert producer.flush(30) == 0

    def coordinator() -> int:
        broker = cluster.brokers[cluster.running()[0]]
        answer = raw_request(
            broker.port, FindCoordinatorRequest(key_type=0, coordinator_keys=(group,))
        )
        return answer.coordinators[0].node_id if answer.coordinators[0].error_code == 0 else -1

    produce(0, 30)
    member = ConfluentMember(cluster.bootstrap(), topic, group, **{"session.timeout.ms": 6000})
    member.start()
    try:
        wait_until(lambda: len(member.values) >= 30, 40, lambda: f"read {len(member.values)}")
        victim = wait_until(lambda: coordinator() if coordinator() > 0 else None, 20, "coordinator")
        cluster.wait_full_isr("__consumer_offsets", partition_for(group, 3))
        cluster.kill9(victim)
        # The partition's new leader loads the group and its offsets; the member finds it.
        wait_until(lambda: (c := coordinator()) > 0 and c != victim, 30, "a new coordinator")
        produce(30, 20)
        wait_until(lambda: len(member.values) >= 50, 40, lambda: f"read {len(member.values)}")
    finally:
        member.stop()  # commits what it read, synchronously, on the new coordinator
    assert sorted(member.values) == sorted(f"v{i}".encode() for i in range(50))
    admin = cluster.admin()
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[
        group
    ].result(30)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 50
    # A new member of the group resumes after them: nothing is read twice.
    produce(50, 5)
    again = ConfluentMember(cluster.bootstrap(), topic, group)
    again.start()
    try:
        wait_until(lambda: len(again.values) >= 5, 40, lambda: f"read {len(again.values)}")
    finally:
        again.stop()
    assert sorted(again.values) == sorted(f"v{i}".encode() for i in range(50, 55))

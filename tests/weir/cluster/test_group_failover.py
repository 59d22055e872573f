"""The group coordinator fails over with its ``__consumer_offsets`` partition: nothing lost.

A member keeps reading and committing (asynchronously, after every record) from a topic a
producer keeps writing to, while the broker coordinating its group is killed with SIGKILL.
Every commit the old coordinator acknowledged must still be there on the new one, the member
carries on without reading anything it had not read (unless its session expired during the
failover and a rebalance sent it back to its committed offsets, which Kafka allows), and a
later member resumes after it.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

from tests.weir.cluster.conftest import ClusterFactory, raw_request, wait_until
from tests.weir.groups.test_consumer_groups import ConfluentMember
from weir.coordinator import partition_for

pytestmark = pytest.mark.integration

GROUP_CLUSTER_CONFIGS = [
    "offsets.topic.num.partitions=3",
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
]
PARTITIONS = 3


class SteadyProducer(threading.Thread):
    """Writes ``v0``, ``v1``, ... (idempotent, acks=all) until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
        )
        self.topic = topic
        self.count = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.producer.produce(self.topic, value=f"v{self.count}".encode())
            self.count += 1
            self.producer.poll(0)
            time.sleep(0.01)

    def stop(self) -> int:
        self._stop_event.set()
        self.join(10)
        assert self.producer.flush(30) == 0
        return self.count


def test_acknowledged_commits_and_the_group_survive_a_coordinator_kill(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(configs=GROUP_CLUSTER_CONFIGS)
    topic = "orders"
    cluster.create_topic(topic, partitions=PARTITIONS)
    group = f"fo-{uuid.uuid4().hex[:6]}"
    acked: dict[int, int] = {}
    lock = threading.Lock()

    def on_commit(error: Any, partitions: list[Any]) -> None:
        if error is not None:
            return
        with lock:
            for tp in partitions:
                if tp.error is None and tp.offset >= 0:
                    acked[tp.partition] = max(acked.get(tp.partition, -1), tp.offset)

    def coordinator() -> int:
        broker = cluster.brokers[cluster.running()[0]]
        answer = raw_request(
            broker.port, FindCoordinatorRequest(key_type=0, coordinator_keys=(group,))
        )
        return answer.coordinators[0].node_id if answer.coordinators[0].error_code == 0 else -1

    producer = SteadyProducer(cluster.bootstrap(), topic)
    member = ConfluentMember(
        cluster.bootstrap(), topic, group, **{"session.timeout.ms": 6000, "on_commit": on_commit}
    )
    producer.start()
    member.start()
    try:
        wait_until(lambda: len(acked) == PARTITIONS, 40, lambda: f"acked commits {acked}")
        victim = wait_until(lambda: coordinator() if coordinator() > 0 else None, 20, "coordinator")
        cluster.wait_full_isr("__consumer_offsets", partition_for(group, 3))
        cluster.kill9(victim)
        with lock:
            acked_before_kill = dict(acked)
        read_at_kill = len(member.values)
        # The partition's new leader loads the group and its offsets; the member finds it
        # and keeps going while the producer keeps writing.
        wait_until(lambda: (c := coordinator()) > 0 and c != victim, 30, "a new coordinator")
        wait_until(
            lambda: len(member.values) >= read_at_kill + 100,
            40,
            lambda: f"read {len(member.values)} (had {read_at_kill} at the kill)",
        )

        # Commits go on: the new coordinator acknowledges one on every partition. (Reading
        # needs only the partition leaders; until the client has found the new coordinator
        # its commits fail, and a member stopped before then would drop its last commit.)
        def committed_after_the_kill() -> bool:
            with lock:
                return all(acked[p] > acked_before_kill[p] for p in acked_before_kill)

        wait_until(
            committed_after_the_kill,
            40,
            lambda: f"no commit acknowledged since the kill: {acked} vs {acked_before_kill}",
        )
    finally:
        produced = producer.stop()
    try:
        expected = {f"v{i}".encode() for i in range(produced)}
        wait_until(
            lambda: set(member.values) >= expected,
            40,
            lambda: f"missing {len(expected - set(member.values))} of {produced}",
        )
    finally:
        member.stop()  # commits what it read, synchronously, on the new coordinator
    if member.revocations == 0:
        # The member kept its partitions through the failover: it went on from its own
        # positions, so it read nothing twice.
        assert len(member.values) == len(set(member.values)), "the member read records twice"
    # Otherwise its session ran out while the coordinator moved (a loaded machine can take
    # longer than session.timeout.ms to elect the new leader): the rebalance hands its
    # partitions back from the last committed offsets, and re-reading records after those
    # is what Kafka's at-least-once delivery allows. What must hold either way is checked
    # below: every record read, no acknowledged commit lost, a new member resumes after.
    admin = cluster.admin()
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[
        group
    ].result(30)
    committed = {tp.partition: tp.offset for tp in offsets.topic_partitions}
    for partition, offset in acked_before_kill.items():
        assert committed[partition] >= offset, f"an acknowledged commit was lost: {committed}"
    assert sum(committed.values()) == produced
    # A new member of the group resumes after them: nothing is read twice.
    tail = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i in range(produced, produced + 5):
        tail.produce(topic, value=f"v{i}".encode())
    assert tail.flush(30) == 0
    again = ConfluentMember(cluster.bootstrap(), topic, group)
    again.start()
    try:
        wait_until(lambda: len(again.values) >= 5, 40, lambda: f"read {len(again.values)}")
    finally:
        again.stop()
    assert sorted(again.values) == sorted(f"v{i}".encode() for i in range(produced, produced + 5))

"""Consumer groups with real clients: offsets, assignors, static members, failures, bad input.

Every member is a real client (confluent-kafka, kafka-python, aiokafka) against a real broker
process. Ownership is checked from the members' own view (their assignments), never from
the broker's: at every observation no partition belongs to two members, and once the group
settles every partition belongs to exactly one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol

from tests.weir.clients.helpers import kafka
from tests.weir.cluster.conftest import raw_request, wait_until
from tests.weir.groups.conftest import offset_commit
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration

PARTITIONS = 6
# Commit errors that end once the member has rejoined the group (the client rejoins on poll).
_REJOIN_ERRORS = frozenset(
    {
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
    }
)


@pytest.fixture
def bootstrap(group_broker: ThreadedBroker) -> str:
    return group_broker.bootstrap


@pytest.fixture
def group() -> str:
    """A consumer group id no other test uses."""
    return f"group-{uuid.uuid4().hex[:8]}"


def new_topic(bootstrap: str, partitions: int = PARTITIONS, records: int = 0) -> str:
    name = f"grp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    if records:
        produce(bootstrap, name, records)
    return name


def produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, key=str(i).encode(), value=f"v{i}".encode())
    assert producer.flush(20) == 0


class ConfluentMember(threading.Thread):
    """A confluent-kafka group member polling in its own thread; records what it owns."""

    def __init__(self, bootstrap: str, topic: str, group: str, **config: Any) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "enable.auto.commit": False,
                **config,
            }
        )
        self.topic = topic
        self.owned: set[int] = set()
        self.values: list[bytes] = []
        self.revocations = 0
        self.member_id = ""
        self._stop_event = threading.Event()
        self.lock = threading.Lock()

    def _assign(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.owned |= {p.partition for p in partitions}
            self.member_id = consumer.memberid()

    def _revoke(self, consumer: Any, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.revocations += 1
            self.owned -= {p.partition for p in partitions}

    def run(self) -> None:
        self.consumer.subscribe(
            [self.topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._revoke
        )
        # Only this thread touches the consumer until it is closed: the client is not
        # meant to be driven from two threads at once.
        while not self._stop_event.is_set():
            message = self.consumer.poll(0.1)
            if message is not None and message.error() is None:
                self.values.append(message.value())
                self.consumer.commit(message=message, asynchronous=True)
        if self.values:
            self._commit_positions()

    def _commit_positions(self, attempts: int = 40) -> None:
        """Commit the positions read, as a client that must not lose them does: a commit
        refused while the group rebalances or its coordinator moves (a loaded machine can
        outlast the session timeout) is retried after polling lets the client rejoin."""
        for _ in range(attempts):
            try:
                self.consumer.commit(asynchronous=False)
                return
            except KafkaException as exc:
                error = exc.args[0]
                if error.code() == KafkaError._NO_OFFSET:  # all committed already
                    return
                if not (error.retriable() or error.code() in _REJOIN_ERRORS):
                    raise
            message = self.consumer.poll(0.5)  # rejoins; a record read now is kept
            if message is not None and message.error() is None:
                self.values.append(message.value())
        raise AssertionError(f"the member's final commit kept failing ({attempts} attempts)")

    def stop(self, close: bool = True) -> None:
        self._stop_event.set()
        self.join(60)
        assert not self.is_alive(), "the member's thread did not stop (its final commit hangs)"
        if close:
            self.consumer.close()

    def partitions(self) -> set[int]:
        with self.lock:
            return set(self.owned)


def settled(members: list[Any], partitions: int = PARTITIONS) -> bool:
    """Every partition owned by exactly one member (and never by two)."""
    owned = [m.partitions() for m in members]
    flat = [p for ps in owned for p in ps]
    assert len(flat) == len(set(flat)), f"a partition has two owners: {owned}"
    return sorted(flat) == list(range(partitions))


# offsets ----------------------------------------------------------------------------------------
def test_confluent_group_commits_and_resumes_where_it_left_off(bootstrap: str, group: str) -> None:
    topic = new_topic(bootstrap, records=60)
    member = ConfluentMember(bootstrap, topic, group)
    member.start()
    wait_until(lambda: len(member.values) >= 60, 30, lambda: f"read {len(member.values)}")
    member.stop()  # commits synchronously before closing
    produce(bootstrap, topic, 10, start=60)
    again = ConfluentMember(bootstrap, topic, group)
    again.start()
    wait_until(lambda: len(again.values) >= 10, 30, lambda: f"read {len(again.values)}")
    time.sleep(1)  # nothing older may follow
    again.stop()
    assert sorted(again.values) == sorted(f"v{i}".encode() for i in range(60, 70))


def test_kafka_python_group_commits_and_resumes(bootstrap: str, group: str) -> None:
    topic = new_topic(bootstrap, records=40)

    def consume(expected: int) -> list[bytes]:
        consumer = kafka.KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            partition_assignment_strategy=[
                kafka.coordinator.assignors.sticky.sticky_assignor.StickyPartitionAssignor
            ],
        )
        consumer.topics()  # metadata before the first join (see member_process.py)
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < expected and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
        consumer.commit()
        consumer.close()
        return values

    assert sorted(consume(40)) == sorted(f"v{i}".encode() for i in range(40))
    produce(bootstrap, topic, 5, start=40)
    assert sorted(consume(5)) == sorted(f"v{i}".encode() for i in range(40, 45))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    offsets = admin.list_consumer_group_offsets(
        [__import__("confluent_kafka").ConsumerGroupTopicPartitions(group)]
    )[group].result(20)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 45


def test_aiokafka_group_commits_and_resumes(bootstrap: str, group: str) -> None:
    topic = new_topic(bootstrap, records=30)

    async def consume(expected: int) -> list[bytes]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        values: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                while len(values) < expected:
                    batches = await consumer.getmany(timeout_ms=500)
                    values += [r.value for records in batches.values() for r in records]
            await consumer.commit()
        finally:
            await consumer.stop()
        return values

    assert sorted(asyncio.run(consume(30))) == sorted(f"v{i}".encode() for i in range(30))
    produce(bootstrap, topic, 7, start=30)
    assert sorted(asyncio.run(consume(7))) == sorted(f"v{i}".encode() for i in range(30, 37))


def test_offsets_past_their_retention_expire_and_take_the_empty_group_along(
    group_broker: ThreadedBroker,
) -> None:
    """OffsetCommit v2-v4 carry retention_time: such offsets expire on the broker's own
    schedule (offsets.retention.check.interval.ms), and an Empty group left without offsets
    is deleted. Offsets committed with the default retention stay."""
    from kio.schema.list_groups.v4.request import ListGroupsRequest
    from kio.schema.offset_commit.v2 import request as v2
    from kio.schema.offset_fetch.v8.request import (
        OffsetFetchRequest,
        OffsetFetchRequestGroup,
        OffsetFetchRequestTopics,
    )

    bootstrap = group_broker.bootstrap
    topic = new_topic(bootstrap, partitions=1)
    short, kept = f"expiring-{uuid.uuid4().hex[:6]}", f"kept-{uuid.uuid4().hex[:6]}"

    def commit(group: str, retention_ms: int) -> None:
        answer = raw_request(
            find_coordinator_port(group_broker, group),
            v2.OffsetCommitRequest(
                group_id=group,
                generation_id_or_member_epoch=-1,
                member_id="",
                retention_time=_ms(retention_ms),
                topics=(
                    v2.OffsetCommitRequestTopic(
                        name=topic,
                        partitions=(
                            v2.OffsetCommitRequestPartition(
                                partition_index=0, committed_offset=7, committed_metadata=None
                            ),
                        ),
                    ),
                ),
            ),
        )
        assert answer.topics[0].partitions[0].error_code == ErrorCode.none

    def committed(group: str) -> int:
        answer = raw_request(
            find_coordinator_port(group_broker, group),
            OffsetFetchRequest(
                groups=(
                    OffsetFetchRequestGroup(
                        group_id=group,
                        topics=(OffsetFetchRequestTopics(name=topic, partition_indexes=(0,)),),
                    ),
                ),
                require_stable=False,
            ),
        )
        (fetched,) = answer.groups
        assert fetched.error_code == ErrorCode.none
        return fetched.topics[0].partitions[0].committed_offset

    def listed() -> set[str]:
        answer = raw_request(group_broker.port, ListGroupsRequest(states_filter=()))
        return {g.group_id for g in answer.groups}

    commit(short, retention_ms=1500)
    commit(kept, retention_ms=-1)
    assert committed(short) == 7
    assert {short, kept} <= listed()
    wait_until(lambda: committed(short) == -1, 15, "the short-retention offset never expired")
    wait_until(lambda: short not in listed(), 5, lambda: f"{short} still listed: {listed()}")
    assert committed(kept) == 7
    assert kept in listed()


# assignors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_assignors_share_partitions_without_overlap(
    bootstrap: str, group: str, strategy: str
) -> None:
    topic = new_topic(bootstrap)
    config = {"partition.assignment.strategy": strategy}
    members = [ConfluentMember(bootstrap, topic, group, **config) for _ in range(3)]
    try:
        for member in members:
            member.start()
            time.sleep(0.5)  # joins arrive one after another: several rebalances
        # Settled with each of the 3 members owning some of the 6 partitions.
        wait_until(
            lambda: settled(members) and all(m.partitions() for m in members),
            40,
            lambda: str([m.partitions() for m in members]),
        )
        # A clean leave hands the partitions over without waiting for a session timeout.
        members[0].stop()
        rest = members[1:]
        wait_until(lambda: settled(rest), 5, lambda: str([m.partitions() for m in rest]))
    finally:
        for member in members[1:]:
            member.stop()


def test_kafka_python_and_aiokafka_members_share_one_group(bootstrap: str, group: str) -> None:
    """Two client libraries in one group agree on the roundrobin protocol."""
    topic = new_topic(bootstrap)
    rr = kafka.coordinator.assignors.roundrobin.RoundRobinPartitionAssignor
    kp = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[rr],
        heartbeat_interval_ms=500,
    )
    kp.topics()  # metadata before the first join (see member_process.py)
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            kp.poll(timeout_ms=200)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()

    async def aio_member() -> set[int]:
        from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            partition_assignment_strategy=(RoundRobinPartitionAssignor,),
            heartbeat_interval_ms=500,
        )
        await consumer.start()
        try:
            async with asyncio.timeout(40):
                while True:
                    await consumer.getmany(timeout_ms=200)
                    mine = {tp.partition for tp in consumer.assignment()}
                    theirs = {tp.partition for tp in kp.assignment()}
                    if mine and theirs and not mine & theirs and len(mine | theirs) == PARTITIONS:
                        return mine
        finally:
            await consumer.stop()

    try:
        mine = asyncio.run(aio_member())
        assert len(mine) == PARTITIONS // 2
    finally:
        stop.set()
        thread.join(10)
        kp.close()


# static membership ------------------------------------------------------------------------------
def test_restarted_static_member_gets_its_partitions_back_without_a_rebalance(
    bootstrap: str, group: str
) -> None:
    topic = new_topic(bootstrap)
    a = ConfluentMember(bootstrap, topic, group, **{"group.instance.id": "a"})
    b = ConfluentMember(bootstrap, topic, group, **{"group.instance.id": "b"})
    a.start()
    b.start()
    wait_until(
        lambda: settled([a, b]) and a.partitions() and b.partitions(),
        40,
        lambda: f"{a.partitions()} {b.partitions()}",
    )
    before_a, before_b, revocations = a.partitions(), b.partitions(), b.revocations
    a.stop()  # a static member's close sends no LeaveGroup
    restarted = ConfluentMember(bootstrap, topic, group, **{"group.instance.id": "a"})
    restarted.start()
    try:
        wait_until(lambda: restarted.partitions(), 20, "the restarted static member's assignment")
        assert restarted.partitions() == before_a
        time.sleep(2)
        assert b.partitions() == before_b
        assert b.revocations == revocations, "the other member went through a rebalance"
    finally:
        restarted.stop()
        b.stop()


# failures ----------------------------------------------------------------------------------------
MEMBER_SCRIPT = """
import json, sys
from confluent_kafka import Consumer
consumer = Consumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[3],
                     "session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
                     "auto.offset.reset": "earliest"})
def assigned(c, parts):
    print(json.dumps(sorted(p.partition for p in parts)), flush=True)
consumer.subscribe([sys.argv[2]], on_assign=assigned)
while True:
    consumer.poll(0.2)
"""


def test_a_member_killed_with_sigkill_loses_its_partitions_after_its_session(
    bootstrap: str, group: str
) -> None:
    topic = new_topic(bootstrap)
    child = subprocess.Popen(
        [sys.executable, "-c", MEMBER_SCRIPT, bootstrap, topic, group],
        stdout=subprocess.PIPE,
        text=True,
    )
    survivor = ConfluentMember(bootstrap, topic, group)
    try:
        assert child.stdout is not None
        json.loads(child.stdout.readline())  # the child is in the group
        survivor.start()
        wait_until(
            lambda: survivor.partitions() and len(survivor.partitions()) < PARTITIONS,
            30,
            lambda: f"survivor owns {survivor.partitions()}",
        )
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        # The dead member never leaves: its 3 s session expires, then the survivor owns all.
        wait_until(lambda: settled([survivor]), 30, lambda: f"{survivor.partitions()}")
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(10)
        if child.stdout is not None:
            child.stdout.close()
        survivor.stop()


# bad input ---------------------------------------------------------------------------------------
def test_wrong_member_or_generation_is_refused(
    group_broker: ThreadedBroker, bootstrap: str, group: str
) -> None:
    topic = new_topic(bootstrap)
    member = ConfluentMember(bootstrap, topic, group)
    member.start()
    try:
        wait_until(lambda: settled([member]), 30, "the member owns everything")
        coordinator = find_coordinator_port(group_broker, group)
        answer = raw_request(
            coordinator,
            HeartbeatRequest(
                group_id=group, generation_id=1, member_id="nobody", group_instance_id=None
            ),
        )
        assert answer.error_code == ErrorCode.unknown_member_id
        member_id = member.member_id
        answer = raw_request(
            coordinator,
            HeartbeatRequest(
                group_id=group, generation_id=999, member_id=member_id, group_instance_id=None
            ),
        )
        assert answer.error_code == ErrorCode.illegal_generation
        commit = raw_request(
            coordinator, offset_commit(group, topic, 5, generation=999, member_id=member_id)
        )
        assert commit.topics[0].partitions[0].error_code == ErrorCode.illegal_generation
        # JoinGroup v4+ without a member id: KIP-394 hands out an id to rejoin with.
        join = raw_request(
            coordinator,
            JoinGroupRequest(
                group_id=group,
                session_timeout=_ms(6000),
                rebalance_timeout=_ms(6000),
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
                reason=None,
            ),
        )
        assert join.error_code == ErrorCode.member_id_required
        assert join.member_id
        # An empty group id is no group at all.
        assert (
            raw_request(
                coordinator,
                HeartbeatRequest(
                    group_id="", generation_id=1, member_id="x", group_instance_id=None
                ),
            ).error_code
            == ErrorCode.invalid_group_id
        )
    finally:
        member.stop()


def _ms(value: int) -> Any:
    from datetime import timedelta

    return timedelta(milliseconds=value)


def find_coordinator_port(broker: ThreadedBroker, group: str) -> int:
    from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest

    answer = raw_request(broker.port, FindCoordinatorRequest(key_type=0, coordinator_keys=(group,)))
    (coordinator,) = answer.coordinators
    assert coordinator.error_code == ErrorCode.none
    return coordinator.port


def test_clients_cannot_write_to_the_offsets_topic(group_broker: ThreadedBroker) -> None:
    from tests.weir.cluster.helpers import raw_produce

    find_coordinator_port(group_broker, "any-group")  # creates __consumer_offsets
    answer = raw_request(group_broker.port, raw_produce("__consumer_offsets", b"x", acks=1))
    partition = answer.responses[0].partition_responses[0]
    assert partition.error_code == ErrorCode.invalid_topic_exception
    assert "internal topic" in (partition.error_message or "")

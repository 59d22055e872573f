"""Coordinator writes are acks=all writes: below ``min.insync.replicas`` they are refused.

A broker whose ``__consumer_offsets`` partitions have fewer in-sync replicas than
``min.insync.replicas`` (here: one broker, minimum two) must refuse offset commits and group
metadata writes with the retriable COORDINATOR_NOT_AVAILABLE, as Kafka does, and must not
append them to the log first: a refused commit may never reappear after a failover.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from confluent_kafka import Consumer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sync_group.v5.request import SyncGroupRequest, SyncGroupRequestAssignment

from tests.weir.cluster.conftest import raw_request
from tests.weir.groups.conftest import GROUP_CONFIGS, offset_commit
from tests.weir.groups.test_consumer_groups import find_coordinator_port, new_topic
from tests.weir.inprocess import ThreadedBroker, threaded_broker
from weir.coordinator import partition_for

pytestmark = pytest.mark.integration

OFFSETS_PARTITIONS = 3


@pytest.fixture(scope="module")
def under_replicated_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    configs = [
        *GROUP_CONFIGS,
        "min.insync.replicas=2",
        f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}",
    ]
    directory = tmp_path_factory.mktemp("min-isr-broker")
    with threaded_broker(
        data_dir=directory / "broker-1", redis_url=redis_server, configs=configs
    ) as broker:
        yield broker


def offsets_log_end(broker: ThreadedBroker, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "watermarks"})
    try:
        index = partition_for(group, OFFSETS_PARTITIONS)
        _, high = consumer.get_watermark_offsets(
            TopicPartition("__consumer_offsets", index), timeout=10
        )
        return high
    finally:
        consumer.close()


def test_commits_and_group_writes_are_refused_before_they_reach_the_log(
    under_replicated_broker: ThreadedBroker,
) -> None:
    broker = under_replicated_broker
    topic = new_topic(broker.bootstrap, partitions=1)
    group = f"min-isr-{uuid.uuid4().hex[:6]}"
    port = find_coordinator_port(broker, group)

    commit = raw_request(port, offset_commit(group, topic, 3))
    assert commit.topics[0].partitions[0].error_code == ErrorCode.coordinator_not_available

    def join(member_id: str) -> object:
        return raw_request(
            port,
            JoinGroupRequest(
                group_id=group,
                session_timeout=timedelta(milliseconds=6000),
                rebalance_timeout=timedelta(milliseconds=6000),
                member_id=member_id,
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
                reason=None,
            ),
        )

    first = join("")
    assert first.error_code == ErrorCode.member_id_required
    joined = join(first.member_id)
    assert joined.error_code == ErrorCode.none
    # The leader's assignment is group metadata: it cannot be stored, so the sync fails.
    sync = raw_request(
        port,
        SyncGroupRequest(
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name=joined.protocol_name,
            assignments=(SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),),
        ),
    )
    assert sync.error_code == ErrorCode.coordinator_not_available
    assert offsets_log_end(broker, group) == 0, "a refused write reached __consumer_offsets"

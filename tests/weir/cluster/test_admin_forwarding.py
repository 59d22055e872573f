"""Topic admin sent to a broker that is not the controller is forwarded (KIP-590)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.errors import ErrorCode

from tests.weir.cluster.conftest import Cluster, raw_request, wait_until
from tests.weir.cluster.helpers import others

pytestmark = pytest.mark.integration


TOPIC = "forwarded"
DEADLINE = timedelta(seconds=10)  # the request's own timeout, for the controller

CREATE = CreateTopicsRequest(
    topics=(
        CreatableTopic(
            name=TOPIC, num_partitions=2, replication_factor=3, assignments=(), configs=()
        ),
    ),
    timeout=DEADLINE,
    validate_only=False,
)
GROW_TO_THREE = CreatePartitionsRequest(
    topics=(CreatePartitionsTopic(name=TOPIC, count=3, assignments=None),),
    timeout=DEADLINE,
    validate_only=False,
)
DELETE = DeleteTopicsRequest(
    topics=(DeleteTopicState(name=TOPIC, topic_id=None),), timeout=DEADLINE
)


def test_create_alter_and_delete_through_a_broker_that_is_not_the_controller(
    cluster: Cluster,
) -> None:
    follower = cluster[others(cluster.controller())[0]].port
    created = raw_request(follower, CREATE, timeout=20)
    assert created.topics[0].error_code == ErrorCode.none, created
    wait_until(lambda: cluster.agreed_partition(TOPIC, 1), 20, cluster.describe)
    grown = raw_request(follower, GROW_TO_THREE, timeout=20)
    assert grown.results[0].error_code == ErrorCode.none, grown
    wait_until(lambda: cluster.agreed_partition(TOPIC, 2), 20, cluster.describe)
    deleted = raw_request(follower, DELETE, timeout=20)
    assert deleted.responses[0].error_code == ErrorCode.none, deleted

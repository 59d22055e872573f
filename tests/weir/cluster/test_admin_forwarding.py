"""Admin requests sent to a broker that is not the controller are forwarded (KIP-590): topic
admin, and AlterClientQuotas, whose quota every broker then enforces.

One cluster for the module (``shared_cluster``): the tests isolate by topic and client id.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest

from brokers.quota_requests import quota_alter_request, quota_describe_request
from tests.weir.cluster.conftest import BROKER_IDS, Cluster, raw_request, wait_until
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
    shared_cluster: Cluster,
) -> None:
    cluster = shared_cluster
    follower = cluster[others(cluster.controller())[0]].port
    created = raw_request(follower, CREATE, timeout=20)
    assert created.topics[0].error_code == ErrorCode.none, created
    wait_until(lambda: cluster.agreed_partition(TOPIC, 1), 20, cluster.describe)
    grown = raw_request(follower, GROW_TO_THREE, timeout=20)
    assert grown.results[0].error_code == ErrorCode.none, grown
    wait_until(lambda: cluster.agreed_partition(TOPIC, 2), 20, cluster.describe)
    deleted = raw_request(follower, DELETE, timeout=20)
    assert deleted.responses[0].error_code == ErrorCode.none, deleted


# Any request is over a request quota this small: a client's first request is throttled.
TINY_REQUEST_PERCENTAGE = 0.0001
METADATA = MetadataRequest(
    topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


def _throttle_ms(port: int, client_id: str) -> float:
    """The throttle time a Metadata request of ``client_id`` is answered with."""
    response = raw_request(port, METADATA, client_id=client_id)
    return response.throttle_time.total_seconds() * 1000


def test_client_quota_altered_through_a_follower_is_enforced_by_every_broker(
    shared_cluster: Cluster,
) -> None:
    cluster = shared_cluster
    client_id = f"quota-{uuid.uuid4().hex[:8]}"
    entity = [("clients", client_id)]
    ports = {broker_id: cluster[broker_id].port for broker_id in BROKER_IDS}
    assert all(_throttle_ms(port, client_id) == 0 for port in ports.values())
    follower = ports[others(cluster.controller())[0]]
    altered = raw_request(
        follower,
        quota_alter_request(entity, set={"request_percentage": TINY_REQUEST_PERCENTAGE}),
        timeout=20,
    )
    assert altered.entries[0].error_code == ErrorCode.none, altered
    # The broker that forwarded it answers only once its own image has the quota.
    (entry,) = raw_request(follower, quota_describe_request(entity)).entries
    assert {v.key: v.value for v in entry.values} == {"request_percentage": TINY_REQUEST_PERCENTAGE}
    for broker_id, port in ports.items():
        wait_until(
            lambda port=port: _throttle_ms(port, client_id) > 0,
            10,
            f"broker {broker_id} throttling {client_id}\n{cluster.describe()}",
        )

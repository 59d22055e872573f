"""Writes for topics: create, delete, add partitions, alter configs.

Each is one Kafka admin request (kio entity) sent through the cluster gateway to any broker,
which forwards topic changes to the controller (KIP-590). The requests are built by the
``*_request`` functions, which ``manage.py topics`` shares: the command sends the very same
requests to its ``--bootstrap-server``, as ``kafka-topics.sh`` does. The broker's own error message
(``Topic 'x' already exists.``, ``Replication factor: 5 larger than available brokers: 3.``)
becomes the API error's message, with the HTTP status Confluent's proxy uses for that Kafka
error (409 exists, 404 unknown, 400 invalid).
"""

from __future__ import annotations

import datetime
import uuid
from dataclasses import dataclass

from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_topics.v7.request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.static.primitive import i16, i32, i32Timedelta

from brokers.rest.configs import ConfigOp, configs_alter
from controlplane.cluster import gateway
from controlplane.errors import BadRequest
from controlplane.rest_v3 import raise_for_kafka_error
from topics import selectors
from weir.topic_names import InvalidTopicName, validate_topic_name

__all__ = [
    "NewTopic",
    "topic_configs_alter",
    "topic_create",
    "topic_create_request",
    "topic_delete",
    "topic_delete_request",
    "topic_partitions_increase",
    "topic_partitions_request",
]

TIMEOUT = datetime.timedelta(seconds=30)


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create; what is None (or no assignment) is the cluster's default."""

    name: str
    partitions_count: int | None = None
    replication_factor: int | None = None
    replicas_assignments: dict[int, list[int]] | None = None
    configs: dict[str, str | None] | None = None


def topic_create(*, topic: NewTopic, validate_only: bool = False) -> None:
    """Create a topic (cluster defaults for what is not given)."""
    name = topic.name
    try:
        validate_topic_name(name)
    except InvalidTopicName as exc:
        raise BadRequest(f"topic_name: {exc}") from None
    partitions_count, replication_factor = topic.partitions_count, topic.replication_factor
    if partitions_count is not None and partitions_count < 1:
        raise BadRequest(f"partitions_count must be at least 1, got {partitions_count}")
    if replication_factor is not None and replication_factor < 1:
        raise BadRequest(f"replication_factor must be at least 1, got {replication_factor}")
    if topic.replicas_assignments and (
        partitions_count is not None or replication_factor is not None
    ):
        raise BadRequest(
            "give either replicas_assignments or partitions_count/replication_factor, not both"
        )
    request = topic_create_request(topic=topic, validate_only=validate_only)
    (result,) = gateway().request_any(request, timeout=TIMEOUT.total_seconds()).topics
    raise_for_kafka_error(result.error_code, result.error_message, what=f"topic {name!r}")


def topic_create_request(
    *, topic: NewTopic, validate_only: bool = False, timeout: datetime.timedelta = TIMEOUT
) -> CreateTopicsRequest:
    """CreateTopics for one topic (-1: the cluster's default)."""
    assignments = tuple(
        CreatableReplicaAssignment(
            partition_index=i32(p), broker_ids=tuple(i32(b) for b in brokers)
        )
        for p, brokers in sorted((topic.replicas_assignments or {}).items())
    )
    partitions, replication = topic.partitions_count, topic.replication_factor
    creatable = CreatableTopic(
        name=topic.name,
        num_partitions=i32(-1 if assignments or partitions is None else partitions),
        replication_factor=i16(-1 if assignments or replication is None else replication),
        assignments=assignments,
        configs=tuple(
            CreatableTopicConfig(name=k, value=v) for k, v in (topic.configs or {}).items()
        ),
    )
    return CreateTopicsRequest(
        topics=(creatable,), timeout=i32Timedelta.parse(timeout), validate_only=validate_only
    )


def topic_delete(*, name: str) -> None:
    """Delete a topic (404 when it does not exist)."""
    selectors.topic_get(name=name)
    request = topic_delete_request(name=name)
    (result,) = gateway().request_any(request, timeout=TIMEOUT.total_seconds()).responses
    raise_for_kafka_error(result.error_code, result.error_message, what=f"topic {name!r}")


def topic_partitions_increase(*, name: str, partitions_count: int) -> None:
    """Grow a topic to ``partitions_count`` partitions; Kafka cannot shrink one."""
    topic = selectors.topic_get(name=name)
    current = len(topic.partitions)
    if partitions_count < current:
        raise BadRequest(
            f"partitions_count {partitions_count} is below the current {current} of topic "
            f"{name!r}: Kafka can only increase the number of partitions"
        )
    if partitions_count == current:
        raise BadRequest(f"topic {name!r} already has {current} partitions")
    request = topic_partitions_request(name=name, partitions_count=partitions_count)
    (result,) = gateway().request_any(request, timeout=TIMEOUT.total_seconds()).results
    raise_for_kafka_error(result.error_code, result.error_message, what=f"topic {name!r}")


def topic_delete_request(
    *, name: str, timeout: datetime.timedelta = TIMEOUT
) -> DeleteTopicsRequest:
    """DeleteTopics for one topic, by name."""
    return DeleteTopicsRequest(
        topics=(DeleteTopicState(name=name, topic_id=uuid.UUID(int=0)),),
        timeout=i32Timedelta.parse(timeout),
    )


def topic_partitions_request(
    *, name: str, partitions_count: int, timeout: datetime.timedelta = TIMEOUT
) -> CreatePartitionsRequest:
    """CreatePartitions: grow ``name`` to ``partitions_count`` (the controller places them)."""
    return CreatePartitionsRequest(
        topics=(CreatePartitionsTopic(name=name, count=i32(partitions_count), assignments=None),),
        timeout=i32Timedelta.parse(timeout),
        validate_only=False,
    )


def topic_configs_alter(
    *, name: str, operations: list[ConfigOp], validate_only: bool = False
) -> None:
    """SET / DELETE topic configs (DELETE = back to the broker's default)."""
    selectors.topic_get(name=name)
    configs_alter(kind="topic", name=name, operations=operations, validate_only=validate_only)

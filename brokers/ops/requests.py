"""The Kafka requests of the operations, built in one place for every interface.

The operations API (``brokers.ops.services``, sent through the cluster gateway) and the
Kafka-tool commands (``reassign-partitions``, ``leader-election``, sent to their own
``--bootstrap-server``) ask the controller the same things; this module builds those
requests and reads their per-partition outcomes, and each interface words the result its own
way (JSON for the API, ``kafka-*.sh`` lines for the commands).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from kio.schema.alter_partition_reassignments.v0.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kio.schema.elect_leaders.v2.request import ElectLeadersRequest, TopicPartitions
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32, i32Timedelta

__all__ = [
    "ELECTION_TYPES",
    "PartitionKey",
    "alter_reassignments_request",
    "elect_leaders_request",
    "error_name",
    "reassignment_outcomes",
]

PartitionKey = tuple[str, int]
# Kafka's ElectLeaders election types.
ELECTION_TYPES = {"preferred": 0, "unclean": 1}


def error_name(code: int) -> str:
    """Kafka's name for an error code (``ELECTION_NOT_NEEDED``)."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return f"UNKNOWN_ERROR_{code}"


def alter_reassignments_request(
    targets: Sequence[tuple[str, int, Sequence[int] | None]], *, timeout: datetime.timedelta
) -> AlterPartitionReassignmentsRequest:
    """Move each partition to its replica list (None: cancel its move), grouped by topic."""
    by_topic: dict[str, list[ReassignablePartition]] = {}
    for topic, partition, replicas in targets:
        by_topic.setdefault(topic, []).append(
            ReassignablePartition(
                partition_index=i32(partition),
                replicas=None if replicas is None else tuple(i32(r) for r in replicas),
            )
        )
    return AlterPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(timeout),
        topics=tuple(ReassignableTopic(name=t, partitions=tuple(p)) for t, p in by_topic.items()),
    )


def reassignment_outcomes(response: Any) -> dict[PartitionKey, tuple[str, str | None]]:
    """(error name, message) per partition of an AlterPartitionReassignments response."""
    return {
        (t.name, p.partition_index): (error_name(p.error_code), p.error_message)
        for t in response.responses
        for p in t.partitions
    }


def elect_leaders_request(
    partitions: Sequence[PartitionKey] | None,
    *,
    election_type: int = ELECTION_TYPES["preferred"],
    timeout: datetime.timedelta,
) -> ElectLeadersRequest:
    """ElectLeaders for ``partitions`` (None: every partition), grouped by topic."""
    by_topic: dict[str, list[i32]] = {}
    for topic, partition in partitions or []:
        by_topic.setdefault(topic, []).append(i32(partition))
    return ElectLeadersRequest(
        election_type=election_type,
        topic_partitions=None
        if partitions is None
        else tuple(TopicPartitions(topic=t, partitions=tuple(p)) for t, p in by_topic.items()),
        timeout=i32Timedelta.parse(timeout),
    )

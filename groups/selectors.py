"""Reads on consumer groups for the REST proxy: listings, members, committed offsets, lag.

Group facts come from the brokers through confluent-kafka's AdminClient (ListGroups,
DescribeGroups, OffsetFetch); the log end offset of a partition is its high watermark as the
leader publishes it to Redis every second (what a consumer can read), falling back to
ListOffsets when no fresh state is published.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import OffsetSpec

from controlplane.cluster import gateway
from controlplane.errors import Conflict, KafkaUnavailable, NotFound, Unprocessable
from groups.models import WebhookConfig

__all__ = [
    "GroupDetail",
    "GroupMember",
    "PartitionLag",
    "admin_result",
    "consumer_group_details",
    "consumer_group_get",
    "consumer_group_lags",
    "consumer_group_list",
    "consumer_group_members",
    "group_committed_offsets",
    "group_description",
    "kafka_state",
    "partition_offsets",
    "webhook_list",
]

TIMEOUT_S = 15.0

_STATES = {
    ConsumerGroupState.UNKNOWN: "UNKNOWN",
    ConsumerGroupState.PREPARING_REBALANCING: "PREPARING_REBALANCE",
    ConsumerGroupState.COMPLETING_REBALANCING: "COMPLETING_REBALANCE",
    ConsumerGroupState.STABLE: "STABLE",
    ConsumerGroupState.DEAD: "DEAD",
    ConsumerGroupState.EMPTY: "EMPTY",
}


@dataclass(frozen=True, slots=True)
class GroupMember:
    consumer_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignments: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class GroupDetail:
    group_id: str
    is_simple: bool
    partition_assignor: str
    state: str
    coordinator_id: int | None
    members: tuple[GroupMember, ...]


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One partition's lag as a v3 ``KafkaConsumerLag`` has it, under the same names."""

    topic_name: str
    partition_id: int
    current_offset: int
    log_end_offset: int
    lag: int
    consumer_id: str
    instance_id: str | None
    client_id: str


def admin_result(future: Any, *, group: str | None = None, timeout_s: float = TIMEOUT_S) -> Any:
    """Wait for an AdminClient future; Kafka errors become API errors with the right status."""
    try:
        return future.result(timeout_s)
    except KafkaException as exc:
        error = exc.args[0]
        name = error.name()
        if name == "GROUP_ID_NOT_FOUND" and group is not None:
            raise NotFound(f"consumer group {group!r} does not exist") from None
        if name in ("UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_PARTITION", "_UNKNOWN_TOPIC"):
            raise Unprocessable(f"{name}: {error.str()}") from None
        if name in ("UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "NON_EMPTY_GROUP"):
            raise Conflict(f"{name}: {error.str()}") from None
        raise KafkaUnavailable(f"{name}: {error.str()}") from None
    except TimeoutError:
        raise KafkaUnavailable("the cluster did not answer in time") from None


# reads over any AdminClient (the web app's, or a CLI's own ``--bootstrap-server`` one) ----------

# confluent-kafka's state names → Kafka's (what kafka-consumer-groups prints, what the
# offset-reset rules compare).
_KAFKA_STATES = {
    "STABLE": "Stable",
    "EMPTY": "Empty",
    "DEAD": "Dead",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
}


def kafka_state(description: Any) -> str:
    """A group description's state as Kafka names it (``Stable``, ``PreparingRebalance``)."""
    name = getattr(description.state, "name", str(description.state))
    return _KAFKA_STATES.get(name, name.title())


def group_description(*, admin: Any, group: str, timeout_s: float = TIMEOUT_S) -> Any:
    """confluent-kafka's description of ``group`` (DescribeGroups)."""
    futures = admin.describe_consumer_groups([group], request_timeout=timeout_s)
    return admin_result(futures[group], group=group, timeout_s=timeout_s)


def group_committed_offsets(
    *, admin: Any, group: str, timeout_s: float = TIMEOUT_S
) -> dict[tuple[str, int], int]:
    """The group's committed offset of every partition it has one for (OffsetFetch)."""
    request = [ConsumerGroupTopicPartitions(group)]
    futures = admin.list_consumer_group_offsets(request, request_timeout=timeout_s)
    result = admin_result(futures[group], group=group, timeout_s=timeout_s)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def partition_offsets(
    *,
    admin: Any,
    partitions: list[tuple[str, int]],
    spec: Any,
    timeout_s: float = TIMEOUT_S,
) -> dict[tuple[str, int], int]:
    """ListOffsets of ``partitions`` for one ``OffsetSpec`` (earliest, latest, a time)."""
    if not partitions:
        return {}
    futures = admin.list_offsets(
        {KafkaTopicPartition(t, p): spec for t, p in partitions}, request_timeout=timeout_s
    )
    return {
        (tp.topic, tp.partition): admin_result(f, timeout_s=timeout_s).offset
        for tp, f in futures.items()
    }


def consumer_group_list() -> list[tuple[str, bool, str]]:
    """(group id, is simple, state) of every consumer group, sorted by id."""
    listing = admin_result(gateway().admin().list_consumer_groups())
    groups = [
        (g.group_id, bool(g.is_simple_consumer_group), _STATES.get(g.state, "UNKNOWN"))
        for g in listing.valid  # type: ignore[attr-defined]
    ]
    return sorted(groups)


def consumer_group_details(*, group_ids: list[str]) -> list[GroupDetail]:
    """Descriptions of ``group_ids`` in one DescribeGroups round; groups gone (DEAD) omitted."""
    if not group_ids:
        return []
    futures = gateway().admin().describe_consumer_groups(group_ids)
    details = []
    for group_id in group_ids:
        detail = _detail(group_id, admin_result(futures[group_id], group=group_id))
        if detail.state != "DEAD":
            details.append(detail)
    return details


def consumer_group_get(*, group_id: str) -> GroupDetail:
    """One group's description; NotFound when the cluster does not know it."""
    found = consumer_group_details(group_ids=[group_id])
    if not found:
        raise NotFound(f"consumer group {group_id!r} not found")
    return found[0]


def consumer_group_members(*, group_id: str) -> dict[str, Any]:
    """The group's members and their assignments as JSON (one DescribeGroups request).

    A group only known by its committed offsets (Empty, or Dead once they expire) has no
    members; that is an answer, not an error, so the dashboard can show an empty table.
    """
    found = consumer_group_details(group_ids=[group_id])
    detail = found[0] if found else None
    return {
        "type": "members",
        "group": group_id,
        "state": detail.state if detail else "DEAD",
        "assignor": detail.partition_assignor if detail else "",
        "coordinator": detail.coordinator_id if detail else None,
        "members": [
            {
                "consumer_id": m.consumer_id,
                "instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.host,
                "assignments": [{"topic": t, "partition": p} for t, p in m.assignments],
            }
            for m in (detail.members if detail else ())
        ],
    }


def webhook_list(*, group: str | None = None) -> list[WebhookConfig]:
    """Alert webhooks; with ``group``, those that fire for it (its own and all-groups ones)."""
    webhooks = WebhookConfig.objects.all()
    if group is not None:
        webhooks = webhooks.filter(group__in=[group, ""])
    return list(webhooks.order_by("id"))


def _detail(group_id: str, description: Any) -> GroupDetail:
    members = tuple(
        GroupMember(
            consumer_id=m.member_id,
            instance_id=m.group_instance_id or None,
            client_id=m.client_id,
            host=m.host,
            assignments=tuple(
                sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
            ),
        )
        for m in description.members
    )
    coordinator = description.coordinator
    return GroupDetail(
        group_id=group_id,
        is_simple=bool(description.is_simple_consumer_group),
        partition_assignor=description.partition_assignor or "",
        state=_STATES.get(description.state, "UNKNOWN"),
        coordinator_id=coordinator.id if coordinator is not None else None,
        members=members,
    )


def _last_stable_offsets(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Each partition's end as Confluent's lag manager reads it: ListOffsets latest with
    READ_COMMITTED isolation, the last stable offset (the high watermark unless a transaction
    is open; records of an open transaction are not yet there to be consumed)."""
    if not partitions:
        return {}
    request = {KafkaTopicPartition(t, p): OffsetSpec.latest() for t, p in partitions}
    futures = gateway().admin().list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED)
    found = {}
    for tp, future in futures.items():
        info = admin_result(future)
        found[(tp.topic, tp.partition)] = info.offset  # type: ignore[attr-defined]
    return found


def consumer_group_lags(*, group_id: str) -> list[PartitionLag]:
    """Lag of every partition the group has committed: last stable offset - committed offset
    (Confluent's v3 lags; its ``log_end_offset`` is the READ_COMMITTED end)."""
    detail = consumer_group_get(group_id=group_id)
    owners = {tp: m for m in detail.members for tp in m.assignments}
    request = [ConsumerGroupTopicPartitions(group_id)]
    futures = gateway().admin().list_consumer_group_offsets(request)
    committed = admin_result(futures[group_id], group=group_id)
    offsets = {
        (tp.topic, tp.partition): tp.offset
        for tp in committed.topic_partitions  # type: ignore[attr-defined]
        if tp.offset >= 0
    }
    ends = _last_stable_offsets(sorted(offsets))
    lags = []
    for (topic, partition), offset in sorted(offsets.items()):
        end = ends.get((topic, partition), offset)
        owner = owners.get((topic, partition))
        lags.append(
            PartitionLag(
                topic_name=topic,
                partition_id=partition,
                current_offset=offset,
                log_end_offset=end,
                lag=max(0, end - offset),
                consumer_id=owner.consumer_id if owner else "",
                instance_id=owner.instance_id if owner else None,
                client_id=owner.client_id if owner else "",
            )
        )
    return lags

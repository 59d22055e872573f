"""Reads on consumer groups for the REST proxy: listings, members, committed offsets, lag.

Group facts come from the brokers through confluent-kafka's AdminClient (ListGroups,
DescribeGroups, OffsetFetch); the log end offset of a partition is its high watermark as the
leader publishes it to Redis every second (what a consumer can read), falling back to
ListOffsets when no fresh state is published.
"""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import OffsetSpec

from controlplane.cluster import gateway
from controlplane.errors import KafkaUnavailable, NotFound

__all__ = [
    "GroupDetail",
    "GroupMember",
    "PartitionLag",
    "consumer_group_get",
    "consumer_group_lags",
    "consumer_group_list",
]

TIMEOUT_S = 10.0

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
    topic: str
    partition: int
    current_offset: int
    log_end_offset: int
    lag: int
    consumer_id: str
    instance_id: str | None
    client_id: str


def _result(future: object, what: str) -> object:
    try:
        return future.result(TIMEOUT_S)  # type: ignore[attr-defined]
    except KafkaException as exc:
        raise KafkaUnavailable(f"{what}: {exc.args[0].str()}") from None
    except TimeoutError:
        raise KafkaUnavailable(f"{what}: no answer within {TIMEOUT_S:.0f} s") from None


def consumer_group_list() -> list[tuple[str, bool, str]]:
    """(group id, is simple, state) of every consumer group, sorted by id."""
    listing = _result(gateway().admin().list_consumer_groups(), "listing consumer groups")
    groups = [
        (g.group_id, bool(g.is_simple_consumer_group), _STATES.get(g.state, "UNKNOWN"))
        for g in listing.valid  # type: ignore[attr-defined]
    ]
    return sorted(groups)


def consumer_group_get(*, group_id: str) -> GroupDetail:
    """One group's description; NotFound when the cluster does not know it."""
    futures = gateway().admin().describe_consumer_groups([group_id])
    description = _result(futures[group_id], f"describing group {group_id!r}")
    state = _STATES.get(description.state, "UNKNOWN")  # type: ignore[attr-defined]
    if state == "DEAD":
        raise NotFound(f"consumer group {group_id!r} not found")
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
        for m in description.members  # type: ignore[attr-defined]
    )
    coordinator = description.coordinator  # type: ignore[attr-defined]
    return GroupDetail(
        group_id=group_id,
        is_simple=bool(description.is_simple_consumer_group),  # type: ignore[attr-defined]
        partition_assignor=description.partition_assignor or "",  # type: ignore[attr-defined]
        state=state,
        coordinator_id=coordinator.id if coordinator is not None else None,
        members=members,
    )


def _log_end_offsets(partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    states, _ = gateway().partition_states()
    found = {tp: states[tp].high_watermark for tp in partitions if tp in states}
    missing = [tp for tp in partitions if tp not in found]
    if missing:
        request = {KafkaTopicPartition(t, p): OffsetSpec.latest() for t, p in missing}
        futures = gateway().admin().list_offsets(request)
        for tp, future in futures.items():
            info = _result(future, f"end offset of {tp.topic}-{tp.partition}")
            found[(tp.topic, tp.partition)] = info.offset  # type: ignore[attr-defined]
    return found


def consumer_group_lags(*, group_id: str) -> list[PartitionLag]:
    """Lag of every partition the group has committed: log end offset - committed offset."""
    detail = consumer_group_get(group_id=group_id)
    owners = {tp: m for m in detail.members for tp in m.assignments}
    request = [ConsumerGroupTopicPartitions(group_id)]
    futures = gateway().admin().list_consumer_group_offsets(request)
    committed = _result(futures[group_id], f"offsets of group {group_id!r}")
    offsets = {
        (tp.topic, tp.partition): tp.offset
        for tp in committed.topic_partitions  # type: ignore[attr-defined]
        if tp.offset >= 0
    }
    ends = _log_end_offsets(sorted(offsets))
    lags = []
    for (topic, partition), offset in sorted(offsets.items()):
        end = ends.get((topic, partition), offset)
        owner = owners.get((topic, partition))
        lags.append(
            PartitionLag(
                topic=topic,
                partition=partition,
                current_offset=offset,
                log_end_offset=end,
                lag=max(0, end - offset),
                consumer_id=owner.consumer_id if owner else "",
                instance_id=owner.instance_id if owner else None,
                client_id=owner.client_id if owner else "",
            )
        )
    return lags

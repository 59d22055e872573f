"""REST Proxy v3 consumer groups: groups, consumers, assignments, lags and the lag summary.

Same paths and resource shapes as Confluent's v3 API (``KafkaConsumerGroup``,
``KafkaConsumer``, ``KafkaConsumerAssignment``, ``KafkaConsumerLag``,
``KafkaConsumerGroupLagSummary``). Reads only, so a viewer may call all of them; the numbers
come from :mod:`groups.selectors` (committed offsets against the partitions' high watermarks).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from controlplane.errors import NotFound
from controlplane.rest_v3 import (
    V3,
    RelationshipSerializer,
    V3ReadView,
    parse_int,
    resource_serializer,
    v3_get,
)
from groups import selectors
from groups.selectors import GroupDetail, GroupMember, PartitionLag

TAGS = ["REST proxy v3: consumer groups"]
PARTITION_ID = OpenApiParameter("partition_id", OpenApiTypes.INT, OpenApiParameter.PATH)


def _member_fields() -> dict[str, serializers.Field]:
    """Who a group member is, in every resource that names one (a consumer, a lag)."""
    return {
        "consumer_id": serializers.CharField(),
        "instance_id": serializers.CharField(allow_null=True),
        "client_id": serializers.CharField(),
    }


GroupSerializer, GroupListSerializer = resource_serializer(
    "V3ConsumerGroup",
    {
        "consumer_group_id": serializers.CharField(),
        "is_simple": serializers.BooleanField(),
        "partition_assignor": serializers.CharField(),
        "state": serializers.CharField(),
        "type": serializers.CharField(),
        "is_mixed_consumer_group": serializers.BooleanField(),
        "coordinator": RelationshipSerializer(),
        "consumers": RelationshipSerializer(),
        "lag_summary": RelationshipSerializer(),
    },
)
ConsumerSerializer, ConsumerListSerializer = resource_serializer(
    "V3Consumer",
    {
        "consumer_group_id": serializers.CharField(),
        **_member_fields(),
        "assignments": RelationshipSerializer(),
    },
)
AssignmentSerializer, AssignmentListSerializer = resource_serializer(
    "V3ConsumerAssignment",
    {
        "consumer_group_id": serializers.CharField(),
        "consumer_id": serializers.CharField(),
        "topic_name": serializers.CharField(),
        "partition_id": serializers.IntegerField(),
        "partition": RelationshipSerializer(),
        "lag": RelationshipSerializer(),
    },
)
LagSerializer, LagListSerializer = resource_serializer(
    "V3ConsumerLag",
    {
        "consumer_group_id": serializers.CharField(),
        "topic_name": serializers.CharField(),
        "partition_id": serializers.IntegerField(),
        "current_offset": serializers.IntegerField(),
        "log_end_offset": serializers.IntegerField(),
        "lag": serializers.IntegerField(),
        **_member_fields(),
    },
)
LagSummarySerializer, _ = resource_serializer(
    "V3ConsumerGroupLagSummary",
    {
        "consumer_group_id": serializers.CharField(),
        "max_lag_consumer_id": serializers.CharField(),
        "max_lag_instance_id": serializers.CharField(allow_null=True),
        "max_lag_client_id": serializers.CharField(),
        "max_lag_topic_name": serializers.CharField(),
        "max_lag_partition_id": serializers.IntegerField(),
        "max_lag": serializers.IntegerField(),
        "total_lag": serializers.IntegerField(),
        "max_lag_consumer": RelationshipSerializer(),
        "max_lag_partition": RelationshipSerializer(),
    },
)


def _group(v3: V3, g: GroupDetail) -> dict[str, Any]:
    base = ("consumer-groups", g.group_id)
    return v3.resource(
        "KafkaConsumerGroup",
        base,
        (f"consumer-group={g.group_id}",),
        consumer_group_id=g.group_id,
        is_simple=g.is_simple,
        partition_assignor=g.partition_assignor,
        state=g.state,
        # Confluent's ConsumerGroupData: Weir's coordinator runs the classic protocol only
        # (JoinGroup/SyncGroup, no KIP-848 ConsumerGroupHeartbeat), so no group mixes the two.
        type="CLASSIC",
        is_mixed_consumer_group=False,
        coordinator=v3.related("brokers", g.coordinator_id if g.coordinator_id is not None else -1),
        consumers=v3.related(*base, "consumers"),
        lag_summary=v3.related(*base, "lag-summary"),
    )


def _consumer(v3: V3, group_id: str, m: GroupMember) -> dict[str, Any]:
    base = ("consumer-groups", group_id, "consumers", m.consumer_id)
    return v3.resource(
        "KafkaConsumer",
        base,
        (f"consumer-group={group_id}", f"consumer={m.consumer_id}"),
        consumer_group_id=group_id,
        consumer_id=m.consumer_id,
        instance_id=m.instance_id,
        client_id=m.client_id,
        assignments=v3.related(*base, "assignments"),
    )


def _assignment(v3: V3, group_id: str, m: GroupMember, topic: str, p: int) -> dict[str, Any]:
    base = ("consumer-groups", group_id, "consumers", m.consumer_id, "assignments", topic)
    return v3.resource(
        "KafkaConsumerAssignment",
        (*base, "partitions", p),
        (
            f"consumer-group={group_id}",
            f"consumer={m.consumer_id}",
            f"assignment={topic}",
            f"partition={p}",
        ),
        consumer_group_id=group_id,
        consumer_id=m.consumer_id,
        topic_name=topic,
        partition_id=p,
        partition=v3.related("topics", topic, "partitions", p),
        lag=v3.related("consumer-groups", group_id, "lags", topic, "partitions", p),
    )


def _lag(v3: V3, group_id: str, lag: PartitionLag) -> dict[str, Any]:
    topic, partition = lag.topic_name, lag.partition_id
    return v3.resource(
        "KafkaConsumerLag",
        ("consumer-groups", group_id, "lags", topic, "partitions", partition),
        (f"consumer-group={group_id}", f"lag={topic}", f"partition={partition}"),
        consumer_group_id=group_id,
        # A PartitionLag's fields are the resource's, named as Confluent names them.
        **asdict(lag),
    )


def _member(group: GroupDetail, consumer_id: str) -> GroupMember:
    for member in group.members:
        if member.consumer_id == consumer_id:
            return member
    raise NotFound(f"consumer {consumer_id!r} is not a member of group {group.group_id!r}")


class ConsumerGroupListView(V3ReadView):
    """Every consumer group of the cluster."""

    read_schema = v3_get("listKafkaConsumerGroups", GroupListSerializer, TAGS)

    def read(self, v3: V3) -> Any:
        ids = [group_id for group_id, _, _ in selectors.consumer_group_list()]
        data = [_group(v3, g) for g in selectors.consumer_group_details(group_ids=ids)]
        return v3.listing("KafkaConsumerGroupList", ("consumer-groups",), data)


class ConsumerGroupDetailView(V3ReadView):
    """One consumer group: state, assignor, coordinator."""

    read_schema = v3_get("getKafkaConsumerGroup", GroupSerializer, TAGS)

    def read(self, v3: V3, group_id: str) -> Any:
        return _group(v3, selectors.consumer_group_get(group_id=group_id))


class ConsumerListView(V3ReadView):
    """The group's members."""

    read_schema = v3_get("listKafkaConsumers", ConsumerListSerializer, TAGS)

    def read(self, v3: V3, group_id: str) -> Any:
        group = selectors.consumer_group_get(group_id=group_id)
        data = [_consumer(v3, group_id, m) for m in group.members]
        return v3.listing("KafkaConsumerList", ("consumer-groups", group_id, "consumers"), data)


class ConsumerDetailView(V3ReadView):
    """One member of the group."""

    read_schema = v3_get("getKafkaConsumer", ConsumerSerializer, TAGS)

    def read(self, v3: V3, group_id: str, consumer_id: str) -> Any:
        member = _member(selectors.consumer_group_get(group_id=group_id), consumer_id)
        return _consumer(v3, group_id, member)


class AssignmentListView(V3ReadView):
    """The partitions assigned to one member."""

    read_schema = v3_get("listKafkaConsumerAssignments", AssignmentListSerializer, TAGS)

    def read(self, v3: V3, group_id: str, consumer_id: str) -> Any:
        member = _member(selectors.consumer_group_get(group_id=group_id), consumer_id)
        data = [_assignment(v3, group_id, member, t, p) for t, p in member.assignments]
        parts = ("consumer-groups", group_id, "consumers", consumer_id, "assignments")
        return v3.listing("KafkaConsumerAssignmentList", parts, data)


class AssignmentDetailView(V3ReadView):
    """One assigned partition of one member."""

    read_schema = v3_get("getKafkaConsumerAssignment", AssignmentSerializer, TAGS, PARTITION_ID)

    def read(
        self, v3: V3, group_id: str, consumer_id: str, topic_name: str, partition_id: str
    ) -> Any:
        partition = parse_int(partition_id, what="partition")
        member = _member(selectors.consumer_group_get(group_id=group_id), consumer_id)
        if (topic_name, partition) not in member.assignments:
            raise NotFound(
                f"partition {topic_name}-{partition} is not assigned to consumer {consumer_id!r}"
            )
        return _assignment(v3, group_id, member, topic_name, partition)


class LagListView(V3ReadView):
    """Lag of every partition the group has committed."""

    read_schema = v3_get("listKafkaConsumerLags", LagListSerializer, TAGS)

    def read(self, v3: V3, group_id: str) -> Any:
        lags = selectors.consumer_group_lags(group_id=group_id)
        if not lags:
            # Confluent's ConsumerLagManagerImpl answers 404 for a group that exists but has
            # committed nothing (its checkOffsetsExist), as the lag summary does.
            raise NotFound(f"Consumer group {group_id!r} offsets could not be found.")
        data = [_lag(v3, group_id, lag) for lag in lags]
        return v3.listing("KafkaConsumerLagList", ("consumer-groups", group_id, "lags"), data)


class LagDetailView(V3ReadView):
    """Lag of one partition."""

    read_schema = v3_get("getKafkaConsumerLag", LagSerializer, TAGS, PARTITION_ID)

    def read(self, v3: V3, group_id: str, topic_name: str, partition_id: str) -> Any:
        partition = parse_int(partition_id, what="partition")
        for lag in selectors.consumer_group_lags(group_id=group_id):
            if (lag.topic_name, lag.partition_id) == (topic_name, partition):
                return _lag(v3, group_id, lag)
        raise NotFound(f"group {group_id!r} has no committed offset for {topic_name}-{partition}")


class LagSummaryView(V3ReadView):
    """The group's total lag and its most lagging partition."""

    read_schema = v3_get("getKafkaConsumerGroupLagSummary", LagSummarySerializer, TAGS)

    def read(self, v3: V3, group_id: str) -> Any:
        lags = selectors.consumer_group_lags(group_id=group_id)
        if not lags:
            raise NotFound(f"group {group_id!r} has no committed offsets")
        worst = max(lags, key=lambda lag: (lag.lag, -lag.partition_id))
        return v3.resource(
            "KafkaConsumerGroupLagSummary",
            ("consumer-groups", group_id, "lag-summary"),
            (f"consumer-group={group_id}", "lag-summary"),
            consumer_group_id=group_id,
            max_lag_consumer_id=worst.consumer_id,
            max_lag_instance_id=worst.instance_id,
            max_lag_client_id=worst.client_id,
            max_lag_topic_name=worst.topic_name,
            max_lag_partition_id=worst.partition_id,
            max_lag=worst.lag,
            total_lag=sum(lag.lag for lag in lags),
            max_lag_consumer=v3.related(
                "consumer-groups", group_id, "consumers", worst.consumer_id
            ),
            max_lag_partition=v3.related(
                "topics", worst.topic_name, "partitions", worst.partition_id
            ),
        )

"""``/api/`` views for reassignments, preferred-leader elections and cluster rebalance.

Thin DRF views: a serializer checks the request's shape (400 naming the field), a service or
selector of :mod:`brokers.ops` does the work and checks the values against the cluster
(422 naming the unknown topic, partition or broker). Reads need the viewer role, every
change the operator role (the default of :class:`~controlplane.roles.RolePermission`).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.ops import selectors, services
from brokers.ops.planner import Proposal
from controlplane.errors import BadRequest
from controlplane.validation import with_body

MAX_I32 = 2**31 - 1


# request shapes ------------------------------------------------------------------------------


class TopicPartitionSerializer(serializers.Serializer):
    topic = serializers.CharField(max_length=249)
    partition = serializers.IntegerField(min_value=0, max_value=MAX_I32)


class ReassignmentPartitionSerializer(TopicPartitionSerializer):
    replicas = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_I32), allow_empty=True
    )
    log_dirs = serializers.ListField(child=serializers.CharField(), required=False)


class ReassignmentRequestSerializer(serializers.Serializer):
    """kafka-reassign-partitions' JSON, plus an optional throttle."""

    version = serializers.IntegerField(required=False, default=1)
    partitions = ReassignmentPartitionSerializer(many=True)
    throttle_bytes_per_sec = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, default=None
    )

    def validate_version(self, value: int) -> int:
        if value != 1:
            raise serializers.ValidationError(
                f"only version 1 of the reassignment JSON is supported, got {value}"
            )
        return value


class PartitionListSerializer(serializers.Serializer):
    partitions = TopicPartitionSerializer(many=True, required=False)


class ReassignmentGenerateSerializer(serializers.Serializer):
    """kafka-reassign-partitions --generate: the topics to move and the brokers to use."""

    topics = serializers.ListField(
        child=serializers.CharField(max_length=249), allow_empty=False, max_length=10_000
    )
    brokers = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_I32),
        allow_empty=False,
        max_length=10_000,
    )


class ElectionRequestSerializer(serializers.Serializer):
    partitions = TopicPartitionSerializer(many=True, required=False)
    all = serializers.BooleanField(required=False, default=False)


class RebalanceRequestSerializer(serializers.Serializer):
    dryrun = serializers.BooleanField(required=False, default=True)
    exclude_brokers = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_I32),
        required=False,
        default=list,
    )
    topics = serializers.ListField(
        child=serializers.CharField(max_length=249), required=False, allow_empty=False
    )
    concurrency = serializers.IntegerField(min_value=1, max_value=1000, required=False, default=5)
    throttle_bytes_per_sec = serializers.IntegerField(
        min_value=1, required=False, allow_null=True, default=None
    )


# response shapes -----------------------------------------------------------------------------


# Why a partition was refused: the Kafka error name and a sentence. (A comment, not a
# docstring: drf-spectacular would copy a docstring into every subclass's schema.)
class PartitionErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    message = serializers.CharField()


class ReassignedPartitionSerializer(TopicPartitionSerializer):
    replicas = serializers.ListField(child=serializers.IntegerField())


class RejectedPartitionSerializer(ReassignedPartitionSerializer, PartitionErrorSerializer):
    pass


class ReassignmentAcceptedSerializer(serializers.Serializer):
    accepted = ReassignedPartitionSerializer(many=True)
    rejected = RejectedPartitionSerializer(many=True)
    throttle_bytes_per_sec = serializers.IntegerField(allow_null=True)


class ReplicaProgressSerializer(serializers.Serializer):
    broker = serializers.IntegerField()
    in_sync = serializers.BooleanField()
    log_end_offset = serializers.IntegerField(allow_null=True)
    leader_log_end_offset = serializers.IntegerField(allow_null=True)
    bytes_copied = serializers.IntegerField()
    bytes_total = serializers.IntegerField()
    percent = serializers.FloatField()


class ReassignmentSerializer(TopicPartitionSerializer):
    state = serializers.ChoiceField(choices=["in_progress", "completed", "cancelled"])
    replicas = serializers.ListField(child=serializers.IntegerField())
    original_replicas = serializers.ListField(child=serializers.IntegerField())
    target_replicas = serializers.ListField(child=serializers.IntegerField())
    adding_replicas = serializers.ListField(child=serializers.IntegerField())
    removing_replicas = serializers.ListField(child=serializers.IntegerField())
    leader = serializers.IntegerField()
    percent = serializers.FloatField()
    progress = ReplicaProgressSerializer(many=True)
    submitted_ms = serializers.IntegerField(allow_null=True)


class ReassignmentListSerializer(serializers.Serializer):
    in_progress = serializers.IntegerField()
    completed = serializers.IntegerField()
    percent = serializers.FloatField()
    reassignments = ReassignmentSerializer(many=True)


class FailedPartitionSerializer(TopicPartitionSerializer, PartitionErrorSerializer):
    pass


class ReassignmentCancelSerializer(serializers.Serializer):
    cancelled = TopicPartitionSerializer(many=True)
    failed = FailedPartitionSerializer(many=True)
    not_in_progress = TopicPartitionSerializer(many=True)


class ElectionResultSerializer(TopicPartitionSerializer):
    error_code = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    elected = serializers.BooleanField()
    succeeded = serializers.BooleanField()
    message = serializers.CharField()


class ElectionSummarySerializer(serializers.Serializer):
    elected = serializers.IntegerField()
    not_needed = serializers.IntegerField()
    failed = serializers.IntegerField()


class ElectionResponseSerializer(ElectionSummarySerializer):
    results = ElectionResultSerializer(many=True)


class DistributionSerializer(serializers.Serializer):
    replicas_per_broker = serializers.DictField(child=serializers.IntegerField())
    leaders_per_broker = serializers.DictField(child=serializers.IntegerField())
    replica_stddev = serializers.FloatField()
    leader_stddev = serializers.FloatField()
    replica_spread = serializers.IntegerField()
    leader_spread = serializers.IntegerField()
    rack_deficient_partitions = serializers.IntegerField()


class PlannedPartitionSerializer(TopicPartitionSerializer):
    current_replicas = serializers.ListField(child=serializers.IntegerField())
    proposed_replicas = serializers.ListField(child=serializers.IntegerField())
    moves = serializers.IntegerField()
    leader_change = serializers.BooleanField(required=False)


class PlanPartitionSerializer(PlannedPartitionSerializer):
    status = serializers.ChoiceField(
        choices=["pending", "in_flight", "done", "failed", "cancelled"]
    )
    message = serializers.CharField(allow_blank=True)
    started_ms = serializers.IntegerField(allow_null=True)
    finished_ms = serializers.IntegerField(allow_null=True)


class RebalanceStatusSerializer(serializers.Serializer):
    id = serializers.CharField(allow_null=True)
    state = serializers.ChoiceField(choices=["none", "running", "completed", "cancelled"])
    created_ms = serializers.IntegerField(allow_null=True)
    updated_ms = serializers.IntegerField(required=False)
    finished_ms = serializers.IntegerField(allow_null=True)
    concurrency = serializers.IntegerField(allow_null=True)
    throttle_bytes_per_sec = serializers.IntegerField(allow_null=True)
    election = ElectionSummarySerializer(allow_null=True)
    message = serializers.CharField(allow_blank=True)
    before = DistributionSerializer(allow_null=True)
    after = DistributionSerializer(allow_null=True)
    total = serializers.IntegerField()
    pending = serializers.IntegerField()
    in_flight = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    partitions = PlanPartitionSerializer(many=True)


# A proposal's moves and the distribution before and after: what ``_diffs_data`` answers.
class ProposalDiffsSerializer(serializers.Serializer):
    replica_moves = serializers.IntegerField()
    leader_changes = serializers.IntegerField()
    partitions = PlannedPartitionSerializer(many=True)
    before = DistributionSerializer()
    after = DistributionSerializer()


class ReassignmentProposalSerializer(ProposalDiffsSerializer):
    topics = serializers.ListField(child=serializers.CharField())
    brokers = serializers.ListField(child=serializers.IntegerField())
    partitions_total = serializers.IntegerField()


class RebalanceProposalSerializer(ProposalDiffsSerializer):
    dryrun = serializers.BooleanField()
    plan = RebalanceStatusSerializer(allow_null=True)


def _proposal_data(proposal: Proposal, *, dryrun: bool) -> dict[str, Any]:
    return {"dryrun": dryrun, **_diffs_data(proposal), "plan": None}


def _diffs_data(proposal: Proposal) -> dict[str, Any]:
    return {
        "replica_moves": proposal.replica_moves,
        "leader_changes": proposal.leader_changes,
        "partitions": [{**d.to_dict(), "leader_change": d.leader_change} for d in proposal.diffs],
        "before": proposal.before.to_dict(),
        "after": proposal.after.to_dict(),
    }


def _partition_keys(items: list[dict[str, Any]] | None) -> list[tuple[str, int]] | None:
    return None if items is None else [(i["topic"], i["partition"]) for i in items]


# views ---------------------------------------------------------------------------------------


class ReassignmentsView(APIView):
    """Start partition reassignments, follow their progress, cancel them."""

    @extend_schema(responses=ReassignmentListSerializer)
    def get(self, request: Request) -> Response:
        return Response(selectors.reassignment_list())

    @with_body(ReassignmentRequestSerializer, responses={202: ReassignmentAcceptedSerializer})
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        result = services.reassignment_execute(
            partitions=[(p["topic"], p["partition"], p["replicas"]) for p in data["partitions"]],
            throttle_bytes_per_sec=data["throttle_bytes_per_sec"],
        )
        return Response(result, status=202)

    @with_body(PartitionListSerializer, responses=ReassignmentCancelSerializer)
    def delete(self, request: Request, data: dict[str, Any]) -> Response:
        keys = _partition_keys(data.get("partitions"))
        return Response(services.reassignment_cancel(partitions=keys))


class ReassignmentGenerateView(APIView):
    """Propose new replica sets for topics on chosen brokers (changes nothing).

    The equivalent of ``kafka-reassign-partitions --generate``; the ``partitions`` answered
    (``proposed_replicas``) can be sent to ``POST /api/reassignments/`` as they are.
    """

    @with_body(ReassignmentGenerateSerializer, responses=ReassignmentProposalSerializer)
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        generated = selectors.reassignment_proposal(topics=data["topics"], brokers=data["brokers"])
        return Response(
            {
                "topics": list(dict.fromkeys(data["topics"])),
                "brokers": sorted(set(data["brokers"])),
                "partitions_total": generated.partitions_total,
                **_diffs_data(generated.proposal),
            }
        )


class ReassignmentCancelView(APIView):
    """Cancel reassignments (all, or the listed partitions): ``DELETE /api/reassignments/``."""

    # A POST for clients that cannot send a body with DELETE; the same handler.
    post = ReassignmentsView.delete


class PreferredElectionView(APIView):
    """Move leadership back to each partition's preferred (first) replica."""

    @with_body(ElectionRequestSerializer, responses=ElectionResponseSerializer)
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        partitions = data.get("partitions")
        if partitions is not None and data["all"]:
            raise BadRequest('give either "partitions" or "all": true, not both')
        if partitions is not None and not partitions:
            raise BadRequest('partitions: the list is empty; omit it or send {"all": true}')
        return Response(services.election_preferred(partitions=_partition_keys(partitions)))


class RebalanceView(APIView):
    """Propose (``dryrun``) or execute a rebalance; follow or cancel the running plan."""

    @extend_schema(responses=RebalanceStatusSerializer)
    def get(self, request: Request) -> Response:
        return Response(selectors.rebalance_status())

    @with_body(
        RebalanceRequestSerializer,
        responses={200: RebalanceProposalSerializer, 202: RebalanceProposalSerializer},
    )
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        proposal = selectors.rebalance_proposal(
            exclude_brokers=data["exclude_brokers"], topics=data.get("topics")
        )
        body = _proposal_data(proposal, dryrun=data["dryrun"])
        if data["dryrun"]:
            return Response(body)
        services.rebalance_start(
            proposal=proposal,
            concurrency=data["concurrency"],
            throttle_bytes_per_sec=data["throttle_bytes_per_sec"],
        )
        body["plan"] = selectors.rebalance_status()
        return Response(body, status=202)

    @extend_schema(request=None, responses=RebalanceStatusSerializer)
    def delete(self, request: Request) -> Response:
        services.rebalance_cancel()
        return Response(selectors.rebalance_status())

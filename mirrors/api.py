"""``/api/mirrors/``: the cross-cluster mirror's flows and the failover action.

* ``GET /api/mirrors/`` → ``{"config", "at_ms", "flows": [...]}``: every flow with its
  processes, state, errors, topics, per-partition lag (records, seconds), throughput, last
  checkpoint and heartbeat age and the target groups offset sync skipped as active;
* ``GET /api/mirrors/<source>/<target>/`` → one flow (the aliases as two path segments:
  ``/api/mirrors/east/west/`` is MM2's ``east->west``);
* ``POST /api/mirrors/<source>/<target>/failover/`` ``{"group", "dry_run"?}`` → the group's
  translated offsets on the target, committed there unless ``dry_run`` (the default).

Reads need the viewer role, the failover the operator role (RolePermission's default for
POST); it is audited like every mutating call. Thin views over :mod:`mirrors.selectors` and
:mod:`mirrors.services`.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.validation import with_body
from mirrors import selectors, services

__all__ = ["MirrorDetailView", "MirrorFailoverView", "MirrorListView"]

TAGS = ["Mirrors"]


class MirrorPartitionSerializer(serializers.Serializer):
    source_topic = serializers.CharField()
    partition = serializers.IntegerField()
    target_topic = serializers.CharField()
    process_id = serializers.CharField(allow_null=True, help_text="the process copying it")
    lag_records = serializers.IntegerField()
    lag_seconds = serializers.FloatField(allow_null=True, help_text="age of the oldest uncopied")
    source_end_offset = serializers.IntegerField()
    committed_offset = serializers.IntegerField(help_text="the mirror's next source offset")
    records = serializers.IntegerField(required=False)
    bytes = serializers.IntegerField(required=False)
    replication_latency_ms = serializers.FloatField(required=False)
    record_age_ms = serializers.FloatField(required=False)


class MirrorProcessSerializer(serializers.Serializer):
    process_id = serializers.CharField()
    state = serializers.CharField()
    leader = serializers.BooleanField(help_text="runs the flow's checkpoints and heartbeats")
    started_at_ms = serializers.IntegerField()
    updated_at_ms = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)


class MirrorErrorSerializer(serializers.Serializer):
    process_id = serializers.CharField()
    at_ms = serializers.IntegerField()
    message = serializers.CharField()


class MirrorFlowSerializer(serializers.Serializer):
    flow = serializers.CharField(help_text="source->target")
    source = serializers.CharField()
    target = serializers.CharField()
    enabled = serializers.BooleanField()
    configured = serializers.BooleanField(help_text="in WEIR_MIRROR_PROPERTIES")
    state = serializers.CharField(help_text="down, starting, running, retrying or stopped")
    processes_alive = serializers.IntegerField()
    processes = MirrorProcessSerializer(many=True)
    error = serializers.CharField(allow_null=True)
    errors = MirrorErrorSerializer(many=True)
    cluster_error = serializers.CharField(allow_null=True)
    lag_from = serializers.ChoiceField(choices=("clusters", "processes"))
    topics = serializers.ListField(child=serializers.CharField())
    skipped_topics = serializers.DictField(child=serializers.CharField())
    partitions = MirrorPartitionSerializer(many=True)
    lag_records = serializers.IntegerField()
    lag_seconds = serializers.FloatField()
    record_rate = serializers.FloatField()
    byte_rate = serializers.FloatField()
    records_total = serializers.IntegerField()
    bytes_total = serializers.IntegerField()
    last_checkpoint_ms = serializers.IntegerField(allow_null=True)
    checkpoint_age_s = serializers.FloatField(allow_null=True)
    last_heartbeat_ms = serializers.IntegerField(allow_null=True)
    heartbeat_age_s = serializers.FloatField(allow_null=True)
    synced_groups = serializers.ListField(child=serializers.CharField())
    skipped_active_groups = serializers.ListField(child=serializers.CharField())


class MirrorConfigSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="WEIR_MIRROR_PROPERTIES (empty: not set)")
    loaded = serializers.BooleanField()
    error = serializers.CharField(allow_null=True)
    clusters = serializers.ListField(child=serializers.CharField())


class MirrorListSerializer(serializers.Serializer):
    config = MirrorConfigSerializer()
    at_ms = serializers.IntegerField()
    flows = MirrorFlowSerializer(many=True)


class MirrorDetailSerializer(MirrorFlowSerializer):
    config = MirrorConfigSerializer()
    at_ms = serializers.IntegerField()


class FailoverRequestSerializer(serializers.Serializer):
    group = serializers.CharField(max_length=255, trim_whitespace=False)
    dry_run = serializers.BooleanField(required=False, default=True)


class FailoverRowSerializer(serializers.Serializer):
    topic = serializers.CharField(help_text="the target topic")
    partition = serializers.IntegerField()
    source_topic = serializers.CharField(allow_null=True)
    translated_offset = serializers.IntegerField(help_text="capped at the target log end")
    checkpoint_offset = serializers.IntegerField()
    source_committed_offset = serializers.IntegerField()
    target_committed_offset = serializers.IntegerField(allow_null=True)
    target_end_offset = serializers.IntegerField()


class FailoverResultSerializer(serializers.Serializer):
    flow = serializers.CharField()
    group = serializers.CharField()
    checkpoints_topic = serializers.CharField()
    members_on_target = serializers.IntegerField()
    target_state = serializers.CharField()
    dry_run = serializers.BooleanField()
    partitions = FailoverRowSerializer(many=True)


class MirrorListView(APIView):
    """Every mirror flow: the properties file's and those running processes publish."""

    @extend_schema(responses=MirrorListSerializer, operation_id="mirrors_list", tags=TAGS)
    def get(self, request: Request) -> Response:
        return Response(selectors.flow_list())


class MirrorDetailView(APIView):
    """One flow, ``source->target``."""

    @extend_schema(responses=MirrorDetailSerializer, operation_id="mirrors_retrieve", tags=TAGS)
    def get(self, request: Request, source: str, target: str) -> Response:
        return Response(selectors.flow_get(source=source, target=target))


class MirrorFailoverView(APIView):
    """Translate a group's offsets from the flow's checkpoints; commit them on the target
    unless ``dry_run`` (needs the group inactive there)."""

    @with_body(
        FailoverRequestSerializer,
        responses=FailoverResultSerializer,
        operation_id="mirrors_failover",
        tags=TAGS,
    )
    def post(self, request: Request, body: dict[str, Any], source: str, target: str) -> Response:
        plan = services.group_failover(
            source=source, target=target, group=body["group"], dry_run=body["dry_run"]
        )
        return Response(asdict(plan))

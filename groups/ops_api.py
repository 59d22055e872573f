"""``/api/`` views for consumer groups: lag, lag history, status, rebalance, offset resets,
and the webhooks that alert on status changes.

Thin DRF views over :mod:`groups.lag` (reads) and :mod:`groups.services` (writes). Reads need
the viewer role; rebalancing, resetting offsets and managing webhooks need the operator role
(the default of :class:`~controlplane.roles.RolePermission` for unsafe methods). Webhook
secrets are write-only: responses say only whether one is set.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_naive, make_aware
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.errors import BadRequest, NotFound
from controlplane.validation import with_body
from groups import lag, selectors, services
from groups.models import GroupStatusSample, LagSample, WebhookConfig

MAX_I32 = 2**31 - 1
MAX_HISTORY = 10_000
STATUSES = ("OK", "WARN", "ERR", "NOTFOUND")


# response shapes ----------------------------------------------------------------------------


class GroupSummarySerializer(serializers.Serializer):
    group = serializers.CharField()
    state = serializers.CharField()
    members = serializers.IntegerField()
    status = serializers.ChoiceField(choices=STATUSES)
    total_lag = serializers.IntegerField()
    max_lag_seconds = serializers.FloatField()


class PartitionLagSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    committed = serializers.IntegerField()
    high_watermark = serializers.IntegerField()
    lag = serializers.IntegerField()
    lag_seconds = serializers.FloatField()
    status = serializers.ChoiceField(choices=("OK", "WARN", "STOP", "STALL", "REWIND"))
    complete = serializers.BooleanField()


class GroupLagSerializer(GroupSummarySerializer):
    type = serializers.CharField()
    complete = serializers.FloatField(help_text="fraction of partitions whose window is full")
    partitions = PartitionLagSerializer(many=True)
    at = serializers.DateTimeField()


class LagSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = LagSample
        fields = [
            "topic",
            "partition",
            "at",
            "committed_offset",
            "high_watermark",
            "lag",
            "lag_seconds",
            "status",
        ]


class StatusSampleSerializer(serializers.ModelSerializer):
    class Meta:
        model = GroupStatusSample
        fields = ["at", "status", "total_lag", "max_lag_seconds"]


class LagHistorySerializer(serializers.Serializer):
    group = serializers.CharField()
    samples = LagSampleSerializer(many=True)


class StatusHistorySerializer(serializers.Serializer):
    group = serializers.CharField()
    samples = StatusSampleSerializer(many=True)


class RebalanceResultSerializer(serializers.Serializer):
    group = serializers.CharField()
    previous_state = serializers.CharField()
    message = serializers.CharField()


class ResetPartitionSerializer(serializers.Serializer):
    topic = serializers.CharField(max_length=249)
    partition = serializers.IntegerField(min_value=0, max_value=MAX_I32)


class ResetOffsetsRequestSerializer(serializers.Serializer):
    """kafka-consumer-groups --reset-offsets as JSON; no topics nor partitions = all committed."""

    strategy = serializers.ChoiceField(choices=services.RESET_STRATEGIES)
    value = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text=(
            "offset: the offset; shift: +/- amount; datetime: ISO-8601 or epoch ms; "
            "by-duration: ISO-8601 duration such as PT10M"
        ),
    )
    topics = serializers.ListField(
        child=serializers.CharField(max_length=249), required=False, allow_empty=True
    )
    partitions = ResetPartitionSerializer(many=True, required=False)
    dry_run = serializers.BooleanField(required=False, default=True)


class ResetRowSerializer(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()
    current_offset = serializers.IntegerField(allow_null=True)
    new_offset = serializers.IntegerField()


class ResetOffsetsResultSerializer(serializers.Serializer):
    group = serializers.CharField()
    strategy = serializers.CharField()
    dry_run = serializers.BooleanField()
    partitions = ResetRowSerializer(many=True)


class WebhookSerializer(serializers.ModelSerializer):
    secret = serializers.CharField(
        write_only=True, required=False, allow_blank=True, max_length=255
    )
    has_secret = serializers.SerializerMethodField()
    min_status = serializers.ChoiceField(choices=("OK", "WARN", "ERR"), required=False)

    class Meta:
        model = WebhookConfig
        fields = [
            "id",
            "url",
            "group",
            "min_status",
            "enabled",
            "secret",
            "has_secret",
            "created_at",
            "last_delivery_at",
            "last_delivery_status",
            "last_delivery_error",
        ]
        read_only_fields = [
            "id",
            "created_at",
            "last_delivery_at",
            "last_delivery_status",
            "last_delivery_error",
        ]
        extra_kwargs = {"group": {"required": False, "allow_blank": True}}

    def get_has_secret(self, webhook: WebhookConfig) -> bool:
        return bool(webhook.secret)


# views ---------------------------------------------------------------------------------------


class GroupListView(APIView):
    """Every consumer group with its state, members, total lag and status."""

    @extend_schema(responses=GroupSummarySerializer(many=True), operation_id="groups_list")
    def get(self, request: Request) -> Response:
        return Response(lag.group_list())


class GroupLagView(APIView):
    """Per-partition lag (offsets and seconds) and Burrow status of one group."""

    @extend_schema(responses=GroupLagSerializer, operation_id="groups_lag")
    def get(self, request: Request, group: str) -> Response:
        found = lag.group_lag(group=group)
        if found is None:
            raise NotFound(f"consumer group {group!r} does not exist")
        return Response(found)


def _time_param(request: Request, name: str) -> datetime | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        parsed = parse_datetime(raw.replace(" ", "+"))
    except ValueError:
        parsed = None
    if parsed is None:
        raise BadRequest(f"query parameter {name}={raw!r} is not an ISO-8601 datetime")
    return make_aware(parsed) if is_naive(parsed) else parsed


def _int_param(request: Request, name: str, *, low: int, high: int) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name}={raw!r} is not an integer") from None
    if not low <= value <= high:
        raise BadRequest(f"query parameter {name}={value} is not between {low} and {high}")
    return value


_TIME_PARAMS = [
    OpenApiParameter("since", OpenApiTypes.DATETIME, description="oldest sample (ISO-8601)"),
    OpenApiParameter("until", OpenApiTypes.DATETIME, description="newest sample (ISO-8601)"),
    OpenApiParameter("limit", OpenApiTypes.INT, description=f"at most this many (≤{MAX_HISTORY})"),
]


class GroupLagHistoryView(APIView):
    """Stored lag samples of one group, oldest first."""

    @extend_schema(
        responses=LagHistorySerializer,
        operation_id="groups_lag_history",
        parameters=[
            *_TIME_PARAMS,
            OpenApiParameter("topic", OpenApiTypes.STR),
            OpenApiParameter("partition", OpenApiTypes.INT),
        ],
    )
    def get(self, request: Request, group: str) -> Response:
        samples = lag.lag_history(
            group=group,
            since=_time_param(request, "since"),
            until=_time_param(request, "until"),
            topic=request.query_params.get("topic") or None,
            partition=_int_param(request, "partition", low=0, high=MAX_I32),
            limit=_int_param(request, "limit", low=1, high=MAX_HISTORY) or MAX_HISTORY,
        )
        return Response({"group": group, "samples": LagSampleSerializer(samples, many=True).data})


class GroupStatusHistoryView(APIView):
    """Stored status samples of one group, oldest first."""

    @extend_schema(
        responses=StatusHistorySerializer,
        operation_id="groups_status_history",
        parameters=_TIME_PARAMS,
    )
    def get(self, request: Request, group: str) -> Response:
        samples = lag.status_history(
            group=group,
            since=_time_param(request, "since"),
            until=_time_param(request, "until"),
            limit=_int_param(request, "limit", low=1, high=MAX_HISTORY) or MAX_HISTORY,
        )
        return Response(
            {"group": group, "samples": StatusSampleSerializer(samples, many=True).data}
        )


class GroupRebalanceView(APIView):
    """Force a live group to rebalance now (its members rejoin). 409 for an empty group."""

    @extend_schema(
        request=None, responses=RebalanceResultSerializer, operation_id="groups_rebalance"
    )
    def post(self, request: Request, group: str) -> Response:
        previous = services.group_force_rebalance(group=group)
        return Response(
            {
                "group": group,
                "previous_state": previous,
                "message": f"group {group} is rebalancing: its members rejoin now",
            }
        )


class GroupResetOffsetsView(APIView):
    """Reset committed offsets (dry run by default); executing needs an inactive group."""

    @with_body(
        ResetOffsetsRequestSerializer,
        responses=ResetOffsetsResultSerializer,
        operation_id="groups_reset_offsets",
    )
    def post(self, request: Request, body: dict[str, Any], group: str) -> Response:
        strategy = body["strategy"]
        if strategy in ("offset", "shift", "datetime", "by-duration") and body["value"] is None:
            raise BadRequest(f"value: the {strategy} strategy needs a value")
        rows = services.group_offsets_reset(
            group=group,
            strategy=strategy,
            value=body["value"],
            topics=body.get("topics") or None,
            partitions=[(p["topic"], p["partition"]) for p in body.get("partitions") or []] or None,
            dry_run=body["dry_run"],
        )
        return Response(
            {
                "group": group,
                "strategy": strategy,
                "dry_run": body["dry_run"],
                "partitions": [
                    {
                        "topic": r.topic,
                        "partition": r.partition,
                        "current_offset": r.current_offset,
                        "new_offset": r.new_offset,
                    }
                    for r in rows
                ],
            }
        )


class WebhookListView(APIView):
    """Webhooks that receive group status changes (operators manage them)."""

    @extend_schema(responses=WebhookSerializer(many=True), operation_id="webhooks_list")
    def get(self, request: Request) -> Response:
        return Response(WebhookSerializer(selectors.webhook_list(), many=True).data)

    @with_body(
        WebhookSerializer, responses={201: WebhookSerializer}, operation_id="webhooks_create"
    )
    def post(self, request: Request, body: dict[str, Any]) -> Response:
        webhook = services.webhook_create(**body)
        return Response(WebhookSerializer(webhook).data, status=201)


class WebhookDetailView(APIView):
    """One webhook."""

    def _webhook(self, webhook_id: int) -> WebhookConfig:
        found = WebhookConfig.objects.filter(id=webhook_id).first()
        if found is None:
            raise NotFound(f"webhook {webhook_id} does not exist")
        return found

    @extend_schema(responses=WebhookSerializer, operation_id="webhooks_retrieve")
    def get(self, request: Request, webhook_id: int) -> Response:
        return Response(WebhookSerializer(self._webhook(webhook_id)).data)

    @extend_schema(
        request=WebhookSerializer, responses=WebhookSerializer, operation_id="webhooks_update"
    )
    def patch(self, request: Request, webhook_id: int) -> Response:
        webhook = self._webhook(webhook_id)
        data = request.data
        if data is None or (hasattr(data, "keys") and not data):
            data = {}
        if not isinstance(data, dict):
            raise BadRequest("the request body must be a JSON object")
        serializer = WebhookSerializer(webhook, data=data, partial=True)
        serializer.is_valid(raise_exception=True)
        webhook = services.webhook_update(webhook=webhook, **serializer.validated_data)
        return Response(WebhookSerializer(webhook).data)

    @extend_schema(responses={204: None}, operation_id="webhooks_destroy")
    def delete(self, request: Request, webhook_id: int) -> Response:
        services.webhook_delete(webhook=self._webhook(webhook_id))
        return Response(status=204)

"""``/api/quotas/``: Kafka's client quotas (viewers read; operators change; every change audited).

* ``GET /api/quotas/`` → ``{"quotas": [entity], "usage": [usage row]}``: every configured
  entity (``{"entity", "user", "client_id", "values", "usage"}``) and every broker's live
  usage rows (rate and throttle per quota type and metric tags);
* ``POST /api/quotas/`` ``{"user"?, "client_id"?, "values"?: {key: number}, "remove"?: [key]}``
  → 200 with the entity as the brokers now describe it (incremental, as ``kafka-configs
  --alter --add-config ... --delete-config ...``);
* ``PUT /api/quotas/`` ``{"user"?, "client_id"?, "values": {key: number}}`` → 200: ``values``
  become the entity's only quotas;
* ``DELETE /api/quotas/?user=&client_id=&key=`` → 200 ``{"entity", "removed"}`` (without
  ``key``: every quota of the entity, which then no longer exists).

An entity part is a name, ``<default>``, or absent (null in answers); at least one is given.
Keys are ``producer_byte_rate``, ``consumer_byte_rate`` (bytes/s) and ``request_percentage``.
Roles follow broker config changes: reading is a viewer's, changing an operator's. The work
is :mod:`brokers.quotas`' (the services ``manage.py configs`` uses too); the audit
middleware records every mutation.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers import quotas
from controlplane.errors import BadRequest
from controlplane.roles import OPERATOR, VIEWER
from controlplane.validation import with_body

__all__ = ["QuotaView"]

TAGS = ["Client quotas"]
_PART_HELP = f"a name, {quotas.DEFAULT} for the default, or left out"


class _Strict(serializers.Serializer):
    """Refuses fields it does not know (``client-id`` for ``client_id`` would otherwise
    silently address another entity)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                known = ", ".join(self.fields)
                raise serializers.ValidationError(
                    {name: [f"unknown field (expected {known})"] for name in unknown}
                )
        return super().to_internal_value(data)


def _part() -> serializers.CharField:
    return serializers.CharField(
        required=False, allow_null=True, default=None, trim_whitespace=False, help_text=_PART_HELP
    )


def _values(*, required: bool) -> serializers.DictField:
    return serializers.DictField(
        child=serializers.FloatField(),
        required=required,
        default=serializers.empty if required else dict,
        help_text="quota key → value: producer_byte_rate, consumer_byte_rate (bytes/s), "
        "request_percentage (% of one thread)",
    )


class QuotaAlterSerializer(_Strict):
    user = _part()
    client_id = _part()
    values = _values(required=False)
    remove = serializers.ListField(
        child=serializers.CharField(), required=False, default=list, help_text="keys to remove"
    )


class QuotaReplaceSerializer(_Strict):
    user = _part()
    client_id = _part()
    values = _values(required=True)


class QuotaUsageSerializer(serializers.Serializer):
    broker_id = serializers.IntegerField()
    type = serializers.ChoiceField(choices=["Produce", "Fetch", "Request"])
    user = serializers.CharField(help_text="metric tag: empty when the quota is not per user")
    client_id = serializers.CharField(help_text="metric tag: empty when not per client id")
    quota = serializers.FloatField(allow_null=True)
    rate = serializers.FloatField(help_text="bytes/s (Produce, Fetch) or % of a thread")
    throttle_time_avg_ms = serializers.FloatField()
    throttle_time_max_ms = serializers.FloatField()
    throttled_requests = serializers.IntegerField()
    throttle_time_ms_total = serializers.IntegerField()


class QuotaEntitySerializer(serializers.Serializer):
    entity = serializers.CharField(help_text="Kafka's path form, users/alice/clients/<default>")
    user = serializers.CharField(allow_null=True, help_text=_PART_HELP)
    client_id = serializers.CharField(allow_null=True, help_text=_PART_HELP)
    values = serializers.DictField(child=serializers.FloatField())


class QuotaWithUsageSerializer(QuotaEntitySerializer):
    usage = QuotaUsageSerializer(many=True)


class QuotaStateSerializer(serializers.Serializer):
    quotas = QuotaWithUsageSerializer(many=True)
    usage = QuotaUsageSerializer(many=True, help_text="every broker's live rows")


class QuotaRemovedSerializer(serializers.Serializer):
    entity = serializers.CharField()
    removed = serializers.ListField(child=serializers.CharField())


def _entity_fields(user: str | None, client_id: str | None, values: dict[str, float]) -> dict:
    entity = quotas.entity_of(user=user, client_id=client_id)
    return {
        "entity": quotas.entity_path(entity),
        "user": user,
        "client_id": client_id,
        "values": dict(sorted(values.items())),
    }


_ENTITY_QUERY = [
    OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY, description=_PART_HELP)
    for name in ("user", "client_id")
]
_QUERY_FIELDS = ("user", "client_id", "key")


class QuotaView(APIView):
    """List quotas with live usage (GET), alter (POST), replace (PUT) or remove (DELETE)."""

    roles = {"GET": VIEWER, "POST": OPERATOR, "PUT": OPERATOR, "DELETE": OPERATOR}

    @extend_schema(operation_id="listClientQuotas", responses=QuotaStateSerializer, tags=TAGS)
    def get(self, request: Request) -> Response:
        return Response(quotas.client_quota_view())

    @with_body(
        QuotaAlterSerializer,
        operation_id="alterClientQuota",
        responses=QuotaEntitySerializer,
        tags=TAGS,
    )
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        if not data["values"] and not data["remove"]:
            raise BadRequest("nothing to change: give values to set and/or keys to remove")
        entity = quotas.entity_of(user=data["user"], client_id=data["client_id"])
        quotas.client_quota_alter(entity=entity, values=data["values"], remove=data["remove"])
        now = quotas.client_quota_values(entity=entity)
        return Response(_entity_fields(data["user"], data["client_id"], now))

    @with_body(
        QuotaReplaceSerializer,
        operation_id="replaceClientQuota",
        responses=QuotaEntitySerializer,
        tags=TAGS,
    )
    def put(self, request: Request, data: dict[str, Any]) -> Response:
        entity = quotas.entity_of(user=data["user"], client_id=data["client_id"])
        now = quotas.client_quota_replace(entity=entity, values=data["values"])
        return Response(_entity_fields(data["user"], data["client_id"], now))

    @extend_schema(
        operation_id="deleteClientQuota",
        parameters=[
            *_ENTITY_QUERY,
            OpenApiParameter(
                "key",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                many=True,
                description="a quota key to remove (repeat, or comma-separated); "
                "default: every key of the entity",
            ),
        ],
        responses={200: QuotaRemovedSerializer},
        tags=TAGS,
    )
    def delete(self, request: Request) -> Response:
        params = request.query_params
        unknown = sorted(set(params) - set(_QUERY_FIELDS))
        if unknown:
            raise BadRequest(
                f"unknown query parameter {', '.join(unknown)} (expected user, client_id, key)"
            )
        user, client_id = params.get("user"), params.get("client_id")
        keys = [k.strip() for value in params.getlist("key") for k in value.split(",")]
        entity = quotas.entity_of(user=user, client_id=client_id)
        removed = quotas.client_quota_delete(entity=entity, keys=[k for k in keys if k])
        return Response({"entity": quotas.entity_path(entity), "removed": removed})

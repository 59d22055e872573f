"""``/api/scram-users/``: the cluster's SCRAM users (admins only; every change audited).

* ``GET /api/scram-users/`` → ``[{"name", "mechanisms": [{"mechanism", "iterations"}]}]``;
* ``POST /api/scram-users/`` ``{"name", "mechanism", "password", "iterations"?}`` → 200 with the
  user (a new user or a new password: Kafka's upsert);
* ``DELETE /api/scram-users/<name>/?mechanism=SCRAM-SHA-256`` → 200 ``{"name", "deleted"}``
  (without ``mechanism``: every credential of the user).

Secrets never leave the brokers; the audit middleware masks ``password`` in what it keeps.
The work is done by :mod:`controlplane.scram_users` over the Kafka API.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane import scram_users
from controlplane.errors import BadRequest
from controlplane.roles import ADMIN
from controlplane.validation import with_body

__all__ = ["ScramUserDetailView", "ScramUserListView"]

TAGS = ["SCRAM users"]


class ScramCredentialSerializer(serializers.Serializer):
    mechanism = serializers.ChoiceField(choices=scram_users.MECHANISMS)
    iterations = serializers.IntegerField()


class ScramUserSerializer(serializers.Serializer):
    name = serializers.CharField()
    mechanisms = ScramCredentialSerializer(many=True)


class ScramUserUpsertSerializer(serializers.Serializer):
    # Kafka accepts any non-empty name; "/" would make the user impossible to address here.
    name = serializers.RegexField(r"^[^/\s][^/]{0,254}$", trim_whitespace=False)
    mechanism = serializers.ChoiceField(choices=scram_users.MECHANISMS)
    password = serializers.CharField(min_length=1, max_length=1024, trim_whitespace=False)
    iterations = serializers.IntegerField(
        min_value=scram_users.MIN_ITERATIONS,
        max_value=scram_users.MAX_ITERATIONS,
        default=scram_users.DEFAULT_ITERATIONS,
    )

    def to_internal_value(self, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("mechanism"), str):
            data = {**data, "mechanism": data["mechanism"].upper()}
        return super().to_internal_value(data)


class ScramUserDeletedSerializer(serializers.Serializer):
    name = serializers.CharField()
    deleted = serializers.ListField(child=serializers.CharField())


class ScramUserListView(APIView):
    """List SCRAM users (GET) or create / change one credential (POST)."""

    roles = {"GET": ADMIN, "POST": ADMIN}

    @extend_schema(
        operation_id="listScramUsers", responses=ScramUserSerializer(many=True), tags=TAGS
    )
    def get(self, request: Request) -> Response:
        return Response([user.fields() for user in scram_users.scram_user_list()])

    @with_body(
        ScramUserUpsertSerializer,
        operation_id="upsertScramUser",
        responses=ScramUserSerializer,
        tags=TAGS,
    )
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        return Response(scram_users.scram_user_upsert(**data).fields())


class ScramUserDetailView(APIView):
    """Delete a user's credential for one mechanism, or all of them."""

    roles = {"DELETE": ADMIN}

    @extend_schema(
        operation_id="deleteScramUser",
        parameters=[
            OpenApiParameter(
                "mechanism",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                required=False,
                enum=list(scram_users.MECHANISMS),
                description="Only this mechanism's credential (default: all of them).",
            )
        ],
        responses={200: ScramUserDeletedSerializer},
        tags=TAGS,
    )
    def delete(self, request: Request, name: str) -> Response:
        mechanism = (request.query_params.get("mechanism") or "").upper() or None
        if mechanism is not None and mechanism not in scram_users.MECHANISMS:
            choices = ", ".join(scram_users.MECHANISMS)
            raise BadRequest(f"mechanism: {mechanism!r} is not one of {choices}")
        deleted = scram_users.scram_user_delete(name=name, mechanism=mechanism)
        return Response({"name": name, "deleted": deleted})

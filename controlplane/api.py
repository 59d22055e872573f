"""``/api/`` views for users, roles, tokens and the audit log.

Thin DRF views over :mod:`controlplane.services`; the role each method needs is declared on
the view (``roles``), checked by :class:`~controlplane.roles.RolePermission`.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane import services
from controlplane.errors import BadRequest, NotFound
from controlplane.models import AuditEntry
from controlplane.roles import ADMIN, OPERATOR, ROLES, VIEWER, role_of
from controlplane.validation import with_body


class UserSerializer(serializers.Serializer):
    username = serializers.CharField()
    email = serializers.CharField(allow_blank=True)
    role = serializers.CharField(allow_null=True)
    is_active = serializers.BooleanField()
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)


class UserCreateSerializer(serializers.Serializer):
    username = serializers.RegexField(r"^[\w.@+-]{1,150}$")
    password = serializers.CharField(min_length=8, max_length=128)
    role = serializers.ChoiceField(choices=ROLES)
    email = serializers.EmailField(required=False, allow_blank=True, default="")


class UserUpdateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLES, required=False)
    password = serializers.CharField(min_length=8, max_length=128, required=False)
    is_active = serializers.BooleanField(required=False)


class TokenSerializer(serializers.Serializer):
    username = serializers.CharField()
    token = serializers.CharField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField(allow_null=True)


class AuditEntrySerializer(serializers.ModelSerializer):
    succeeded = serializers.BooleanField(read_only=True)

    class Meta:
        model = AuditEntry
        fields = [
            "id",
            "at",
            "username",
            "method",
            "path",
            "action",
            "target",
            "request_body",
            "status_code",
            "succeeded",
            "result",
            "remote_addr",
        ]


def _user_data(user: User) -> dict[str, Any]:
    return {
        "username": user.username,
        "email": user.email,
        "role": role_of(user) if user.is_active else None,
        "is_active": user.is_active,
        "date_joined": user.date_joined,
        "last_login": user.last_login,
    }


class MeView(APIView):
    """Who the caller is and which role they hold."""

    @extend_schema(responses=MeSerializer)
    def get(self, request: Request) -> Response:
        return Response({"username": request.user.get_username(), "role": role_of(request.user)})


class UserListView(APIView):
    """List users and create one with a role (admins only)."""

    roles = {"GET": ADMIN, "POST": ADMIN}

    @extend_schema(responses=UserSerializer(many=True))
    def get(self, request: Request) -> Response:
        users = User.objects.order_by("username").prefetch_related("groups")
        return Response([_user_data(u) for u in users])

    @with_body(UserCreateSerializer, responses={201: UserSerializer})
    def post(self, request: Request, data: dict[str, Any]) -> Response:
        user = services.user_create(**data)
        return Response(_user_data(user), status=201)


class UserDetailView(APIView):
    """Read, change (role, password, active) or delete one user (admins only)."""

    roles = {"GET": ADMIN, "PATCH": ADMIN, "DELETE": ADMIN}

    @extend_schema(responses=UserSerializer)
    def get(self, request: Request, username: str) -> Response:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise NotFound(f"user {username!r} does not exist")
        return Response(_user_data(user))

    @with_body(UserUpdateSerializer, responses=UserSerializer)
    def patch(self, request: Request, data: dict[str, Any], username: str) -> Response:
        return Response(_user_data(services.user_update(username=username, **data)))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, username: str) -> Response:
        if username == request.user.get_username():
            raise BadRequest("you cannot delete your own account")
        services.user_delete(username=username)
        return Response(status=204)


class TokenView(APIView):
    """Create (or rotate) the caller's own API token: ``Authorization: Token <key>``."""

    roles = {"POST": VIEWER}

    @extend_schema(request=None, responses={201: TokenSerializer})
    def post(self, request: Request) -> Response:
        token = services.token_rotate(user=request.user)
        return Response({"username": request.user.get_username(), "token": token.key}, status=201)


class AuditListView(APIView):
    """The audit log, newest first; filter with ``username``, ``action``, ``method``."""

    roles = {"GET": OPERATOR}

    @extend_schema(responses=AuditEntrySerializer(many=True))
    def get(self, request: Request) -> Response:
        entries = AuditEntry.objects.all()
        for field in ("username", "action", "method"):
            value = request.query_params.get(field)
            if value:
                entries = entries.filter(**{field: value})
        try:
            limit = min(int(request.query_params.get("limit", "100")), 1000)
            offset = max(int(request.query_params.get("offset", "0")), 0)
        except ValueError:
            raise BadRequest("limit and offset must be integers") from None
        if limit < 1:
            raise BadRequest("limit must be at least 1")
        page = entries[offset : offset + limit]
        return Response(AuditEntrySerializer(page, many=True).data)

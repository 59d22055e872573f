"""REST Proxy v3 ACLs: list (filtered), create one, create a batch, delete by filter.

Theory of operation
-------------------
Paths, bodies and status codes follow Confluent's v3 API:

* ``GET /kafka/v3/clusters/{id}/acls?resource_type=&resource_name=&pattern_type=&principal=
  &host=&operation=&permission=`` → ``KafkaAclList`` (missing filters mean ANY);
* ``POST .../acls`` with one ACL → 201 (empty body);
* ``POST .../acls:batch`` with ``{"data": [ACL, ...]}`` → 204;
* ``DELETE .../acls?<filters>`` → 200 ``{"data": [the deleted ACLs]}``.

Every value is checked here (400 naming the field) and turned into confluent-kafka's
``AclBinding`` / ``AclBindingFilter``; requests go through the control plane's shared
AdminClient (``controlplane.cluster.gateway().admin()``), i.e. CreateAcls / DescribeAcls /
DeleteAcls on the brokers. Confluent calls the cluster resource CLUSTER, confluent-kafka BROKER:
:func:`confluent_resource_type` and :func:`kafka_resource_type` translate (``manage.py
acls`` uses them too). ACLs are sensitive, so reading needs the operator role and changing
them admin; the audit middleware records every change.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.errors import BadRequest, KafkaUnavailable
from controlplane.rest_v3 import V3, resource_serializer
from controlplane.roles import ADMIN, OPERATOR
from controlplane.validation import validated

__all__ = ["AclBatchCreateView", "AclListView", "acl_filter", "binding_of"]

TIMEOUT = 10.0
RESOURCE_TYPES = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES = ("LITERAL", "PREFIXED")
OPERATIONS = (
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
)
PERMISSIONS = ("ALLOW", "DENY")
# Filters also accept ANY (and MATCH for the pattern type).
_FILTER_CHOICES: dict[str, tuple[str, ...]] = {
    "resource_type": ("ANY", *RESOURCE_TYPES),
    "pattern_type": ("ANY", "MATCH", *PATTERN_TYPES),
    "operation": ("ANY", *OPERATIONS),
    "permission": ("ANY", *PERMISSIONS),
}
_FILTER_FIELDS = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission",
)


def _upper(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


class AclSerializer(serializers.Serializer):
    """One ACL as Confluent's create body names it."""

    resource_type = serializers.ChoiceField(choices=RESOURCE_TYPES)
    resource_name = serializers.CharField()
    pattern_type = serializers.ChoiceField(choices=PATTERN_TYPES)
    principal = serializers.CharField()
    host = serializers.CharField()
    operation = serializers.ChoiceField(choices=OPERATIONS)
    permission = serializers.ChoiceField(choices=PERMISSIONS)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: _upper(v) if k in _FILTER_CHOICES else v for k, v in data.items()}
        return super().to_internal_value(data)

    def validate_principal(self, value: str) -> str:
        kind, sep, name = value.partition(":")
        if not sep or not kind or not name:
            raise serializers.ValidationError("must be TYPE:NAME, e.g. User:alice")
        return value


class AclBatchSerializer(serializers.Serializer):
    data = AclSerializer(many=True, allow_empty=False)


AclResourceSerializer, AclListSerializer = resource_serializer(
    "KafkaAcl", {name: serializers.CharField() for name in _FILTER_FIELDS}
)


class AclDataListSerializer(serializers.Serializer):
    data = AclResourceSerializer(many=True)


FILTER_PARAMS = [
    OpenApiParameter(name, OpenApiTypes.STR, OpenApiParameter.QUERY, required=False)
    for name in _FILTER_FIELDS
]


# -- conversion -----------------------------------------------------------------------------
def confluent_resource_type(rtype: str) -> str:
    """Kafka's (and Confluent's) resource type → confluent-kafka's (it calls the cluster
    BROKER)."""
    return "BROKER" if rtype == "CLUSTER" else rtype


def kafka_resource_type(binding: Any) -> str:
    """A confluent-kafka binding's resource type as Kafka names it (CLUSTER, not BROKER)."""
    name = binding.restype.name
    return "CLUSTER" if name == "BROKER" else name


def binding_of(acl: dict[str, Any]) -> Any:
    """The confluent-kafka ``AclBinding`` of a validated :class:`AclSerializer` dict."""
    from confluent_kafka.admin import AclBinding

    return AclBinding(
        confluent_resource_type(acl["resource_type"]),
        acl["resource_name"],
        acl["pattern_type"],
        acl["principal"],
        acl["host"],
        acl["operation"],
        acl["permission"],
    )


def acl_filter(params: Any) -> Any:
    """An ``AclBindingFilter`` from query parameters (absent means ANY); 400 naming a bad one."""
    from confluent_kafka.admin import AclBindingFilter

    values: dict[str, Any] = {}
    for name in _FILTER_FIELDS:
        raw = params.get(name)
        if raw in (None, ""):
            values[name] = "ANY" if name in _FILTER_CHOICES else None
            continue
        if name in _FILTER_CHOICES:
            raw = raw.upper()
            if raw not in _FILTER_CHOICES[name]:
                choices = ", ".join(_FILTER_CHOICES[name])
                raise BadRequest(f"{name}: {raw!r} is not one of {choices}")
        values[name] = raw
    return AclBindingFilter(
        confluent_resource_type(values["resource_type"]),
        values["resource_name"],
        values["pattern_type"],
        values["principal"],
        values["host"],
        values["operation"],
        values["permission"],
    )


def acl_fields(binding: Any) -> dict[str, str]:
    return {
        "resource_type": kafka_resource_type(binding),
        "resource_name": binding.name,
        "pattern_type": binding.resource_pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission": binding.permission_type.name,
    }


def acl_resource(v3: V3, binding: Any) -> dict[str, Any]:
    fields = acl_fields(binding)
    return {
        "kind": "KafkaAcl",
        "metadata": {"self": f"{v3.url('acls')}?{urlencode(fields)}"},
        "cluster_id": v3.cluster_id,
        **fields,
    }


def _result(future: Any) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(TIMEOUT)
    except KafkaException as exc:
        error = exc.args[0]
        if error.retriable():
            raise KafkaUnavailable(f"acls: {error.str()}") from None
        raise BadRequest(f"acls: {error.name()}: {error.str()}") from None
    except TimeoutError:
        raise KafkaUnavailable(f"acls: no answer from the brokers in {TIMEOUT:g} s") from None
    except ValueError as exc:
        raise BadRequest(f"acls: {exc}") from None


def _admin() -> Any:
    from controlplane.cluster import gateway

    return gateway().admin()


def create_acls(bindings: list[Any]) -> None:
    try:
        futures = _admin().create_acls(bindings, request_timeout=TIMEOUT)
    except (ValueError, TypeError) as exc:
        raise BadRequest(f"acls: {exc}") from None
    for future in futures.values():
        _result(future)


def acl_sort_key(b: Any) -> tuple[str, ...]:
    """Bindings in Kafka's order: resource type, name, pattern, principal, host, operation,
    permission (what the REST list and ``manage.py acls`` print)."""
    return tuple(acl_fields(b).values())


def _filtered(request: Request, call: Callable[[Any], Any]) -> Any:
    """``call`` with the query's ACL filter; a value confluent-kafka refuses is a 400."""
    flt = acl_filter(request.query_params)
    try:
        return call(flt)
    except (ValueError, TypeError) as exc:
        raise BadRequest(f"acls: {exc}") from None


# -- views ----------------------------------------------------------------------------------
class AclListView(APIView):
    """List (GET), create one (POST) or delete by filter (DELETE) ACLs."""

    roles = {"GET": OPERATOR, "POST": ADMIN, "DELETE": ADMIN}

    @extend_schema(
        operation_id="getKafkaAcls",
        parameters=FILTER_PARAMS,
        responses=AclListSerializer,
        tags=["REST proxy v3: ACLs"],
    )
    def get(self, request: Request, cluster_id: str) -> Response:
        v3 = V3(request, cluster_id)
        future = _filtered(request, lambda f: _admin().describe_acls(f, request_timeout=TIMEOUT))
        found = sorted(_result(future) or (), key=acl_sort_key)
        body = v3.collection("KafkaAclList", ("acls",), [acl_resource(v3, b) for b in found])
        return Response(body)

    @extend_schema(
        operation_id="createKafkaAcls",
        request=AclSerializer,
        responses={201: None},
        tags=["REST proxy v3: ACLs"],
    )
    def post(self, request: Request, cluster_id: str) -> Response:
        V3(request, cluster_id)
        create_acls([binding_of(validated(AclSerializer, request.data))])
        return Response(status=201)

    @extend_schema(
        operation_id="deleteKafkaAcls",
        parameters=FILTER_PARAMS,
        responses=AclDataListSerializer,
        tags=["REST proxy v3: ACLs"],
    )
    def delete(self, request: Request, cluster_id: str) -> Response:
        v3 = V3(request, cluster_id)
        futures = _filtered(request, lambda f: _admin().delete_acls([f], request_timeout=TIMEOUT))
        deleted: list[Any] = []
        for future in futures.values():
            deleted += list(_result(future) or ())
        deleted.sort(key=acl_sort_key)
        return Response({"data": [acl_resource(v3, b) for b in deleted]})


class AclBatchCreateView(APIView):
    """Create many ACLs: ``{"data": [ACL, ...]}`` → 204."""

    roles = {"POST": ADMIN}

    @extend_schema(
        operation_id="batchCreateKafkaAcls",
        request=AclBatchSerializer,
        responses={204: None},
        tags=["REST proxy v3: ACLs"],
    )
    def post(self, request: Request, cluster_id: str) -> Response:
        V3(request, cluster_id)
        data = validated(AclBatchSerializer, request.data)
        create_acls([binding_of(item) for item in data["data"]])
        return Response(status=204)

"""What every REST Proxy v3 resource shares: cluster check, URLs, resource shapes, errors.

The brokers, topics and groups apps each serve part of Confluent's v3 API; this module is
the shape they share, so a resource reads the same whichever app serves it.

Confluent's v3 resources all look alike: ``{"kind": "KafkaTopic", "metadata": {"self": <url>,
"resource_name": "crn:///kafka=<cluster>/topic=<name>"}, ...fields, "<link>": {"related":
<url>}}``, and collections ``{"kind": "KafkaTopicList", "metadata": {"self": <url>, "next":
null}, "data": [...]}``. :class:`V3` builds those for one request (absolute URLs from the
request's host), after checking that the path's ``cluster_id`` is this cluster's
(``settings.WEIR_CLUSTER_ID``) — any other id is 404, as with Confluent's proxy.

:func:`raise_for_kafka_error` turns a Kafka protocol error code (with the broker's message) into
the HTTP status Confluent uses for it, so a bad config or an existing topic reads the same as
there.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema
from kio.schema.errors import ErrorCode
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.errors import ApiError, BadRequest, Conflict, KafkaUnavailable, NotFound

__all__ = [
    "V3",
    "ListMetadataSerializer",
    "RelationshipSerializer",
    "ResourceMetadataSerializer",
    "SynonymSerializer",
    "V3ReadView",
    "config_fields",
    "kafka_error_status",
    "parse_int",
    "raise_for_kafka_error",
    "resource_serializer",
    "v3_get",
]

# Kafka errors that mean "retry later" rather than "your request is wrong".
_RETRIABLE = {
    ErrorCode.not_controller,
    ErrorCode.request_timed_out,
    ErrorCode.leader_not_available,
    ErrorCode.not_leader_or_follower,
    ErrorCode.not_enough_replicas,
    ErrorCode.not_enough_replicas_after_append,
    ErrorCode.network_exception,
    ErrorCode.coordinator_not_available,
    ErrorCode.broker_not_available,
    ErrorCode.kafka_storage_error,
}


def kafka_error_status(code: int) -> int:
    """The HTTP status Confluent's v3 API answers for Kafka error ``code``."""
    if code == ErrorCode.unknown_topic_or_partition or code == ErrorCode.unknown_topic_id:
        return 404
    if code == ErrorCode.topic_already_exists:
        return 409
    if code in _RETRIABLE:
        return 503
    if code == ErrorCode.message_too_large or code == ErrorCode.record_list_too_large:
        return 413
    if code in (ErrorCode.topic_authorization_failed, ErrorCode.cluster_authorization_failed):
        return 403
    return 400


def raise_for_kafka_error(code: int, message: str | None, *, what: str) -> None:
    """Raise the API error for a Kafka error ``code`` (no-op for NONE)."""
    if code == ErrorCode.none:
        return
    try:
        name = ErrorCode(code).name.upper()
    except ValueError:
        name = f"error {code}"
    text = f"{what}: {message}" if message else f"{what}: {name}"
    status = kafka_error_status(code)
    errors = {404: NotFound, 409: Conflict, 503: KafkaUnavailable, 400: BadRequest}
    cls = errors.get(status)
    if cls is None:
        raise ApiError(text, status_code=status)
    raise cls(text)


def parse_int(text: str, *, what: str, error_code: int | None = None) -> int:
    """A path segment that must be a non-negative integer, else 404 naming it (with
    ``error_code`` in the body when the API has its own, as v2's 40402)."""
    try:
        value = int(text)
    except ValueError:
        raise NotFound(
            f"{what} {text!r} not found: it must be an integer", error_code=error_code
        ) from None
    if value < 0 or value > 2**31 - 1:
        raise NotFound(f"{what} {text!r} not found", error_code=error_code)
    return value


class V3:
    """URL and resource builders for one v3 request on cluster ``cluster_id``."""

    def __init__(self, request: Request, cluster_id: str) -> None:
        if cluster_id != settings.WEIR_CLUSTER_ID:
            raise NotFound(f"cluster {cluster_id!r} not found (this cluster is {self.id()!r})")
        self.request = request
        self.cluster_id = cluster_id
        self.base = request.build_absolute_uri(f"/kafka/v3/clusters/{cluster_id}")
        self.crn_base = f"crn:///kafka={cluster_id}"

    @staticmethod
    def id() -> str:
        return str(settings.WEIR_CLUSTER_ID)

    def url(self, *parts: object) -> str:
        return "/".join([self.base, *(str(p) for p in parts)])

    def crn(self, *parts: str) -> str:
        return "/".join([self.crn_base, *parts])

    def related(self, *parts: object) -> dict[str, str]:
        return {"related": self.url(*parts)}

    def resource(
        self, kind: str, self_parts: tuple[object, ...], crn_parts: tuple[str, ...], **fields: Any
    ) -> dict[str, Any]:
        """One resource: kind, metadata (self, resource_name), cluster_id and ``fields``."""
        return {
            "kind": kind,
            "metadata": {"self": self.url(*self_parts), "resource_name": self.crn(*crn_parts)},
            "cluster_id": self.cluster_id,
            **fields,
        }

    def listing(
        self, kind: str, self_parts: tuple[object, ...], data: list[dict[str, Any]]
    ) -> Response:
        """The response to a list request: :meth:`collection` with status 200."""
        return Response(self.collection(kind, self_parts, data))

    def collection(
        self, kind: str, self_parts: tuple[object, ...], data: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """A list resource (no paging: ``next`` is always null)."""
        return {
            "kind": kind,
            "metadata": {"self": self.url(*self_parts), "next": None},
            "data": data,
        }


def v3_get(
    operation_id: str, responses: Any, tags: list[str], *parameters: OpenApiParameter
) -> dict[str, Any]:
    """The OpenAPI description of one v3 GET (``V3ReadView.read_schema``): its operation id,
    response serializer, tags and the path parameters typed beyond a string."""
    schema: dict[str, Any] = dict(operation_id=operation_id, responses=responses, tags=tags)
    if parameters:
        schema["parameters"] = list(parameters)
    return schema


class V3ReadView(APIView):
    """A v3 endpoint that reads: ``GET`` checks the cluster, builds the :class:`V3` and
    answers what ``read(v3, **path)`` returns (a resource dict, or a ``v3.listing``).

    A subclass sets ``read_schema`` (drf-spectacular's ``extend_schema`` arguments for its
    GET) and writes ``read``; its other methods stay plain DRF methods.
    """

    read_schema: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "read" not in cls.__dict__:
            return

        # A function per class: extend_schema records the schema on the function itself.
        def get(self: V3ReadView, request: Request, cluster_id: str, **path: str) -> Response:
            answer = self.read(V3(request, cluster_id), **path)
            return answer if isinstance(answer, Response) else Response(answer)

        cls.get = extend_schema(**cls.read_schema)(get)  # type: ignore[method-assign]

    def read(self, v3: V3, **path: str) -> dict[str, Any] | Response:
        raise NotImplementedError


# -- schema serializers (documentation and schemathesis' response checks) --------------------
class ResourceMetadataSerializer(serializers.Serializer):
    self = serializers.CharField()
    resource_name = serializers.CharField(allow_null=True)


class ListMetadataSerializer(serializers.Serializer):
    self = serializers.CharField()
    next = serializers.CharField(allow_null=True)


class RelationshipSerializer(serializers.Serializer):
    related = serializers.CharField()


def resource_serializer(
    name: str, fields: dict[str, serializers.Field]
) -> tuple[type[serializers.Serializer], type[serializers.Serializer]]:
    """A v3 resource serializer class named ``name`` and its ``<name>List`` collection."""
    attrs: dict[str, Any] = {
        "kind": serializers.CharField(),
        "metadata": ResourceMetadataSerializer(),
        "cluster_id": serializers.CharField(),
        **fields,
    }
    item = type(name, (serializers.Serializer,), attrs)
    listing = type(
        f"{name}List",
        (serializers.Serializer,),
        {
            "kind": serializers.CharField(),
            "metadata": ListMetadataSerializer(),
            "data": item(many=True),
        },
    )
    return item, listing


class SynonymSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True)
    source = serializers.CharField()


def config_fields() -> dict[str, serializers.Field]:
    """The fields of every v3 config resource (broker, cluster-wide and topic configs)."""
    return {
        "name": serializers.CharField(),
        "value": serializers.CharField(allow_null=True),
        "is_default": serializers.BooleanField(),
        "is_read_only": serializers.BooleanField(),
        "is_sensitive": serializers.BooleanField(),
        "source": serializers.CharField(),
        "synonyms": SynonymSerializer(many=True),
    }

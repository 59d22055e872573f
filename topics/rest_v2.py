"""REST Proxy v2: topics, partitions, offsets and produce in every embedded format.

Responses are ``application/vnd.kafka.v2+json`` (or plain JSON when asked for); errors use
Confluent's five-digit codes: 40401 topic not found, 40402 partition not found, 42201/42202 a
key/value schema missing, 42203 a record that cannot be converted, 42205 an invalid schema (or
a schema in the json or binary format), 40801 (HTTP 408, as Confluent) a schema the registry
would not register or find, 415 an unsupported request content type, 406 an ``Accept`` it
cannot answer.

Produce takes ``application/vnd.kafka.json.v2+json`` (keys and values are any JSON),
``application/vnd.kafka.binary.v2+json`` (base64), or through the Schema Registry
``application/vnd.kafka.avro.v2+json``, ``...jsonschema...`` and ``...protobuf...`` (with
``key_schema``/``key_schema_id`` and ``value_schema``/``value_schema_id``; the answer names
the ids in ``key_schema_id``/``value_schema_id``), and answers one ``offsets`` entry per record
in order: ``{"partition", "offset", "error_code": null, "error": null}`` when written,
Confluent's per-record ``error_code`` with a message otherwise (50002 a Kafka error, 50003 a
retriable one, 40301 not authorized).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from brokers.rest.configs import config_describe
from controlplane.content import (
    SCHEMA_V2_PARSERS,
    KafkaBinaryV2JsonParser,
    KafkaJsonV2JsonParser,
    embedded_format,
)
from controlplane.errors import ApiError, KafkaUnavailable, NotFound
from controlplane.proxy import KafkaV2View
from topics import produce, selectors
from weir.metadata.image import PartitionImage

PARTITION = OpenApiParameter("partition", OpenApiTypes.INT, OpenApiParameter.PATH)
TAGS = ["REST proxy v2: topics"]
PRODUCE_TYPES = (
    "application/vnd.kafka.json.v2+json",
    "application/vnd.kafka.binary.v2+json",
    *produce.V2_SCHEMA_TYPES,
)
PRODUCE_PARSERS = [KafkaJsonV2JsonParser, KafkaBinaryV2JsonParser, *SCHEMA_V2_PARSERS]


# -- schemas -------------------------------------------------------------------------------
class V2ReplicaSerializer(serializers.Serializer):
    broker = serializers.IntegerField()
    leader = serializers.BooleanField()
    in_sync = serializers.BooleanField()


class V2PartitionSerializer(serializers.Serializer):
    partition = serializers.IntegerField()
    leader = serializers.IntegerField()
    replicas = V2ReplicaSerializer(many=True)


class V2TopicSerializer(serializers.Serializer):
    name = serializers.CharField()
    configs = serializers.DictField(child=serializers.CharField(allow_null=True))
    partitions = V2PartitionSerializer(many=True)


class V2OffsetsSerializer(serializers.Serializer):
    beginning_offset = serializers.IntegerField()
    end_offset = serializers.IntegerField()


class V2RecordSerializer(serializers.Serializer):
    key = serializers.JSONField(required=False, allow_null=True)
    value = serializers.JSONField(required=False, allow_null=True)
    partition = serializers.IntegerField(required=False, allow_null=True, min_value=0)


class V2ProduceSerializer(serializers.Serializer):
    records = V2RecordSerializer(many=True)


class V2PartitionRecordSerializer(serializers.Serializer):
    key = serializers.JSONField(required=False, allow_null=True)
    value = serializers.JSONField(required=False, allow_null=True)


class V2PartitionProduceSerializer(serializers.Serializer):
    records = V2PartitionRecordSerializer(many=True)


class V2OffsetSerializer(serializers.Serializer):
    partition = serializers.IntegerField(allow_null=True)
    offset = serializers.IntegerField(allow_null=True)
    error_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField(allow_null=True)


class V2ProduceResponseSerializer(serializers.Serializer):
    key_schema_id = serializers.IntegerField(allow_null=True)
    value_schema_id = serializers.IntegerField(allow_null=True)
    offsets = V2OffsetSerializer(many=True)


# -- shapes ----------------------------------------------------------------------------------
def partition_v2(p: PartitionImage) -> dict[str, Any]:
    return {
        "partition": p.partition,
        "leader": p.leader,
        "replicas": [
            {"broker": b, "leader": b == p.leader, "in_sync": b in p.isr} for b in p.replicas
        ],
    }


# Confluent's per-record error codes (its AbstractProduceAction.errorCodeFromProducerException,
# with rest-utils' KafkaExceptionMapper values): authentication, authorization, a retriable
# Kafka error and any other Kafka error. (Its older documentation still names 1 and 2.)
AUTHENTICATION_ERROR_CODE = 40101
AUTHORIZATION_ERROR_CODE = 40301
RETRIABLE_ERROR_CODE = 50003
KAFKA_ERROR_CODE = 50002


def _record_error_code(error: ApiError) -> int:
    """The ``error_code`` of a record that was not written, as Confluent's proxy reports it."""
    if error.status_code == 401:
        return AUTHENTICATION_ERROR_CODE
    if error.status_code == 403:
        return AUTHORIZATION_ERROR_CODE
    if isinstance(error, KafkaUnavailable) or error.status_code == 503:
        return RETRIABLE_ERROR_CODE
    return KAFKA_ERROR_CODE


def _produce(request: Request, topic_name: str, partition: int | None) -> Response:
    """Shared body of the two v2 produce endpoints."""
    fmt = embedded_format(request.content_type or "")
    if fmt not in ("json", "binary", "avro", "jsonschema", "protobuf"):
        raise ApiError(
            f"unsupported Content-Type {request.content_type or '(none)'!r} for produce: "
            f"use {', '.join(PRODUCE_TYPES)}",
            status_code=415,
        )
    topic = selectors.topic_get(name=topic_name, v2=True)
    if partition is not None:
        selectors.partition_get(topic=topic, partition=partition, v2=True)
    key_schema_id = value_schema_id = None
    if fmt in ("json", "binary"):
        records = produce.parse_v2_body(request.data, embedded=fmt, partition=partition)
    else:
        batch = produce.parse_v2_schema_body(
            request.data, embedded=fmt, topic=topic_name, partition=partition
        )
        records = batch.records
        key_schema_id, value_schema_id = batch.key_schema_id, batch.value_schema_id
    for i, record in enumerate(records):
        if record.partition is not None and record.partition not in topic.partitions:
            raise NotFound(
                f"records[{i}]: partition {record.partition} of topic {topic_name!r} not found "
                f"(the topic has {len(topic.partitions)} partitions)",
                error_code=40402,
            )
    outcomes = produce.produce(topic=topic, records=list(records), v2=True)
    offsets = []
    for outcome in outcomes:
        if isinstance(outcome, ApiError):
            offsets.append(
                {
                    "partition": None,
                    "offset": None,
                    "error_code": _record_error_code(outcome),
                    "error": outcome.message,
                }
            )
        else:
            offsets.append(
                {
                    "partition": outcome.partition,
                    "offset": outcome.offset,
                    "error_code": None,
                    "error": None,
                }
            )
    return Response(
        {"key_schema_id": key_schema_id, "value_schema_id": value_schema_id, "offsets": offsets}
    )


class TopicNamesView(KafkaV2View):
    """Every topic's name."""

    @extend_schema(
        operation_id="listTopicsV2",
        responses={200: {"type": "array", "items": {"type": "string"}}},
        tags=TAGS,
    )
    def get(self, request: Request) -> Response:
        return Response([t.name for t in selectors.topic_list()])


class TopicView(KafkaV2View):
    """A topic's configs and partitions; POST produces records to it."""

    parser_classes = PRODUCE_PARSERS

    @extend_schema(operation_id="getTopicV2", responses=V2TopicSerializer, tags=TAGS)
    def get(self, request: Request, topic_name: str) -> Response:
        topic = selectors.topic_get(name=topic_name, v2=True)
        configs = {
            e.name: (None if e.is_sensitive else e.value)
            for e in config_describe(kind="topic", name=topic_name)
        }
        return Response(
            {
                "name": topic.name,
                "configs": configs,
                "partitions": [partition_v2(p) for p in selectors.partition_list(topic=topic)],
            }
        )

    @extend_schema(
        operation_id="produceToTopicV2",
        request=V2ProduceSerializer,
        responses=V2ProduceResponseSerializer,
        tags=TAGS,
    )
    def post(self, request: Request, topic_name: str) -> Response:
        return _produce(request, topic_name, None)


class PartitionsView(KafkaV2View):
    """A topic's partitions: leader and replicas."""

    @extend_schema(
        operation_id="listPartitionsV2", responses=V2PartitionSerializer(many=True), tags=TAGS
    )
    def get(self, request: Request, topic_name: str) -> Response:
        topic = selectors.topic_get(name=topic_name, v2=True)
        return Response([partition_v2(p) for p in selectors.partition_list(topic=topic)])


class PartitionView(KafkaV2View):
    """One partition; POST produces records to exactly this partition."""

    parser_classes = PRODUCE_PARSERS

    @extend_schema(
        operation_id="getPartitionV2",
        parameters=[PARTITION],
        responses=V2PartitionSerializer,
        tags=TAGS,
    )
    def get(self, request: Request, topic_name: str, partition: str) -> Response:
        found = selectors.partition_at(topic_name=topic_name, partition=partition, v2=True)
        return Response(partition_v2(found))

    @extend_schema(
        operation_id="produceToPartitionV2",
        parameters=[PARTITION],
        request=V2PartitionProduceSerializer,
        responses=V2ProduceResponseSerializer,
        tags=TAGS,
    )
    def post(self, request: Request, topic_name: str, partition: str) -> Response:
        selectors.topic_get(name=topic_name, v2=True)
        index = selectors.partition_number(topic_name=topic_name, text=partition, v2=True)
        return _produce(request, topic_name, index)


class PartitionOffsetsView(KafkaV2View):
    """A partition's first and next offsets (log start and high watermark)."""

    @extend_schema(
        operation_id="getPartitionOffsetsV2",
        parameters=[PARTITION],
        responses=V2OffsetsSerializer,
        tags=TAGS,
    )
    def get(self, request: Request, topic_name: str, partition: str) -> Response:
        p = selectors.partition_at(topic_name=topic_name, partition=partition, v2=True)
        found = selectors.partition_offsets(topic=topic_name, partition=p.partition)
        return Response(
            {"beginning_offset": found.beginning_offset, "end_offset": found.end_offset}
        )

"""REST Proxy v3: topics, topic configs, partitions, replicas, reassignments, produce.

Thin DRF views over :mod:`topics.selectors`, :mod:`topics.services` and :mod:`topics.produce`,
shaped like Confluent's v3 API (see :mod:`controlplane.rest_v3`). Creating and deleting topics
needs the admin role; growing a topic, changing its configs and producing need operator.

Produce accepts Confluent's streaming body: several JSON documents concatenated in one request
(:class:`ConcatenatedJsonParser`). One document gets one JSON answer with the record's own
status; several get ``200`` and one delivery report per line, each with its own
``error_code`` (200 when written), in request order. Keys and values may be AVRO, JSONSCHEMA
or PROTOBUF through the Schema Registry (:mod:`topics.produce`); their reports then name the
``subject``, ``schema_id`` and ``schema_version`` written with, as Confluent's do.
"""

from __future__ import annotations

import datetime
import json
import re
import time
import uuid
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.rest.configs import ConfigOp, config_get
from brokers.rest.selectors import broker_get
from brokers.rest.v3 import (
    ConfigWriteView,
    config_resource,
    config_resources,
    config_serializers,
)
from controlplane.cluster import gateway
from controlplane.errors import ApiError, BadRequest, NotFound
from controlplane.rest_v3 import (
    V3,
    RelationshipSerializer,
    V3ReadView,
    parse_int,
    resource_serializer,
    v3_get,
)
from controlplane.roles import ADMIN
from controlplane.validation import validated
from topics import produce, selectors, services
from weir.metadata.image import PartitionImage, TopicImage
from weir.registry.serde import Resolved

# Upper bound on partitions a REST call may create at once (a typo should not create millions).
MAX_PARTITIONS = 1000
_NO_ID = uuid.UUID(int=0)

PARTITION_ID = OpenApiParameter("partition_id", OpenApiTypes.INT, OpenApiParameter.PATH)
BROKER_ID = OpenApiParameter("broker_id", OpenApiTypes.INT, OpenApiParameter.PATH)
TAG_TOPICS = ["REST proxy v3: topics"]
TAG_CONFIGS = ["REST proxy v3: topic configs"]
TAG_PARTITIONS = ["REST proxy v3: partitions"]
TAG_RECORDS = ["REST proxy v3: records"]


# -- schemas -------------------------------------------------------------------------------
TopicSerializer, TopicListSerializer = resource_serializer(
    "KafkaTopic",
    {
        "topic_name": serializers.CharField(),
        "is_internal": serializers.BooleanField(),
        "replication_factor": serializers.IntegerField(),
        "partitions_count": serializers.IntegerField(),
        "partitions": RelationshipSerializer(),
        "configs": RelationshipSerializer(),
        "partition_reassignments": RelationshipSerializer(),
        "authorized_operations": serializers.ListField(child=serializers.CharField()),
    },
)
TopicConfigSerializer, TopicConfigListSerializer = config_serializers("topic")
PartitionSerializer, PartitionListSerializer = resource_serializer(
    "KafkaPartition",
    {
        "topic_name": serializers.CharField(),
        "partition_id": serializers.IntegerField(),
        "leader": RelationshipSerializer(allow_null=True),
        "replicas": RelationshipSerializer(),
        "reassignment": RelationshipSerializer(),
    },
)
PartitionOffsetsSerializer, _ = resource_serializer(
    "KafkaPartitionWithOffsets",
    {
        "topic_name": serializers.CharField(),
        "partition_id": serializers.IntegerField(),
        "earliest_offset": serializers.IntegerField(),
        "latest_offset": serializers.IntegerField(),
    },
)
OFFSET_TYPE = OpenApiParameter(
    "offset_type",
    OpenApiTypes.STR,
    OpenApiParameter.QUERY,
    enum=["earliest_and_latest"],
    description="the only type Confluent's proxy knows (its default)",
)
ReplicaSerializer, ReplicaListSerializer = resource_serializer(
    "KafkaReplica",
    {
        "topic_name": serializers.CharField(),
        "partition_id": serializers.IntegerField(),
        "broker_id": serializers.IntegerField(),
        "is_leader": serializers.BooleanField(),
        "is_in_sync": serializers.BooleanField(),
        "broker": RelationshipSerializer(),
    },
)
ReassignmentSerializer, ReassignmentListSerializer = resource_serializer(
    "KafkaReassignment",
    {
        "topic_name": serializers.CharField(),
        "partition_id": serializers.IntegerField(),
        "adding_replicas": serializers.ListField(child=serializers.IntegerField()),
        "removing_replicas": serializers.ListField(child=serializers.IntegerField()),
        "replicas": RelationshipSerializer(),
    },
)


class ReplicasAssignmentSerializer(serializers.Serializer):
    partition_id = serializers.IntegerField(min_value=0, max_value=MAX_PARTITIONS - 1)
    broker_ids = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=2**31 - 1), min_length=1
    )


class ConfigNameValueSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True, allow_blank=True, required=False)


class CreateTopicSerializer(serializers.Serializer):
    topic_name = serializers.CharField(max_length=249)
    partitions_count = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_PARTITIONS
    )
    replication_factor = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=32767
    )
    replicas_assignments = ReplicasAssignmentSerializer(many=True, required=False)
    configs = ConfigNameValueSerializer(many=True, required=False)
    validate_only = serializers.BooleanField(required=False, default=False)


class UpdatePartitionCountSerializer(serializers.Serializer):
    partitions_count = serializers.IntegerField(min_value=1, max_value=MAX_PARTITIONS)


class ProduceDataSerializer(serializers.Serializer):
    type = serializers.ChoiceField(
        choices=["BINARY", "JSON", "STRING", "AVRO", "JSONSCHEMA", "PROTOBUF"], required=False
    )
    data = serializers.JSONField(required=False, allow_null=True)
    subject = serializers.CharField(required=False, help_text="Schema Registry subject")
    subject_name_strategy = serializers.ChoiceField(
        choices=["TOPIC_NAME", "RECORD_NAME", "TOPIC_RECORD_NAME"], required=False
    )
    schema_id = serializers.IntegerField(required=False)
    schema_version = serializers.IntegerField(required=False)
    schema = serializers.CharField(required=False, help_text="schema text, registered if new")


class ProduceHeaderSerializer(serializers.Serializer):
    name = serializers.CharField()
    value = serializers.CharField(allow_null=True, help_text="base64")


class ProduceRequestSerializer(serializers.Serializer):
    partition_id = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    headers = ProduceHeaderSerializer(many=True, required=False)
    key = ProduceDataSerializer(required=False, allow_null=True)
    value = ProduceDataSerializer(required=False, allow_null=True)
    timestamp = serializers.DateTimeField(required=False, allow_null=True)


class ProduceBatchEntrySerializer(ProduceRequestSerializer):
    id = serializers.RegexField(r"^[0-9a-zA-Z_-]{1,80}$")


class ProduceBatchRequestSerializer(serializers.Serializer):
    entries = ProduceBatchEntrySerializer(many=True)


class ProduceSizeSerializer(serializers.Serializer):
    type = serializers.CharField()
    subject = serializers.CharField(required=False)
    schema_id = serializers.IntegerField(required=False)
    schema_version = serializers.IntegerField(required=False)
    size = serializers.IntegerField()


class ProduceResponseSerializer(serializers.Serializer):
    error_code = serializers.IntegerField()
    cluster_id = serializers.CharField()
    topic_name = serializers.CharField()
    partition_id = serializers.IntegerField()
    offset = serializers.IntegerField()
    timestamp = serializers.CharField(allow_null=True)
    key = ProduceSizeSerializer(allow_null=True)
    value = ProduceSizeSerializer(allow_null=True)


# -- resources -------------------------------------------------------------------------------
def topic_resource(v3: V3, topic: TopicImage) -> dict[str, Any]:
    t = topic.name
    first = topic.partitions.get(0)
    return v3.resource(
        "KafkaTopic",
        ("topics", t),
        (f"topic={t}",),
        topic_name=t,
        is_internal=selectors.topic_is_internal(t),
        replication_factor=len(first.replicas) if first is not None else 0,
        partitions_count=len(topic.partitions),
        partitions=v3.related("topics", t, "partitions"),
        configs=v3.related("topics", t, "configs"),
        partition_reassignments=v3.related("topics", t, "partitions", "-", "reassignment"),
        authorized_operations=[],
    )


def partition_resource(v3: V3, topic: str, p: PartitionImage) -> dict[str, Any]:
    i = p.partition
    leader = p.leader if p.leader >= 0 else None
    return v3.resource(
        "KafkaPartition",
        ("topics", topic, "partitions", i),
        (f"topic={topic}", f"partition={i}"),
        topic_name=topic,
        partition_id=i,
        leader=v3.related("topics", topic, "partitions", i, "replicas", leader)
        if leader is not None
        else None,
        replicas=v3.related("topics", topic, "partitions", i, "replicas"),
        reassignment=v3.related("topics", topic, "partitions", i, "reassignment"),
    )


def replica_resource(v3: V3, topic: str, p: PartitionImage, broker_id: int) -> dict[str, Any]:
    i = p.partition
    return v3.resource(
        "KafkaReplica",
        ("topics", topic, "partitions", i, "replicas", broker_id),
        (f"topic={topic}", f"partition={i}", f"replica={broker_id}"),
        topic_name=topic,
        partition_id=i,
        broker_id=broker_id,
        is_leader=p.leader == broker_id,
        is_in_sync=broker_id in p.isr,
        broker=v3.related("brokers", broker_id),
    )


def reassignment_resource(v3: V3, topic: str, p: PartitionImage) -> dict[str, Any]:
    i = p.partition
    return v3.resource(
        "KafkaReassignment",
        ("topics", topic, "partitions", i, "reassignment"),
        (f"topic={topic}", f"partition={i}", "reassignment"),
        topic_name=topic,
        partition_id=i,
        adding_replicas=list(p.adding_replicas),
        removing_replicas=list(p.removing_replicas),
        replicas=v3.related("topics", topic, "partitions", i, "replicas"),
    )


# -- topics ----------------------------------------------------------------------------------
class TopicListView(V3ReadView):
    """List topics; create one (admins only)."""

    roles = {"POST": ADMIN}

    read_schema = v3_get("listKafkaTopics", TopicListSerializer, TAG_TOPICS)

    def read(self, v3: V3) -> Any:
        data = [topic_resource(v3, t) for t in selectors.topic_list()]
        return v3.listing("KafkaTopicList", ("topics",), data)

    @extend_schema(
        operation_id="createKafkaTopic",
        request=CreateTopicSerializer,
        responses={201: TopicSerializer},
        tags=TAG_TOPICS,
    )
    def post(self, request: Request, cluster_id: str) -> Response:
        v3 = V3(request, cluster_id)
        data = validated(CreateTopicSerializer, request.data)
        name = data["topic_name"]
        assignments: dict[int, list[int]] = {}
        for item in data.get("replicas_assignments") or []:
            if item["partition_id"] in assignments:
                raise BadRequest(
                    f"replicas_assignments lists partition {item['partition_id']} twice"
                )
            assignments[item["partition_id"]] = list(item["broker_ids"])
        configs = {c["name"]: c.get("value") for c in data.get("configs") or []}
        new = services.NewTopic(
            name=name,
            partitions_count=data.get("partitions_count"),
            replication_factor=data.get("replication_factor"),
            replicas_assignments=assignments or None,
            configs=configs,
        )
        services.topic_create(topic=new, validate_only=data["validate_only"])
        if data["validate_only"]:
            partitions = len(assignments) or data.get("partitions_count") or 0
            rf = (
                len(next(iter(assignments.values())))
                if assignments
                else data.get("replication_factor") or 0
            )
            body = topic_resource(v3, TopicImage(name=name, topic_id=_NO_ID))
            body.update(partitions_count=partitions, replication_factor=rf)
            return Response(body, status=201)
        topic = _wait_for_topic(name)
        response = Response(topic_resource(v3, topic), status=201)
        response["Location"] = v3.url("topics", name)
        return response


def _wait_for_topic(name: str) -> TopicImage:
    """The new topic from the metadata image (the controller wrote it before answering)."""
    deadline = time.monotonic() + 5
    while True:
        topic = gateway().image().topics.get(name)
        if topic is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if topic is None:
        raise NotFound(f"topic {name!r} was created but is not visible yet; retry the read")
    return topic


class TopicDetailView(V3ReadView):
    """Read a topic, grow its partitions (PATCH), or delete it (admins only)."""

    roles = {"DELETE": ADMIN}

    read_schema = v3_get("getKafkaTopic", TopicSerializer, TAG_TOPICS)

    def read(self, v3: V3, topic_name: str) -> Any:
        return topic_resource(v3, selectors.topic_get(name=topic_name))

    @extend_schema(
        operation_id="updatePartitionCountKafkaTopic",
        request=UpdatePartitionCountSerializer,
        responses=TopicSerializer,
        tags=TAG_TOPICS,
    )
    def patch(self, request: Request, cluster_id: str, topic_name: str) -> Response:
        v3 = V3(request, cluster_id)
        data = validated(UpdatePartitionCountSerializer, request.data)
        services.topic_partitions_increase(
            name=topic_name, partitions_count=data["partitions_count"]
        )
        topic = selectors.topic_get(name=topic_name)
        return Response(topic_resource(v3, topic))

    @extend_schema(operation_id="deleteKafkaTopic", responses={204: None}, tags=TAG_TOPICS)
    def delete(self, request: Request, cluster_id: str, topic_name: str) -> Response:
        V3(request, cluster_id)
        services.topic_delete(name=topic_name)
        return Response(status=204)


# -- topic configs ---------------------------------------------------------------------------
class TopicConfigListView(V3ReadView):
    """Every config of a topic, with source and synonyms."""

    read_schema = v3_get("listKafkaTopicConfigs", TopicConfigListSerializer, TAG_CONFIGS)

    def read(self, v3: V3, topic_name: str) -> Any:
        selectors.topic_get(name=topic_name)
        data = config_resources(v3, "topic", topic_name)
        return v3.listing("KafkaTopicConfigList", ("topics", topic_name, "configs"), data)


class AllTopicsConfigListView(V3ReadView):
    """Every config of every topic (``topics/-/configs``)."""

    read_schema = v3_get("listKafkaAllTopicConfigs", TopicConfigListSerializer, TAG_CONFIGS)

    def read(self, v3: V3) -> Any:
        data = []
        for topic in selectors.topic_list():
            try:
                data += config_resources(v3, "topic", topic.name)
            except NotFound:
                continue  # deleted meanwhile
        return v3.listing("KafkaTopicConfigList", ("topics", "-", "configs"), data)


class TopicConfigDetailView(ConfigWriteView):
    """Read one topic config, set it (PUT ``{"value"}``) or reset it to its default (DELETE)."""

    config_kind = "topic"
    config_tags = TAG_CONFIGS
    read_schema = v3_get("getKafkaTopicConfig", TopicConfigSerializer, TAG_CONFIGS)

    def read(self, v3: V3, topic_name: str, name: str) -> Any:
        selectors.topic_get(name=topic_name)
        entry = config_get(kind="topic", name=topic_name, config=name)
        return config_resource(v3, "topic", topic_name, entry)

    put_schema = dict(operation_id="updateKafkaTopicConfig")
    delete_schema = dict(operation_id="deleteKafkaTopicConfig")

    def target(self, *, topic_name: str) -> str:
        # No check here: PUT validates its body before the topic (topic_configs_alter's 404).
        return topic_name

    def before_reset(self, resource: str, name: str) -> None:
        selectors.topic_get(name=resource)
        config_get(kind="topic", name=resource, config=name)  # 404 for unknown names

    def alter(self, resource: str, operations: list[ConfigOp], validate_only: bool = False) -> None:
        services.topic_configs_alter(
            name=resource, operations=operations, validate_only=validate_only
        )


class TopicConfigsAlterView(ConfigWriteView):
    """Batch: ``{"data": [{"name", "value", "operation": "SET"|"DELETE"}]}``, all or none."""

    config_kind = "topic"
    config_tags = TAG_CONFIGS
    batch_schema = dict(operation_id="updateKafkaTopicConfigBatch")
    target = TopicConfigDetailView.target
    alter = TopicConfigDetailView.alter


# -- partitions and replicas -----------------------------------------------------------------
class PartitionListView(V3ReadView):
    """A topic's partitions."""

    read_schema = v3_get("listKafkaPartitions", PartitionListSerializer, TAG_PARTITIONS)

    def read(self, v3: V3, topic_name: str) -> Response:
        topic = selectors.topic_get(name=topic_name)
        data = [
            partition_resource(v3, topic_name, p) for p in selectors.partition_list(topic=topic)
        ]
        return v3.listing("KafkaPartitionList", ("topics", topic_name, "partitions"), data)


class PartitionDetailView(V3ReadView):
    """One partition, with a link to its leader replica."""

    read_schema = v3_get("getKafkaPartition", PartitionSerializer, TAG_PARTITIONS, PARTITION_ID)

    def read(self, v3: V3, topic_name: str, partition_id: str) -> dict[str, Any]:
        p = selectors.partition_at(topic_name=topic_name, partition=partition_id)
        return partition_resource(v3, topic_name, p)


class PartitionOffsetsView(V3ReadView):
    """A partition's earliest and latest offsets (log start and high watermark), as Confluent's
    ListPartitionOffsetsAction: ``offset_type`` is ``earliest_and_latest`` or absent."""

    read_schema = v3_get(
        "listKafkaPartitionOffsets",
        PartitionOffsetsSerializer,
        TAG_PARTITIONS,
        PARTITION_ID,
        OFFSET_TYPE,
    )

    def read(self, v3: V3, topic_name: str, partition_id: str) -> dict[str, Any]:
        offset_type = v3.request.query_params.get("offset_type", "earliest_and_latest")
        if offset_type != "earliest_and_latest":
            raise BadRequest(f"offset_type:{offset_type} is invalid (only earliest_and_latest)")
        p = selectors.partition_at(topic_name=topic_name, partition=partition_id)
        found = selectors.partition_offsets(topic=topic_name, partition=p.partition)
        return v3.resource(
            "KafkaPartitionWithOffsets",
            ("topics", topic_name, "partitions", p.partition, "offset"),
            (f"topic={topic_name}", f"partition={p.partition}", f"offset_type={offset_type}"),
            topic_name=topic_name,
            partition_id=p.partition,
            earliest_offset=found.beginning_offset,
            latest_offset=found.end_offset,
        )


class ReplicaListView(V3ReadView):
    """A partition's replicas (leader and in-sync flags)."""

    read_schema = v3_get("listKafkaReplicas", ReplicaListSerializer, TAG_PARTITIONS, PARTITION_ID)

    def read(self, v3: V3, topic_name: str, partition_id: str) -> Any:
        p = selectors.partition_at(topic_name=topic_name, partition=partition_id)
        data = [replica_resource(v3, topic_name, p, b) for b in p.replicas]
        return v3.listing(
            "KafkaReplicaList",
            ("topics", topic_name, "partitions", p.partition, "replicas"),
            data,
        )


class ReplicaDetailView(V3ReadView):
    """One replica of a partition."""

    read_schema = v3_get(
        "getKafkaReplica", ReplicaSerializer, TAG_PARTITIONS, PARTITION_ID, BROKER_ID
    )

    def read(self, v3: V3, topic_name: str, partition_id: str, broker_id: str) -> Any:
        p = selectors.partition_at(topic_name=topic_name, partition=partition_id)
        b = parse_int(broker_id, what="replica")
        if b not in p.replicas:
            raise NotFound(
                f"broker {b} holds no replica of {topic_name}-{p.partition} "
                f"(replicas: {', '.join(map(str, p.replicas))})"
            )
        return replica_resource(v3, topic_name, p, b)


class BrokerPartitionReplicasView(V3ReadView):
    """Every partition replica one broker hosts."""

    read_schema = v3_get(
        "searchKafkaReplicasByBroker", ReplicaListSerializer, TAG_PARTITIONS, BROKER_ID
    )

    def read(self, v3: V3, broker_id: str) -> Any:
        b = broker_get(broker_id=parse_int(broker_id, what="broker")).broker_id
        data = [
            replica_resource(v3, t, p, b) for t, p in selectors.replica_list_for_broker(broker_id=b)
        ]
        return v3.listing("KafkaReplicaList", ("brokers", b, "partition-replicas"), data)


# -- reassignments ---------------------------------------------------------------------------
class AllReassignmentsView(V3ReadView):
    """Every partition reassignment under way in the cluster."""

    read_schema = v3_get("listKafkaReassignments", ReassignmentListSerializer, TAG_PARTITIONS)

    def read(self, v3: V3) -> Any:
        data = [reassignment_resource(v3, t, p) for t, p in selectors.reassignment_list()]
        return v3.listing(
            "KafkaReassignmentList", ("topics", "-", "partitions", "-", "reassignment"), data
        )


class TopicReassignmentsView(V3ReadView):
    """The reassignments under way for one topic's partitions."""

    read_schema = v3_get(
        "searchKafkaReassignmentsByTopic", ReassignmentListSerializer, TAG_PARTITIONS
    )

    def read(self, v3: V3, topic_name: str) -> Any:
        selectors.topic_get(name=topic_name)
        data = [
            reassignment_resource(v3, t, p)
            for t, p in selectors.reassignment_list(topic=topic_name)
        ]
        return v3.listing(
            "KafkaReassignmentList",
            ("topics", topic_name, "partitions", "-", "reassignment"),
            data,
        )


class PartitionReassignmentView(V3ReadView):
    """One partition's reassignment (404 when none is under way)."""

    read_schema = v3_get(
        "getKafkaReassignment", ReassignmentSerializer, TAG_PARTITIONS, PARTITION_ID
    )

    def read(self, v3: V3, topic_name: str, partition_id: str) -> Any:
        p = selectors.partition_at(topic_name=topic_name, partition=partition_id)
        if not (p.adding_replicas or p.removing_replicas):
            raise NotFound(f"no reassignment is under way for {topic_name}-{p.partition}")
        return reassignment_resource(v3, topic_name, p)


# -- produce ---------------------------------------------------------------------------------
class ProduceBatchSuccessSerializer(ProduceResponseSerializer):
    """One produced record's report, by its entry id (no error code, as Confluent's)."""

    id = serializers.CharField()
    error_code = None


class ProduceBatchFailureSerializer(serializers.Serializer):
    id = serializers.CharField()
    error_code = serializers.IntegerField()
    message = serializers.CharField()


class ProduceBatchResponseSerializer(serializers.Serializer):
    successes = ProduceBatchSuccessSerializer(many=True)
    failures = ProduceBatchFailureSerializer(many=True)


class ConcatenatedJsonParser(BaseParser):
    """``application/json`` holding one or more JSON documents back to back (streamed mode)."""

    media_type = "application/json"

    def parse(
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> list[Any]:
        raw = stream.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("JSON parse error - the body is not UTF-8") from None
        decoder = json.JSONDecoder()
        documents = []
        index = 0
        while True:
            while index < len(text) and text[index] in " \t\r\n":
                index += 1
            if index >= len(text):
                break
            try:
                document, index = decoder.raw_decode(text, index)
            except json.JSONDecodeError as exc:
                raise ParseError(
                    f"JSON parse error - record {len(documents) + 1}: {exc.msg} "
                    f"(line {exc.lineno} column {exc.colno})"
                ) from None
            documents.append(document)
        return documents


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _report(v3: V3, topic: str, outcome: produce.Delivery | ApiError) -> dict[str, Any]:
    if isinstance(outcome, ApiError):
        return {"error_code": outcome.error_code, "message": outcome.message}
    record = outcome.record

    def size(
        data: bytes | None, kind: str | None, schema: Resolved | None
    ) -> dict[str, Any] | None:
        if data is None:
            return None
        found: dict[str, Any] = {"type": kind or "BINARY"}
        if schema is not None:  # as Confluent: the subject, id and version written with
            found["subject"] = schema.subject
            found["schema_id"] = schema.schema_id
            if schema.version is not None:
                found["schema_version"] = schema.version
        found["size"] = len(data)
        return found

    return {
        "error_code": 200,
        "cluster_id": v3.cluster_id,
        "topic_name": topic,
        "partition_id": outcome.partition,
        "offset": outcome.offset,
        "timestamp": _iso(outcome.timestamp_ms),
        "key": size(record.key, record.key_type, record.key_schema),
        "value": size(record.value, record.value_type, record.value_schema),
    }


class ProduceRecordsView(APIView):
    """Produce records: one JSON document per record, one delivery report per record."""

    parser_classes = [ConcatenatedJsonParser]

    @extend_schema(
        operation_id="produceRecord",
        request=ProduceRequestSerializer,
        responses=ProduceResponseSerializer,
        tags=TAG_RECORDS,
    )
    def post(self, request: Request, cluster_id: str, topic_name: str) -> Any:
        v3 = V3(request, cluster_id)
        topic = selectors.topic_get(name=topic_name)
        documents = request.data
        if not isinstance(documents, list) or not documents:
            raise BadRequest("the request body is empty: send one JSON object per record")
        records: list[produce.OutRecord | ApiError] = []
        for document in documents:
            try:
                records.append(produce.parse_v3_record(document, topic=topic_name))
            except ApiError as exc:
                records.append(exc)
        outcomes = produce.produce(topic=topic, records=records)
        if len(outcomes) == 1:
            (outcome,) = outcomes
            if isinstance(outcome, ApiError):
                raise outcome
            return Response(_report(v3, topic_name, outcome))
        lines = [json.dumps(_report(v3, topic_name, o)) for o in outcomes]
        return HttpResponse("\n".join(lines) + "\n", content_type="application/json")


# Confluent's api.v3.produce.batch.maximum.entries default (it allows 1 to 50).
PRODUCE_BATCH_MAXIMUM_ENTRIES = 10
BATCH_ID = re.compile(r"[0-9a-zA-Z_-]{1,80}")


def _batch_error(message: str) -> ApiError:
    """Confluent's Errors.produceBatchException: 422 with error code 42208."""
    return ApiError(message, error_code=42208, status_code=422)


def _batch_entries(body: Any) -> list[dict[str, Any]]:
    """The batch's entries, checked as Confluent's ProduceBatchAction does before producing."""
    if not isinstance(body, dict) or body.get("entries") is None:
        raise _batch_error("Request body is empty. Data is required.")
    entries = body["entries"]
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise _batch_error("entries must be a list of objects")
    seen: set[str] = set()
    for entry in entries:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not BATCH_ID.fullmatch(entry_id):
            raise _batch_error(
                "Batch entry identifier is not a valid string. (1 to 80 of 0-9 a-z A-Z - _)"
            )
        if entry_id in seen:
            raise _batch_error("Batch entry IDs are not distinct.")
        seen.add(entry_id)
    if not entries:
        raise _batch_error("Empty batch.")
    if len(entries) > PRODUCE_BATCH_MAXIMUM_ENTRIES:
        raise _batch_error(f"Too many entries in batch. (at most {PRODUCE_BATCH_MAXIMUM_ENTRIES})")
    return entries


class ProduceBatchView(APIView):
    """Produce a batch of records: 207 with a success or a failure per entry, by ``id``."""

    @extend_schema(
        operation_id="produceRecordsBatch",
        request=ProduceBatchRequestSerializer,
        responses={207: ProduceBatchResponseSerializer},
        tags=TAG_RECORDS,
    )
    def post(self, request: Request, cluster_id: str, topic_name: str) -> Any:
        v3 = V3(request, cluster_id)
        topic = selectors.topic_get(name=topic_name)
        entries = _batch_entries(request.data)
        records: list[produce.OutRecord | ApiError] = []
        for entry in entries:
            try:
                records.append(produce.parse_v3_record(entry, topic=topic_name))
            except ApiError as exc:
                records.append(exc)
        outcomes = produce.produce(topic=topic, records=records)
        successes: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        for entry, outcome in zip(entries, outcomes, strict=True):
            report = {"id": entry["id"], **_report(v3, topic_name, outcome)}
            if isinstance(outcome, ApiError):
                failures.append(report)
            else:
                del report["error_code"]  # a success entry has none in Confluent's answer
                successes.append(report)
        return Response({"successes": successes, "failures": failures}, status=207)

"""REST Proxy v2 consumer instances: create, subscribe or assign, read, commit, seek, delete.

Confluent's paths, bodies, content types (``application/vnd.kafka.v2+json``; records in
``application/vnd.kafka.<format>.v2+json``) and error codes (40403 instance not found, 40902
instance exists, 40601 Accept does not match the instance's format, 42204 bad format). The
instances live in this process (:mod:`groups.consumer_instances`). Instances of the ``avro``,
``jsonschema`` and ``protobuf`` formats return keys and values decoded through the Schema
Registry (the schema id in each record's Confluent frame, :mod:`schemaregistry.serde`).

Behaviour follows Confluent's implementation (confluentinc/kafka-rest ``KafkaConsumerState``,
``KafkaConsumerReadTask``), not only its paths: a commit of given offsets takes each as the
last record read and commits ``offset + 1``; a commit with no offsets commits the positions of
the partitions the instance owns; committed offsets are listed only where the group has one;
a read waits at most ``consumer.request.timeout.ms`` and keeps under ``max_bytes``; a pattern
subscription matches whole topic names (Java's regex); subscription and manual assignment
exclude each other. Where Weir deliberately differs (a record over ``max_bytes`` is returned
alone rather than never) the code says so.

Roles: reading is a viewer's right, so a viewer may create an instance, subscribe or assign,
seek, read records and delete the instance; committing offsets moves the group's position and
needs an operator.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import time
import uuid
from datetime import datetime
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from controlplane.cluster import gateway
from controlplane.content import (
    KAFKA_V2_RENDERERS,
    SCHEMA_V2_RENDERERS,
    KafkaBinaryV2JsonRenderer,
    KafkaJsonV2JsonRenderer,
    v2_renderer,
)
from controlplane.errors import ApiError, BadRequest, KafkaUnavailable, NotFound
from controlplane.proxy import KafkaV2View
from controlplane.roles import OPERATOR, VIEWER
from groups.consumer_instances import FORMATS, ConsumerInstance, registry
from schemaregistry.serde import read_record

TAGS = ["REST proxy v2: consumers"]
MAX_BYTES = 64 * 1024 * 1024  # Confluent's consumer.request.max.bytes default
DEFAULT_WAIT_MS = 1000  # Confluent's consumer.request.timeout.ms default
# A read holds one of the web process's worker threads: an instance may wait at most this long.
MAX_WAIT_MS = 30_000


def _body(request: Request) -> dict[str, Any]:
    data = request.data
    if data in (None, "") or (hasattr(data, "keys") and not data):
        return {}
    if not isinstance(data, dict):
        raise ApiError("the request body must be a JSON object", error_code=42201, status_code=422)
    return data


def _partitions(body: dict[str, Any], key: str = "partitions") -> list[tuple[str, int]]:
    items = body.get(key)
    if not isinstance(items, list):
        raise ApiError(f"{key!r} must be a list", error_code=42201, status_code=422)
    result = []
    for index, item in enumerate(items):
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("topic"), str)
            or not isinstance(item.get("partition"), int)
            or isinstance(item.get("partition"), bool)
            or item["partition"] < 0
        ):
            raise ApiError(
                f"{key}[{index}] needs a string 'topic' and a non-negative integer 'partition'",
                error_code=42201,
                status_code=422,
            )
        result.append((item["topic"], item["partition"]))
    return result


def _check_topics(topics: list[str]) -> None:
    known = gateway().image().topics
    missing = [t for t in topics if t not in known]
    if missing:
        raise ApiError(f"Topic {missing[0]!r} not found.", error_code=40401, status_code=404)


class _V2View(KafkaV2View):
    roles = {"POST": VIEWER, "DELETE": VIEWER, "GET": VIEWER}


# Confluent's keys have dots, which cannot be Python attribute names: build the class from a dict.
CreateInstanceSerializer = serializers.SerializerMetaclass(
    "CreateInstanceSerializer",
    (serializers.Serializer,),
    {
        "name": serializers.CharField(required=False),
        "id": serializers.CharField(required=False, help_text="Confluent's legacy name"),
        "format": serializers.ChoiceField(choices=FORMATS, required=False, default="binary"),
        "auto.offset.reset": serializers.ChoiceField(
            choices=["earliest", "latest", "smallest", "largest", "none"], required=False
        ),
        "auto.commit.enable": serializers.CharField(required=False, default="false"),
        "fetch.min.bytes": serializers.IntegerField(required=False, min_value=1),
        "consumer.request.timeout.ms": serializers.IntegerField(
            required=False, min_value=1, max_value=MAX_WAIT_MS, default=DEFAULT_WAIT_MS
        ),
    },
)


class InstanceSerializer(serializers.Serializer):
    instance_id = serializers.CharField()
    base_uri = serializers.CharField()


class CreateInstanceView(_V2View):
    """Create a consumer instance in a group."""

    @extend_schema(request=CreateInstanceSerializer, responses=InstanceSerializer, tags=TAGS)
    def post(self, request: Request, group: str) -> Response:
        body = _body(request)
        fmt = str(body.get("format", "binary")).lower()
        if fmt not in FORMATS:
            raise ApiError(
                f"format {fmt!r} is not supported: use {', '.join(FORMATS)}",
                error_code=42204,
                status_code=422,
            )
        # Confluent's legacy "id" overrides "name" (KafkaConsumerManager.getConsumerInstanceName).
        name = body.get("id") or body.get("name") or f"rest-consumer-{uuid.uuid4().hex[:12]}"
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise ApiError("name must be a non-empty string", error_code=42201, status_code=422)
        reset = str(body.get("auto.offset.reset", "latest"))
        if reset not in ("earliest", "latest", "smallest", "largest", "none"):
            raise ApiError(
                f"auto.offset.reset {reset!r} must be earliest or latest",
                error_code=42201,
                status_code=422,
            )
        wait_ms = body.get("consumer.request.timeout.ms", DEFAULT_WAIT_MS)
        if (
            not isinstance(wait_ms, int)
            or isinstance(wait_ms, bool)
            or not 0 < wait_ms <= MAX_WAIT_MS
        ):
            raise ApiError(
                f"consumer.request.timeout.ms must be an integer from 1 to {MAX_WAIT_MS}",
                error_code=42204,
                status_code=422,
            )
        try:
            registry.create(
                group=group, name=name, fmt=fmt, config=body, request_timeout_ms=wait_ms
            )
        except (KafkaException, ValueError) as exc:
            raise ApiError(
                f"invalid consumer config: {exc}", error_code=42201, status_code=422
            ) from None
        base_uri = request.build_absolute_uri(f"/kafka/consumers/{group}/instances/{name}")
        return Response({"instance_id": name, "base_uri": base_uri})


class InstanceView(_V2View):
    """Delete a consumer instance (it leaves its group)."""

    @extend_schema(responses={204: None}, tags=TAGS)
    def delete(self, request: Request, group: str, instance: str) -> Response:
        registry.delete(group=group, name=instance)
        return Response(status=204)


class SubscriptionSerializer(serializers.Serializer):
    topics = serializers.ListField(child=serializers.CharField(), required=False)
    topic_pattern = serializers.CharField(required=False)


def _forget_revoked(instance: ConsumerInstance) -> Any:
    """A rebalance callback dropping the positions of partitions this instance no longer owns:
    the next owner commits them, and a stale one must not be committed over its progress."""

    def on_revoke(_consumer: Any, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            instance.consumed.pop((tp.topic, tp.partition), None)

    return on_revoke


class _MixedError(ApiError):
    """Confluent's answer (Java's IllegalStateException) to subscribing an instance that has
    partitions assigned by hand, or assigning partitions to a subscribed one."""

    def __init__(self) -> None:
        super().__init__(
            "Illegal state: Subscription to topics, partitions and pattern are mutually "
            "exclusive (DELETE the subscription first)",
            error_code=40903,
            status_code=409,
        )


class SubscriptionView(_V2View):
    """Subscribe to topics (or a pattern), read or drop the subscription."""

    @extend_schema(request=SubscriptionSerializer, responses={204: None}, tags=TAGS)
    def post(self, request: Request, group: str, instance: str) -> Response:
        body = _body(request)
        topics, pattern = body.get("topics"), body.get("topic_pattern")
        if (topics is None) == (pattern is None):
            raise ApiError(
                "give exactly one of 'topics' and 'topic_pattern'",
                error_code=40903,
                status_code=409,
            )
        if topics is not None and (
            not isinstance(topics, list) or not all(isinstance(t, str) for t in topics)
        ):
            raise ApiError("'topics' must be a list of names", error_code=42201, status_code=422)
        if pattern is not None:
            if not isinstance(pattern, str):
                raise ApiError(
                    "'topic_pattern' must be a string", error_code=42201, status_code=422
                )
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ApiError(
                    f"'topic_pattern' is not a regular expression: {exc}",
                    error_code=42201,
                    status_code=422,
                ) from None
        with registry.use(group=group, name=instance) as consumer:
            if consumer.assignment:
                raise _MixedError()
            consumer.consumer.subscribe(
                # Java's Pattern.matcher(topic).matches() is a whole-name match; librdkafka's
                # "^..." regex subscription matches a prefix unless it is anchored at both ends.
                topics if topics is not None else [f"^({pattern})$"],
                on_revoke=_forget_revoked(consumer),
            )
            consumer.subscription = list(topics or [])
            consumer.pattern = pattern
        return Response(status=204)

    @extend_schema(responses=SubscriptionSerializer, tags=TAGS)
    def get(self, request: Request, group: str, instance: str) -> Response:
        with registry.use(group=group, name=instance) as consumer:
            subscription, pattern = list(consumer.subscription), consumer.pattern
        if pattern is not None:
            # Java's subscription() for a pattern: the topics it matches now.
            subscription = sorted(t for t in gateway().image().topics if re.fullmatch(pattern, t))
        return Response({"topics": subscription})

    @extend_schema(responses={204: None}, tags=TAGS)
    def delete(self, request: Request, group: str, instance: str) -> Response:
        with registry.use(group=group, name=instance) as consumer:
            # Java's unsubscribe(), behind Confluent's proxy, also drops a manual assignment.
            consumer.consumer.unsubscribe()
            if consumer.assignment:
                consumer.consumer.unassign()
            consumer.subscription, consumer.pattern, consumer.assignment = [], None, []
            consumer.consumed.clear()
        return Response(status=204)


class PartitionRef(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField()


class PartitionsSerializer(serializers.Serializer):
    partitions = PartitionRef(many=True)


class AssignmentsView(_V2View):
    """Assign partitions by hand, or list the current assignment."""

    @extend_schema(request=PartitionsSerializer, responses={204: None}, tags=TAGS)
    def post(self, request: Request, group: str, instance: str) -> Response:
        partitions = _partitions(_body(request))
        _check_topics(sorted({t for t, _ in partitions}))
        with registry.use(group=group, name=instance) as consumer:
            if consumer.subscription or consumer.pattern:
                raise _MixedError()
            consumer.consumer.assign([TopicPartition(t, p) for t, p in partitions])
            consumer.assignment = partitions
        return Response(status=204)

    @extend_schema(responses=PartitionsSerializer, tags=TAGS)
    def get(self, request: Request, group: str, instance: str) -> Response:
        with registry.use(group=group, name=instance) as consumer:
            assigned = consumer.consumer.assignment()
        return Response(
            {"partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in assigned]}
        )


class OffsetRef(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField(min_value=0)
    offset = serializers.IntegerField(min_value=0)
    metadata = serializers.CharField(required=False)


class TimestampRef(serializers.Serializer):
    topic = serializers.CharField()
    partition = serializers.IntegerField(min_value=0)
    timestamp = serializers.DateTimeField()


class OffsetsSerializer(serializers.Serializer):
    offsets = OffsetRef(many=True)


def _offsets(body: dict[str, Any], key: str = "offsets") -> list[tuple[str, int, int, str | None]]:
    """``body[key]``: ``[{topic, partition, offset, metadata?}]`` as (topic, partition, offset,
    metadata or None)."""
    items = body.get(key)
    if not isinstance(items, list):
        raise ApiError(f"{key!r} must be a list", error_code=42201, status_code=422)
    result = []
    for index, item in enumerate(items):
        offset = item.get("offset") if isinstance(item, dict) else None
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ApiError(
                f"{key}[{index}] needs a non-negative integer 'offset'",
                error_code=42201,
                status_code=422,
            )
        metadata = item.get("metadata")
        if metadata is not None and not isinstance(metadata, str):
            raise ApiError(
                f"{key}[{index}].metadata must be a string", error_code=42201, status_code=422
            )
        ((topic, partition),) = _partitions({key: [item]}, key)
        result.append((topic, partition, offset, metadata))
    return result


def _timestamps(body: dict[str, Any]) -> list[tuple[str, int, int]]:
    """``body["timestamps"]``: ``[{topic, partition, timestamp}]`` (ISO 8601, as Confluent's
    Jackson ``Instant``) as (topic, partition, epoch milliseconds)."""
    items = body.get("timestamps")
    if not isinstance(items, list):
        raise ApiError("'timestamps' must be a list", error_code=42201, status_code=422)
    result = []
    for index, item in enumerate(items):
        raw = item.get("timestamp") if isinstance(item, dict) else None
        try:
            moment = datetime.fromisoformat(raw) if isinstance(raw, str) else None
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise ApiError(
                f"timestamps[{index}] needs an ISO 8601 'timestamp' with a time zone "
                "(e.g. 2026-01-31T12:00:00Z)",
                error_code=42201,
                status_code=422,
            )
        ((topic, partition),) = _partitions({"timestamps": [item]}, "timestamps")
        result.append((topic, partition, int(moment.timestamp() * 1000)))
    return result


def _kafka_error(exc: KafkaException, what: str) -> ApiError:
    """A Kafka error of a commit or committed-offsets read, as Confluent's proxy answers it
    (rest-utils' KafkaExceptionMapper): 404/40403 for an unknown topic or partition, 401/40101
    and 403/40301 for authentication and authorization, else 500 with 50003 when retrying may
    help and 50002 when not."""
    error: KafkaError = exc.args[0]
    message = f"{what}: {error.str()}"
    code = error.code()
    if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return ApiError(message, error_code=40403, status_code=404)
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        return ApiError(message, error_code=40101, status_code=401)
    if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED):
        return ApiError(message, error_code=40301, status_code=403)
    return ApiError(message, error_code=50003 if error.retriable() else 50002, status_code=500)


class OffsetsView(_V2View):
    """Commit offsets (given, or everything consumed so far) and read committed offsets."""

    roles = {"POST": OPERATOR, "GET": VIEWER}

    @extend_schema(
        request=OffsetsSerializer,
        responses={200: {"type": "array", "items": {"type": "object"}}},
        tags=TAGS,
    )
    def post(self, request: Request, group: str, instance: str) -> Response:
        body = _body(request)
        with registry.use(group=group, name=instance) as consumer:
            if body.get("offsets") is not None:
                # Confluent's proxy takes each given offset as the last record read and commits
                # offset + 1, the next one to read (KafkaConsumerState.commitOffsets): a client
                # that commits what it has read must not re-read it after a restart.
                commits = [
                    # confluent-kafka takes no None for metadata: leave it out when not given.
                    TopicPartition(t, p, o + 1, metadata=m)
                    if m is not None
                    else TopicPartition(t, p, o + 1)
                    for t, p, o, m in _offsets(body)
                ]
            else:
                # No body (or no "offsets"): the positions of the partitions this instance owns
                # now, as Java's commitSync() in Confluent's proxy (never a partition another
                # member has taken over since).
                owned = {(tp.topic, tp.partition) for tp in consumer.consumer.assignment()}
                commits = [
                    TopicPartition(t, p, o)
                    for (t, p), o in consumer.consumed.items()
                    if (t, p) in owned
                ]
            if commits:
                try:
                    consumer.consumer.commit(offsets=commits, asynchronous=False)
                except KafkaException as exc:
                    raise _kafka_error(exc, "commit failed") from None
        # Confluent answers with an (always empty) JSON list of offsets.
        return Response([])

    @extend_schema(request=PartitionsSerializer, responses=OffsetsSerializer, tags=TAGS)
    def get(self, request: Request, group: str, instance: str) -> Response:
        body = _body(request)
        if "partitions" not in body and request.query_params.get("partitions"):
            try:
                body = {"partitions": json.loads(request.query_params["partitions"])}
            except ValueError:
                raise BadRequest("the partitions parameter must be JSON") from None
        if "partitions" not in body:
            # Confluent's answer to a request that names no partitions.
            raise NotFound("Partition not found.", error_code=40402)
        partitions = _partitions(body)
        with registry.use(group=group, name=instance) as consumer:
            try:
                committed = consumer.consumer.committed(
                    [TopicPartition(t, p) for t, p in partitions], timeout=10
                )
            except KafkaException as exc:
                raise _kafka_error(exc, "reading offsets failed") from None
        # The committed offset is the next one to read (the given last-read offset + 1);
        # partitions the group has never committed are left out, as Confluent's proxy does.
        return Response(
            {
                "offsets": [
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "offset": tp.offset,
                        "metadata": tp.metadata or "",
                    }
                    for tp in committed
                    if tp.offset >= 0
                ]
            }
        )


def _seek(consumer: ConsumerInstance, targets: list[tuple[str, int, int]]) -> None:
    """Move the positions; partitions must be assigned (by hand or by the group)."""
    manual = set(consumer.assignment)
    if manual and all((t, p) in manual for t, p, _ in targets):
        # Resolve beginning/end to offsets now, so the position is fixed when the call
        # returns (librdkafka would otherwise resolve it lazily, after later produces).
        resolved = []
        for t, p, o in targets:
            if o in (OFFSET_BEGINNING, OFFSET_END):
                try:
                    low, high = consumer.consumer.get_watermark_offsets(
                        TopicPartition(t, p), timeout=10
                    )
                except KafkaException as exc:
                    raise KafkaUnavailable(f"offsets of {t}-{p}: {exc.args[0].str()}") from None
                o = low if o == OFFSET_BEGINNING else high
            resolved.append((t, p, o))
        targets = resolved
        wanted = {(t, p): o for t, p, o in targets}
        consumer.consumer.assign(
            [TopicPartition(t, p, wanted.get((t, p), -1001)) for t, p in consumer.assignment]
        )
        for t, p, o in targets:
            consumer.consumed.pop((t, p), None)
            if o >= 0:
                consumer.consumed[(t, p)] = o
        return
    assigned = {(tp.topic, tp.partition) for tp in consumer.consumer.assignment()}
    for topic, partition, offset in targets:
        if (topic, partition) not in assigned:
            raise ApiError(
                f"partition {topic}-{partition} is not assigned to this consumer instance",
                error_code=40903,
                status_code=409,
            )
        deadline = time.monotonic() + 2
        while True:
            try:
                consumer.consumer.seek(TopicPartition(topic, partition, offset))
                break
            except KafkaException:
                if time.monotonic() > deadline:
                    raise KafkaUnavailable(f"could not seek {topic}-{partition}") from None
                consumer.consumer.poll(0.05)


class SeekSerializer(serializers.Serializer):
    offsets = OffsetRef(many=True, required=False)
    timestamps = TimestampRef(many=True, required=False)


class PositionsView(_V2View):
    """Seek to given offsets and/or to the first records at or after given timestamps."""

    @extend_schema(request=SeekSerializer, responses={204: None}, tags=TAGS)
    def post(self, request: Request, group: str, instance: str) -> Response:
        body = _body(request)
        if body.get("offsets") is None and body.get("timestamps") is None:
            raise ApiError("give 'offsets' and/or 'timestamps'", error_code=42201, status_code=422)
        # Seek metadata is accepted and, as in Kafka's consumer.seek, not stored anywhere.
        targets = [(t, p, o) for t, p, o, _ in _offsets(body)] if "offsets" in body else []
        times = _timestamps(body) if body.get("timestamps") is not None else []
        with registry.use(group=group, name=instance) as consumer:
            if times:
                targets += _offsets_for_times(consumer, times)
            _seek(consumer, targets)
        return Response(status=204)


def _offsets_for_times(
    consumer: ConsumerInstance, times: list[tuple[str, int, int]]
) -> list[tuple[str, int, int]]:
    """The first offset at or after each timestamp; past the last record, the log end (the
    next record produced is the first one at or after it)."""
    try:
        found = consumer.consumer.offsets_for_times(
            [TopicPartition(t, p, ms) for t, p, ms in times], timeout=10
        )
    except KafkaException as exc:
        raise KafkaUnavailable(f"offsets for times: {exc.args[0].str()}") from None
    return [(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_END) for tp in found]


class _SeekToView(_V2View):
    """Seek partitions to one end of their logs (``offset``: a confluent-kafka sentinel)."""

    offset: int

    @extend_schema(request=PartitionsSerializer, responses={204: None}, tags=TAGS)
    def post(self, request: Request, group: str, instance: str) -> Response:
        partitions = _partitions(_body(request))
        with registry.use(group=group, name=instance) as consumer:
            _seek(consumer, [(t, p, self.offset) for t, p in partitions])
        return Response(status=204)


class PositionsBeginningView(_SeekToView):
    """Seek to the first offsets of partitions."""

    offset = OFFSET_BEGINNING


class PositionsEndView(_SeekToView):
    """Seek to the ends of partitions."""

    offset = OFFSET_END


class RecordSerializer(serializers.Serializer):
    topic = serializers.CharField()
    key = serializers.JSONField(allow_null=True)
    value = serializers.JSONField(allow_null=True)
    partition = serializers.IntegerField()
    offset = serializers.IntegerField()


def _decode(data: bytes | None, fmt: str) -> Any:
    if data is None:
        return None
    if fmt == "binary":
        return base64.b64encode(data).decode()
    if fmt != "json":
        return read_record(data, fmt)
    try:
        return json.loads(data)
    except ValueError:
        raise ApiError(
            "a record is not valid JSON; read it with a binary-format consumer",
            error_code=42205,
            status_code=422,
        ) from None


def _records(messages: list[Any], fmt: str) -> list[dict[str, Any]]:
    return [
        {
            "topic": m.topic(),
            "key": _decode(m.key(), fmt),
            "value": _decode(m.value(), fmt),
            "partition": m.partition(),
            "offset": m.offset(),
        }
        for m in messages
        if m.error() is None
    ]


def _rewind(consumer: ConsumerInstance, messages: list[Any]) -> None:
    """Seek each partition back to the first of ``messages`` (the batch is not delivered)."""
    first: dict[tuple[str, int], int] = {}
    for m in messages:
        if m.error() is None:
            first.setdefault((m.topic(), m.partition()), m.offset())
    for (topic, partition), offset in first.items():
        with contextlib.suppress(KafkaException):
            consumer.consumer.seek(TopicPartition(topic, partition, offset))


def _within(messages: list[Any], max_bytes: int) -> list[Any]:
    """The first of ``messages`` whose keys and values together stay under ``max_bytes``, as
    Confluent's KafkaConsumerReadTask counts them (a record that would reach the limit is left
    for the next read). Unlike Confluent's proxy, a first record larger than the limit is
    returned alone, as a Kafka fetch does (KIP-74), rather than blocking the instance forever."""
    size = 0
    for index, message in enumerate(messages):
        size += len(message.value() or b"") + len(message.key() or b"")
        if size >= max_bytes:
            return messages[: max(index, 1)]
    return messages


class RecordsView(_V2View):
    """Read records (waits up to ``timeout`` ms, returns at most ``max_bytes``)."""

    renderer_classes = [
        KafkaJsonV2JsonRenderer,
        KafkaBinaryV2JsonRenderer,
        *SCHEMA_V2_RENDERERS,
        *KAFKA_V2_RENDERERS,
    ]

    @extend_schema(
        responses={
            (200, r.media_type): RecordSerializer(many=True)
            for r in (KafkaJsonV2JsonRenderer, KafkaBinaryV2JsonRenderer, *SCHEMA_V2_RENDERERS)
        },
        tags=TAGS,
    )
    def get(self, request: Request, group: str, instance: str) -> Response:
        try:
            timeout_ms = int(request.query_params.get("timeout", "-1"))
            max_bytes = int(request.query_params.get("max_bytes", "-1"))
        except ValueError:
            raise BadRequest("timeout and max_bytes must be integers") from None
        # Confluent's KafkaConsumerReadTask: a timeout <= 0 means the instance's
        # consumer.request.timeout.ms, and a larger one is capped by it; max_bytes <= 0 means
        # the server's limit (consumer.request.max.bytes, 64 MiB).
        if max_bytes <= 0 or max_bytes > MAX_BYTES:
            max_bytes = MAX_BYTES
        with registry.use(group=group, name=instance) as consumer:
            accepted = request.accepted_media_type or ""
            expected = f"application/vnd.kafka.{consumer.format}.v2+json"
            if accepted.startswith("application/vnd.kafka.") and accepted not in (
                expected,
                "application/vnd.kafka.v2+json",
                "application/vnd.kafka+json",
            ):
                raise ApiError(
                    f"the consumer's format is {consumer.format}; ask for {expected}",
                    error_code=40601,
                    status_code=406,
                )
            wait_ms = consumer.request_timeout_ms
            if timeout_ms > 0:
                wait_ms = min(timeout_ms, wait_ms)
            deadline = time.monotonic() + wait_ms / 1000
            records: list[dict[str, Any]] = []
            while not records:
                remaining = deadline - time.monotonic()
                polled = consumer.consumer.consume(num_messages=500, timeout=max(0, remaining))
                messages = [m for m in polled if m.error() is None]
                taken = _within(messages, max_bytes)
                try:
                    records = _records(taken, consumer.format)
                except ApiError:
                    _rewind(consumer, messages)  # the undecodable records stay unread
                    raise
                _rewind(consumer, messages[len(taken) :])  # the next read returns these
                for message in taken:
                    consumer.consumed[(message.topic(), message.partition())] = message.offset() + 1
                if taken and consumer.auto_commit:
                    read = {(m.topic(), m.partition()) for m in taken}
                    consumer.consumer.store_offsets(
                        offsets=[TopicPartition(t, p, consumer.consumed[(t, p)]) for t, p in read]
                    )
                if remaining <= 0:
                    break
        renderer = v2_renderer(consumer.format)
        response = Response(records)
        response.accepted_renderer = renderer()
        response.accepted_media_type = renderer.media_type
        return response

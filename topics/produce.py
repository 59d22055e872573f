"""Producing records over HTTP: REST Proxy v3 and v2 bodies → Kafka records → delivery reports.

Theory of operation
-------------------
Parsing is separate from sending. ``parse_v3_record`` turns one v3 JSON document
(``{"partition_id", "headers", "key": {"type", "data"}, "value": {...}, "timestamp"}``) into
an :class:`OutRecord` or raises a 400 naming the field; ``parse_v2_body`` does the same for a
v2 ``{"records": [...]}`` body in the ``json`` or ``binary`` embedded format, and
``parse_v2_schema_body`` for the ``avro``, ``jsonschema`` and ``protobuf`` formats (with
``key_schema``/``key_schema_id`` and ``value_schema``/``value_schema_id``). Serialization
follows Confluent: BINARY data is base64, JSON data is any JSON value written compactly,
STRING data is UTF-8 text, a missing key or value is null; AVRO, JSONSCHEMA and PROTOBUF data
is converted and framed with its schema's id through the Schema Registry
(:mod:`schemaregistry.serde`, :mod:`weir.registry.serde`), the schema named as Confluent's
v3 API names it (``schema_id``, ``schema_version``, ``schema``, ``subject``,
``subject_name_strategy``; none of them: the subject's latest). Unlike Confluent, a v3 key or
value with neither a type nor a schema field is JSON, as it was before Weir had a registry.

:func:`produce` sends records with the gateway's shared idempotent ``acks=all`` producer.
Records without a partition are routed by librdkafka's ``murmur2_random`` partitioner, which is
the Java client's ``murmur2(key) & 0x7fffffff % partitions`` for keyed records, so a key lands
where a Java producer would put it. Each record gets its own outcome (a :class:`Delivery` or an
:class:`ApiError`): a record for a partition the topic lacks, or too large for
``message.max.bytes``, fails alone while the others are written. The caller waits for every
acknowledgement (or the deadline) and reports in request order.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from controlplane.cluster import gateway
from controlplane.errors import ApiError, BadRequest, KafkaUnavailable, NotFound, Unprocessable
from controlplane.rest_v3 import kafka_error_status
from schemaregistry import serde as proxy_serde
from topics.selectors import partition_get
from weir.metadata.image import TopicImage
from weir.registry import serde

__all__ = [
    "Delivery",
    "OutRecord",
    "V2SchemaBatch",
    "parse_v2_body",
    "parse_v2_schema_body",
    "parse_v3_record",
    "produce",
]

SCHEMA_REGISTRY_TYPES = ("AVRO", "PROTOBUF", "JSONSCHEMA")
V3_TYPES = ("BINARY", "JSON", "STRING")
SCHEMA_FIELDS = ("schema_id", "schema_version", "subject", "subject_name_strategy", "schema")
DELIVERY_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class OutRecord:
    """A record ready for the producer, with the embedded formats it was given in."""

    key: bytes | None = None
    value: bytes | None = None
    partition: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None
    key_type: str | None = None
    value_type: str | None = None
    # The registered schema a schema'd key or value was written with.
    key_schema: serde.Resolved | None = None
    value_schema: serde.Resolved | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """Where an acknowledged record was written."""

    record: OutRecord
    partition: int
    offset: int
    timestamp_ms: int | None


# -- v3 ---------------------------------------------------------------------------------------
def _b64(text: Any, *, what: str) -> bytes:
    if not isinstance(text, str):
        raise BadRequest(f"{what} must be a base64 string, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{what} is not valid base64") from None


def _v3_data(
    obj: Any, *, what: str, topic: str
) -> tuple[bytes | None, str | None, serde.Resolved | None]:
    """(bytes, type, schema) of a v3 ``key`` / ``value`` object; all None when absent."""
    if obj is None:
        return None, None, None
    if not isinstance(obj, dict):
        raise BadRequest(f'{what} must be an object like {{"type": "JSON", "data": ...}}')
    used = [f for f in SCHEMA_FIELDS if obj.get(f) is not None]
    kind = obj.get("type")
    if kind is not None and not isinstance(kind, str):
        raise BadRequest(
            f"{what}.type must be a string, one of {', '.join(V3_TYPES + SCHEMA_REGISTRY_TYPES)}"
        )
    kind = kind.upper() if kind is not None else None
    if kind in SCHEMA_REGISTRY_TYPES or (kind is None and used):
        return _v3_schema_data(obj, what=what, topic=topic, kind=kind)
    if kind is None:
        kind = "JSON"
    if kind not in V3_TYPES:
        raise BadRequest(
            f"{what}.type {obj.get('type')!r} is not supported: use "
            f"{', '.join(V3_TYPES + SCHEMA_REGISTRY_TYPES)}"
        )
    if used:
        raise BadRequest(
            f"{what}: {', '.join(used)} only go with type {', '.join(SCHEMA_REGISTRY_TYPES)}"
        )
    data = obj.get("data")
    if kind == "BINARY":
        return (None if data is None else _b64(data, what=f"{what}.data")), kind, None
    if kind == "STRING":
        if data is None:
            return None, kind, None
        if not isinstance(data, str):
            raise BadRequest(f"{what}.data must be a string for type STRING")
        return data.encode(), kind, None
    if "data" not in obj:
        return None, kind, None
    return json.dumps(data, separators=(",", ":")).encode(), kind, None


def _v3_schema_data(
    obj: dict[str, Any], *, what: str, topic: str, kind: str | None
) -> tuple[bytes | None, str | None, serde.Resolved | None]:
    """A v3 key or value in a Schema Registry format, converted and framed."""
    for name, wanted in (("schema_id", int), ("schema_version", int), ("schema", str)):
        value = obj.get(name)
        if value is not None and (not isinstance(value, wanted) or isinstance(value, bool)):
            raise BadRequest(
                f"{what}.{name} must be {'an integer' if wanted is int else 'a string'}"
            )
    for name in ("subject", "subject_name_strategy"):
        if obj.get(name) is not None and not isinstance(obj[name], str):
            raise BadRequest(f"{what}.{name} must be a string")
    strategy = obj.get("subject_name_strategy")
    schema_type = proxy_serde.schema_type(kind) if kind else None
    arguments = {
        "topic": topic,
        "is_key": what == "key",
        "schema_type": schema_type,
        "schema_id": obj.get("schema_id"),
        "schema_version": obj.get("schema_version"),
        "schema_text": obj.get("schema"),
        "subject": obj.get("subject"),
        "strategy": strategy.upper() if strategy else None,
    }
    data = obj.get("data")
    try:
        resolved = proxy_serde.resolve(**arguments)
        if data is None:  # a null key or value (a tombstone) has no bytes to frame
            return None, proxy_serde.embedded_name(resolved.schema.schema_type), None
        payload = serde.serialize(resolved.schema_id, resolved.schema, data)
    except proxy_serde.SCHEMA_ERRORS as exc:
        raise proxy_serde.v3_error(exc, schema_type=schema_type, where=what) from None
    return payload, proxy_serde.embedded_name(resolved.schema.schema_type), resolved


def _v3_timestamp(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest("timestamp must be an ISO 8601 date-time string")
    try:
        parsed = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise BadRequest(f"timestamp {value!r} is not an ISO 8601 date-time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    ms = int(parsed.timestamp() * 1000)
    if ms < 0:
        raise BadRequest(f"timestamp {value!r} is before 1970")
    return ms


def parse_v3_record(doc: Any, *, topic: str) -> OutRecord:
    """One v3 produce document for ``topic`` → OutRecord (400 naming the field that is
    wrong; a schema'd key or value that does not convert, as :mod:`schemaregistry.serde`
    says)."""
    if not isinstance(doc, dict):
        raise BadRequest("each record must be a JSON object")
    partition = doc.get("partition_id")
    if partition is not None and (
        not isinstance(partition, int) or isinstance(partition, bool) or partition < 0
    ):
        raise BadRequest(f"partition_id must be a non-negative integer, got {partition!r}")
    headers = doc.get("headers") or []
    if not isinstance(headers, list):
        raise BadRequest('headers must be a list of {"name", "value"} objects')
    parsed_headers = []
    for i, header in enumerate(headers):
        if not isinstance(header, dict) or not isinstance(header.get("name"), str):
            raise BadRequest(f"headers[{i}] must be an object with a string name")
        value = header.get("value")
        parsed_headers.append(
            (header["name"], None if value is None else _b64(value, what=f"headers[{i}].value"))
        )
    key, key_type, key_schema = _v3_data(doc.get("key"), what="key", topic=topic)
    value, value_type, value_schema = _v3_data(doc.get("value"), what="value", topic=topic)
    return OutRecord(
        key=key,
        value=value,
        partition=partition,
        headers=tuple(parsed_headers),
        timestamp_ms=_v3_timestamp(doc.get("timestamp")),
        key_type=key_type,
        value_type=value_type,
        key_schema=key_schema,
        value_schema=value_schema,
    )


# -- v2 ---------------------------------------------------------------------------------------
V2_SCHEMA_FIELDS = ("key_schema", "key_schema_id", "value_schema", "value_schema_id")
V2_SCHEMA_TYPES = tuple(
    f"application/vnd.kafka.{fmt}.v2+json" for fmt in ("avro", "jsonschema", "protobuf")
)


def _v2_entries(body: Any, partition: int | None) -> list[tuple[Any, Any, int | None]]:
    """(key, value, partition) of each record of a v2 body, as JSON (422 when invalid)."""
    if not isinstance(body, dict):
        raise Unprocessable("the request body must be a JSON object with a records list")
    records = body.get("records")
    if not isinstance(records, list) or not records:
        raise Unprocessable("records must be a non-empty list", error_code=42203)
    out = []
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise Unprocessable(f"records[{i}] must be a JSON object", error_code=42203)
        p = record.get("partition") if partition is None else partition
        if p is not None and (not isinstance(p, int) or isinstance(p, bool) or p < 0):
            raise Unprocessable(
                f"records[{i}].partition must be a non-negative integer", error_code=42203
            )
        out.append((record.get("key"), record.get("value"), p))
    return out


def parse_v2_body(body: Any, *, embedded: str, partition: int | None = None) -> list[OutRecord]:
    """A v2 produce body in the ``json`` or ``binary`` format → records (422 when invalid)."""
    entries = _v2_entries(body, partition)
    for field_name in V2_SCHEMA_FIELDS:
        if body.get(field_name) is not None:
            raise Unprocessable(
                f"{field_name} needs a Schema Registry format: produce with "
                f"{', '.join(V2_SCHEMA_TYPES)}",
                error_code=42205,
            )
    out = []
    fmt = embedded.upper()
    for i, (k, v, p) in enumerate(entries):
        key = _v2_data(k, embedded=embedded, what=f"records[{i}].key")
        value = _v2_data(v, embedded=embedded, what=f"records[{i}].value")
        out.append(
            OutRecord(
                key=key,
                value=value,
                partition=p,
                key_type=fmt if key is not None else None,
                value_type=fmt if value is not None else None,
            )
        )
    return out


def _v2_data(data: Any, *, embedded: str, what: str) -> bytes | None:
    if data is None:
        return None
    if embedded == "binary":
        if not isinstance(data, str):
            raise Unprocessable(f"{what} must be a base64 string", error_code=42203)
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise Unprocessable(f"{what} is not valid base64", error_code=42203) from None
    return json.dumps(data, separators=(",", ":")).encode()


@dataclass(frozen=True, slots=True)
class V2SchemaBatch:
    """A v2 body in a Schema Registry format: its records, framed, and the schemas' ids."""

    records: list[OutRecord]
    key_schema_id: int | None
    value_schema_id: int | None


def parse_v2_schema_body(
    body: Any, *, embedded: str, topic: str, partition: int | None = None
) -> V2SchemaBatch:
    """A v2 produce body in the ``avro``, ``jsonschema`` or ``protobuf`` format → framed
    records. The key and value schemas are registered under TopicNameStrategy's subjects
    (``<topic>-key``, ``<topic>-value``) or named by id; the whole request fails when one
    record does not convert, as in Confluent's proxy (42201/42202 a schema is missing, 42205
    invalid, 40801 the registry refused, 42203 a record does not fit)."""
    entries = _v2_entries(body, partition)
    schema_type = proxy_serde.schema_type(embedded)
    schemas = {
        which: _v2_schema(
            body,
            which,
            topic=topic,
            schema_type=schema_type,
            needed=any(entry[index] is not None for entry in entries),
        )
        for index, which in enumerate(("key", "value"))
    }
    out = []
    fmt = embedded.upper()
    for i, entry in enumerate(entries):
        data: dict[str, bytes | None] = {}
        for index, which in enumerate(("key", "value")):
            resolved = schemas[which]
            if entry[index] is None or resolved is None:
                data[which] = None
                continue
            try:
                data[which] = serde.serialize(resolved.schema_id, resolved.schema, entry[index])
            except serde.DataError as exc:
                raise proxy_serde.v2_error(
                    exc, schema_type=schema_type, where=f"records[{i}].{which}"
                ) from None
        out.append(
            OutRecord(
                key=data["key"],
                value=data["value"],
                partition=entry[2],
                key_type=fmt if data["key"] is not None else None,
                value_type=fmt if data["value"] is not None else None,
                key_schema=schemas["key"],
                value_schema=schemas["value"],
            )
        )
    key_schema, value_schema = schemas["key"], schemas["value"]
    return V2SchemaBatch(
        out,
        key_schema.schema_id if key_schema else None,
        value_schema.schema_id if value_schema else None,
    )


def _v2_schema(
    body: dict[str, Any], which: str, *, topic: str, schema_type: str, needed: bool
) -> serde.Resolved | None:
    """The key or value schema a v2 body names (``<which>_schema`` or ``_schema_id``)."""
    text = body.get(f"{which}_schema")
    schema_id = body.get(f"{which}_schema_id")
    if text is None and schema_id is None:
        if needed:
            raise Unprocessable(
                f"Request includes {which}s but does not include {which} schema "
                f"({which}_schema or {which}_schema_id)",
                error_code=42201 if which == "key" else 42202,
            )
        return None
    if text is not None and schema_id is not None:
        raise Unprocessable(f"give {which}_schema or {which}_schema_id, not both", error_code=42205)
    if schema_id is not None and (not isinstance(schema_id, int) or isinstance(schema_id, bool)):
        raise Unprocessable(f"{which}_schema_id must be an integer", error_code=42205)
    if text is not None and not isinstance(text, str):
        raise Unprocessable(
            f"{which}_schema must be the schema as a string (JSON text for Avro and JSON "
            "Schema, .proto text for Protobuf)",
            error_code=42205,
        )
    try:
        return proxy_serde.resolve(
            topic=topic,
            is_key=which == "key",
            schema_type=schema_type,
            schema_id=schema_id,
            schema_text=text,
        )
    except proxy_serde.SCHEMA_ERRORS as exc:
        raise proxy_serde.v2_error(exc, schema_type=schema_type, where=f"{which}_schema") from None


# -- sending ----------------------------------------------------------------------------------
@dataclass
class _Pending:
    record: OutRecord
    done: threading.Event = field(default_factory=threading.Event)
    outcome: Delivery | ApiError | None = None


def _delivery_error(err: KafkaError) -> ApiError:
    code = err.code()
    text = f"Kafka rejected the record: {err.str()}"
    if code in (KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC):
        return NotFound(text)
    if code in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
        return KafkaUnavailable(text)
    if code < 0:
        return KafkaUnavailable(text)
    return ApiError(text, status_code=kafka_error_status(code))


def _callback(pending: _Pending) -> Callable[[KafkaError | None, Any], None]:
    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            pending.outcome = _delivery_error(err)
        else:
            ts_type, ts = msg.timestamp()
            pending.outcome = Delivery(
                record=pending.record,
                partition=msg.partition(),
                offset=msg.offset(),
                timestamp_ms=ts if ts_type != 0 else None,
            )
        pending.done.set()

    return on_delivery


def produce(
    *,
    topic: TopicImage,
    records: list[OutRecord | ApiError],
    timeout: float = DELIVERY_TIMEOUT_S,
    v2: bool = False,
) -> list[Delivery | ApiError]:
    """Send ``records`` (already-failed entries pass through) and wait for every outcome."""
    producer = gateway().producer()
    pending: list[_Pending | ApiError] = []
    for record in records:
        if isinstance(record, ApiError):
            pending.append(record)
            continue
        if record.partition is not None:
            try:
                partition_get(topic=topic, partition=record.partition, v2=v2)
            except NotFound as missing:  # this record fails; the others still go out
                pending.append(missing)
                continue
        entry = _Pending(record)
        kwargs: dict[str, Any] = {
            "value": record.value,
            "key": record.key,
            "on_delivery": _callback(entry),
        }
        if record.partition is not None:
            kwargs["partition"] = record.partition
        if record.headers:
            kwargs["headers"] = list(record.headers)
        if record.timestamp_ms is not None:
            kwargs["timestamp"] = record.timestamp_ms
        try:
            _produce_one(producer, topic.name, kwargs)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() == KafkaError.MSG_SIZE_TOO_LARGE:
                pending.append(
                    ApiError(
                        f"the record is too large: {error.str()}",
                        status_code=413,
                    )
                )
            else:
                pending.append(_delivery_error(error))
            continue
        pending.append(entry)
    deadline = time.monotonic() + timeout
    outcomes: list[Delivery | ApiError] = []
    for item in pending:
        if isinstance(item, ApiError):
            outcomes.append(item)
            continue
        if not item.done.wait(max(0.0, deadline - time.monotonic())) or item.outcome is None:
            outcomes.append(
                KafkaUnavailable(f"the record was not acknowledged within {timeout:.0f} s")
            )
        else:
            outcomes.append(item.outcome)
    return outcomes


def _produce_one(producer: Any, topic: str, kwargs: dict[str, Any]) -> None:
    """``producer.produce``, waiting for room when the local queue is full."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            if time.monotonic() > deadline:
                raise KafkaUnavailable("the producer queue stayed full; retry later") from None
            time.sleep(0.01)

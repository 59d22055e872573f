"""Producing records over HTTP: REST Proxy v3 and v2 bodies → Kafka records → delivery reports.

Theory of operation
-------------------
Parsing is separate from sending. ``parse_v3_record`` turns one v3 JSON document
(``{"partition_id", "headers", "key": {"type", "data"}, "value": {...}, "timestamp"}``) into
an :class:`OutRecord` or raises a 400 naming the field; ``parse_v2_body`` does the same for a
v2 ``{"records": [...]}`` body in the ``json`` or ``binary`` embedded format. Serialization
follows Confluent: BINARY data is base64, JSON data is any JSON value written compactly,
STRING data is UTF-8 text, a missing key or value is null. Schema Registry formats (AVRO,
PROTOBUF, JSONSCHEMA, schema ids) are refused with a message saying Weir has no registry.

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
from topics.selectors import partition_get
from weir.metadata.image import TopicImage

__all__ = [
    "Delivery",
    "OutRecord",
    "parse_v2_body",
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


def _v3_data(obj: Any, *, what: str) -> tuple[bytes | None, str | None]:
    """(bytes, type) of a v3 ``key`` / ``value`` object; (None, None) when absent."""
    if obj is None:
        return None, None
    if not isinstance(obj, dict):
        raise BadRequest(f'{what} must be an object like {{"type": "JSON", "data": ...}}')
    used = [f for f in SCHEMA_FIELDS if obj.get(f) is not None]
    kind = obj.get("type")
    if kind is None:
        kind = "JSON"  # no registry to look a schema up in: plain JSON
    if not isinstance(kind, str):
        raise BadRequest(f"{what}.type must be a string, one of {', '.join(V3_TYPES)}")
    kind = kind.upper()
    if kind in SCHEMA_REGISTRY_TYPES or used:
        named = kind if kind in SCHEMA_REGISTRY_TYPES else ", ".join(used)
        raise BadRequest(
            f"{what}: {named} needs a Schema Registry, which Weir does not support; "
            f"use type BINARY, JSON or STRING"
        )
    if kind not in V3_TYPES:
        raise BadRequest(
            f"{what}.type {obj.get('type')!r} is not supported: use BINARY, JSON or STRING"
        )
    data = obj.get("data")
    if kind == "BINARY":
        return (None if data is None else _b64(data, what=f"{what}.data")), kind
    if kind == "STRING":
        if data is None:
            return None, kind
        if not isinstance(data, str):
            raise BadRequest(f"{what}.data must be a string for type STRING")
        return data.encode(), kind
    if "data" not in obj:
        return None, kind
    return json.dumps(data, separators=(",", ":")).encode(), kind


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


def parse_v3_record(doc: Any) -> OutRecord:
    """One v3 produce document → OutRecord (400 naming the field that is wrong)."""
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
    key, key_type = _v3_data(doc.get("key"), what="key")
    value, value_type = _v3_data(doc.get("value"), what="value")
    return OutRecord(
        key=key,
        value=value,
        partition=partition,
        headers=tuple(parsed_headers),
        timestamp_ms=_v3_timestamp(doc.get("timestamp")),
        key_type=key_type,
        value_type=value_type,
    )


# -- v2 ---------------------------------------------------------------------------------------
def parse_v2_body(body: Any, *, embedded: str, partition: int | None = None) -> list[OutRecord]:
    """A v2 produce body in the ``json`` or ``binary`` format → records (422 when invalid)."""
    if not isinstance(body, dict):
        raise Unprocessable("the request body must be a JSON object with a records list")
    for field_name in ("key_schema", "value_schema", "key_schema_id", "value_schema_id"):
        if body.get(field_name) is not None:
            raise Unprocessable(
                f"{field_name} needs a Schema Registry, which Weir does not support; "
                "produce in the json or binary embedded format without schemas",
                error_code=42205,
            )
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
        key = _v2_data(record.get("key"), embedded=embedded, what=f"records[{i}].key")
        value = _v2_data(record.get("value"), embedded=embedded, what=f"records[{i}].value")
        fmt = embedded.upper()
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

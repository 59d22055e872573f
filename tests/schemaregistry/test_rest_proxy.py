"""The REST proxy's Schema Registry formats: v2 produce in ``avro``/``jsonschema``/``protobuf``,
v2 consumer instances that decode them, and v3 produce with ``"type": "AVRO" | "JSONSCHEMA" |
"PROTOBUF"``, against the registry of a real in-process cluster
(tests/schemaregistry/conftest.py). Records are read back with a plain confluent-kafka
Consumer and decoded independently of Weir's serde (fastavro, json, protobuf's own classes
from the registry's ``serialized`` descriptor), so the framing is proved, not assumed."""

from __future__ import annotations

import base64
import io
import json
import struct
import time
import uuid
from typing import Any

import fastavro
import pytest
from confluent_kafka import Consumer, TopicPartition
from django.conf import settings
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from rest_framework.test import APIClient

from controlplane.cluster import gateway
from schemaregistry.registry import registry
from tests.weir.inprocess import ThreadedBroker
from topics.services import NewTopic, topic_create

pytestmark = pytest.mark.django_db

AVRO_V2 = "application/vnd.kafka.avro.v2+json"
JSONSCHEMA_V2 = "application/vnd.kafka.jsonschema.v2+json"
PROTOBUF_V2 = "application/vnd.kafka.protobuf.v2+json"
V2 = "application/vnd.kafka.v2+json"

USER = json.dumps(
    {
        "type": "record",
        "name": "User",
        "namespace": "com.acme",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "age", "type": ["null", "int"], "default": None},
        ],
    }
)
ORDER_JSON = json.dumps(
    {
        "title": "Order",
        "type": "object",
        "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
        "required": ["id"],
    }
)
ORDER_PROTO = """syntax = "proto3";
package acme;
message Order {
  int64 id = 1;
  string note = 2;
}
"""


@pytest.fixture
def topic(registry_broker: ThreadedBroker, clean_registry: None) -> str:
    """A new one-partition topic the control plane sees."""
    name = f"proxy-{uuid.uuid4().hex[:8]}"
    topic_create(topic=NewTopic(name=name, partitions_count=1, replication_factor=1))
    deadline = time.monotonic() + 20
    while name not in gateway().image().topics:
        assert time.monotonic() < deadline, f"topic {name} never appeared in the metadata"
        time.sleep(0.05)
    return name


def post(client: APIClient, url: str, body: Any, content_type: str) -> tuple[int, Any]:
    answer = client.post(url, json.dumps(body), content_type=content_type)
    return answer.status_code, answer.json()


def read(broker: ThreadedBroker, topic: str, count: int) -> list[Any]:
    """The first ``count`` records of ``topic``-0, with a plain Kafka consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "proxy-reader",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        found: list[Any] = []
        deadline = time.monotonic() + 20
        while len(found) < count and time.monotonic() < deadline:
            found += [m for m in consumer.consume(count, timeout=0.5) if m.error() is None]
        assert len(found) == count, f"read {len(found)} of {count} records"
        return found
    finally:
        consumer.close()


def unframe(data: bytes) -> tuple[int, bytes]:
    magic, schema_id = struct.unpack(">bI", data[:5])
    assert magic == 0
    return schema_id, data[5:]


def avro_value(schema_id: int, payload: bytes) -> Any:
    schema = fastavro.parse_schema(json.loads(registry().schema_by_id(schema_id)["schema"]))
    return fastavro.schemaless_reader(io.BytesIO(payload), schema, None)


def protobuf_class(schema_id: int, full_name: str) -> Any:
    text = registry().schema_by_id(schema_id, fmt="serialized")["schema"]
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


# -- v2 produce ------------------------------------------------------------------------------
def test_v2_avro_produce_registers_topic_name_subjects_and_frames_records(
    registry_broker: ThreadedBroker, operator: APIClient, topic: str
) -> None:
    body = {
        "key_schema": '"string"',
        "value_schema": USER,
        "records": [
            {"key": "k1", "value": {"name": "ann", "age": {"int": 31}}},
            {"key": "k2", "value": {"name": "bob", "age": None}},
            {"key": "k3", "value": {"name": "cy"}},  # age takes its default
        ],
    }
    status, answer = post(operator, f"/kafka/topics/{topic}", body, AVRO_V2)
    assert status == 200, answer
    key_id, value_id = answer["key_schema_id"], answer["value_schema_id"]
    assert [(o["partition"], o["offset"], o["error_code"]) for o in answer["offsets"]] == [
        (0, 0, None),
        (0, 1, None),
        (0, 2, None),
    ]
    assert registry().version(f"{topic}-key", "latest")["id"] == key_id
    assert registry().version(f"{topic}-value", "latest")["id"] == value_id

    messages = read(registry_broker, topic, 3)
    keys = [unframe(m.key()) for m in messages]
    values = [unframe(m.value()) for m in messages]
    assert {schema_id for schema_id, _ in keys} == {key_id}
    assert {schema_id for schema_id, _ in values} == {value_id}
    assert [avro_value(key_id, p) for _, p in keys] == ["k1", "k2", "k3"]
    assert [avro_value(value_id, p) for _, p in values] == [
        {"name": "ann", "age": 31},
        {"name": "bob", "age": None},
        {"name": "cy", "age": None},
    ]

    # The id alone names the schema from then on; to one partition, without keys.
    again = {"value_schema_id": value_id, "records": [{"value": {"name": "dee"}}]}
    status, answer = post(operator, f"/kafka/topics/{topic}/partitions/0", again, AVRO_V2)
    assert status == 200, answer
    assert (answer["key_schema_id"], answer["value_schema_id"]) == (None, value_id)
    assert answer["offsets"][0]["offset"] == 3


def test_v2_jsonschema_and_protobuf_produce_frame_records_with_their_ids(
    registry_broker: ThreadedBroker, operator: APIClient, topic: str
) -> None:
    status, answer = post(
        operator,
        f"/kafka/topics/{topic}",
        {"value_schema": ORDER_JSON, "records": [{"value": {"id": 7, "note": "é"}}]},
        JSONSCHEMA_V2,
    )
    assert status == 200, answer
    json_id = answer["value_schema_id"]
    assert registry().schema_by_id(json_id)["schemaType"] == "JSON"

    # Another format under the same subject: compatibility would refuse the change of type.
    registry().set_config(f"{topic}-value", "NONE")
    status, answer = post(
        operator,
        f"/kafka/topics/{topic}",
        {"value_schema": ORDER_PROTO, "records": [{"value": {"id": "9", "note": "x"}}]},
        PROTOBUF_V2,
    )
    assert status == 200, answer
    proto_id = answer["value_schema_id"]
    assert proto_id != json_id

    first, second = read(registry_broker, topic, 2)
    schema_id, payload = unframe(first.value())
    assert schema_id == json_id and json.loads(payload.decode()) == {"id": 7, "note": "é"}
    schema_id, payload = unframe(second.value())
    assert schema_id == proto_id
    assert payload[0] == 0  # message indexes [0]: the first message type, one zero byte
    order = protobuf_class(proto_id, "acme.Order").FromString(payload[1:])
    assert (order.id, order.note) == (9, "x")


def test_v2_produce_errors_name_the_problem_with_confluents_codes(
    operator: APIClient, topic: str
) -> None:
    url = f"/kafka/topics/{topic}"
    # Three formats under one subject: no compatibility rule between them.
    registry().set_config(f"{topic}-value", "NONE")

    def error(body: dict[str, Any], content_type: str = AVRO_V2) -> tuple[int, int, str]:
        status, answer = post(operator, url, body, content_type)
        return status, answer["error_code"], answer["message"]

    status, code, _ = error({"value_schema": USER, "records": [{"key": "k", "value": None}]})
    assert (status, code) == (422, 42201)
    status, code, _ = error({"records": [{"value": {"name": "x"}}]})
    assert (status, code) == (422, 42202)
    status, code, message = error({"value_schema_id": 987654, "records": [{"value": 1}]})
    assert (status, code) == (408, 40801) and "987654" in message
    status, code, message = error(
        {"value_schema": USER, "records": [{"value": {"name": "ok"}}, {"value": {"name": 5}}]}
    )
    assert (status, code) == (422, 42203)
    assert "records[1].value" in message and "name" in message and "string" in message
    status, code, message = error(
        {"value_schema": ORDER_JSON, "records": [{"value": {"note": "no id"}}]}, JSONSCHEMA_V2
    )
    assert (status, code) == (422, 42203) and "'id' is a required property" in message
    status, code, message = error(
        {"value_schema": ORDER_PROTO, "records": [{"value": {"nope": 1}}]}, PROTOBUF_V2
    )
    assert (status, code) == (422, 42203) and "nope" in message
    status, code, message = error({"value_schema": '{"type": "recrod"}', "records": [{"value": 1}]})
    assert (status, code) == (422, 42205) and "recrod" in message
    # Nothing was written by any of them.
    assert read_offsets(operator, topic) == 0


def read_offsets(client: APIClient, topic: str) -> int:
    answer = client.get(f"/kafka/topics/{topic}/partitions/0/offsets")
    return answer.json()["end_offset"]


# -- v2 consumers ----------------------------------------------------------------------------
def test_v2_avro_consumer_instance_reads_records_back_as_avro_json(
    operator: APIClient, viewer: APIClient, topic: str
) -> None:
    values = [{"name": "ann", "age": {"int": 31}}, {"name": "bob", "age": None}]
    body = {
        "key_schema": '"string"',
        "value_schema": USER,
        "records": [{"key": f"k{i}", "value": v} for i, v in enumerate(values)],
    }
    assert post(operator, f"/kafka/topics/{topic}", body, AVRO_V2)[0] == 200
    group = f"avro-{uuid.uuid4().hex[:8]}"
    status, created = post(
        viewer,
        f"/kafka/consumers/{group}",
        {"name": "a1", "format": "avro", "auto.offset.reset": "earliest"},
        V2,
    )
    assert status == 200, created
    base = f"/kafka/consumers/{group}/instances/a1"
    try:
        parts = {"partitions": [{"topic": topic, "partition": 0}]}
        assert (
            viewer.post(f"{base}/assignments", json.dumps(parts), content_type=V2).status_code
            == 204
        )
        wrong = viewer.get(f"{base}/records", HTTP_ACCEPT="application/vnd.kafka.json.v2+json")
        assert (wrong.status_code, wrong.json()["error_code"]) == (406, 40601)
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + 20
        while len(records) < 2 and time.monotonic() < deadline:
            answer = viewer.get(f"{base}/records?timeout=500", HTTP_ACCEPT=AVRO_V2)
            assert answer.status_code == 200, answer.content
            assert answer["Content-Type"].startswith(AVRO_V2)
            records += answer.json()
        assert [(r["key"], r["value"], r["offset"]) for r in records] == [
            ("k0", values[0], 0),
            ("k1", values[1], 1),
        ]
    finally:
        viewer.delete(base)


# -- v3 produce ------------------------------------------------------------------------------
def v3(client: APIClient, topic: str, *documents: dict[str, Any]) -> list[dict[str, Any]]:
    """Each document's report (one document: the answer itself, with its status in it)."""
    url = f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}/topics/{topic}/records"
    answer = client.post(
        url, "\n".join(json.dumps(d) for d in documents), content_type="application/json"
    )
    if len(documents) == 1:
        body = answer.json()
        body.setdefault("status", answer.status_code)
        return [body]
    assert answer.status_code == 200, answer.content
    return [json.loads(line) for line in answer.content.decode().splitlines()]


def test_v3_produce_with_schema_id_version_and_subject_name_strategies(
    registry_broker: ThreadedBroker, operator: APIClient, topic: str
) -> None:
    value_id = registry().register(f"{topic}-value", USER)["id"]
    reports = v3(
        operator,
        topic,
        {"value": {"schema_id": value_id, "data": {"name": "ann", "age": {"int": 1}}}},
        {"value": {"type": "AVRO", "schema_version": 1, "data": {"name": "bob"}}},
        {"value": {"type": "AVRO", "data": {"name": "latest"}}},  # the subject's latest
        {
            "key": {
                "type": "JSONSCHEMA",
                "schema": ORDER_JSON,
                "data": {"id": 1},
                "subject_name_strategy": "TOPIC_RECORD_NAME",
            },
            "value": {
                "type": "PROTOBUF",
                "schema": ORDER_PROTO,
                "data": {"id": "5"},
                "subject_name_strategy": "RECORD_NAME",
            },
        },
    )
    assert [r["error_code"] for r in reports] == [200, 200, 200, 200], reports
    expected = {
        "type": "AVRO",
        "subject": f"{topic}-value",
        "schema_id": value_id,
        "schema_version": 1,
    }
    for report in reports[:3]:
        assert {k: v for k, v in report["value"].items() if k != "size"} == expected
    key, value = reports[3]["key"], reports[3]["value"]
    assert (key["type"], key["subject"], key["schema_version"]) == (
        "JSONSCHEMA",
        f"{topic}-Order",
        1,
    )
    assert (value["type"], value["subject"], value["schema_version"]) == (
        "PROTOBUF",
        "acme.Order",
        1,
    )
    assert registry().version(f"{topic}-Order", 1)["id"] == key["schema_id"]
    assert registry().version("acme.Order", "latest")["id"] == value["schema_id"]

    messages = read(registry_broker, topic, 4)
    decoded = []
    for message in messages[:3]:
        schema_id, payload = unframe(message.value())
        assert schema_id == value_id
        decoded.append(avro_value(schema_id, payload))
    assert decoded == [
        {"name": "ann", "age": 1},
        {"name": "bob", "age": None},
        {"name": "latest", "age": None},
    ]
    schema_id, payload = unframe(messages[3].key())
    assert schema_id == key["schema_id"] and json.loads(payload) == {"id": 1}
    schema_id, payload = unframe(messages[3].value())
    assert schema_id == value["schema_id"] and payload[0] == 0
    assert protobuf_class(schema_id, "acme.Order").FromString(payload[1:]).id == 5
    assert reports[3]["value"]["size"] == len(messages[3].value())


def test_v3_schema_failures_are_4xx_per_record_naming_the_problem(
    operator: APIClient, topic: str
) -> None:
    registry().register(f"{topic}-value", USER)
    reports = v3(
        operator,
        topic,
        {"value": {"type": "AVRO", "schema_id": 987654, "data": {"name": "x"}}},
        {"value": {"type": "AVRO", "data": {"name": ["not", "a", "string"]}}},
        {"value": {"type": "AVRO", "schema_id": 1, "schema": USER, "data": {}}},
        {
            "value": {
                "type": "AVRO",
                "schema_version": 1,
                "subject_name_strategy": "RECORD_NAME",
                "data": {"name": "x"},
            }
        },
        {"value": {"type": "AVRO", "schema": '{"type": "recrod"}', "data": 1}},
        {"value": {"type": "JSONSCHEMA", "subject": "nobody-has-this", "data": 1}},
        {"value": {"type": "AVRO", "data": {"name": "fine"}}},
    )
    statuses = [r["error_code"] for r in reports]
    assert statuses == [42207, 400, 400, 400, 42205, 42207, 200], reports
    messages = [r.get("message", "") for r in reports]
    assert "987654" in messages[0]
    assert "value.name" in messages[1] and "string" in messages[1]
    assert "schema_id" in messages[2] and "schema" in messages[2]
    assert "RECORD_NAME" in messages[3]
    assert "recrod" in messages[4]
    assert "nobody-has-this" in messages[5]
    assert reports[6]["offset"] == 0  # only the good record was written

    (single,) = v3(operator, topic, {"value": {"type": "AVRO", "schema_id": 987654, "data": 1}})
    assert (single["status"], single["error_code"]) == (422, 42207)

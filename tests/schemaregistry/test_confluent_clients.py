"""confluent-kafka's own Schema Registry client, serializers and deserializers against Weir,
unchanged: the registry served over real HTTP (pytest-django's ``live_server``, the Django app
in a thread of this process) and records produced and consumed through a real in-process
broker (tests/schemaregistry/conftest.py). Each format proves auto-registration under
TopicNameStrategy (and that the id in each record's framing is the registry's), a round trip
of values, ``use.latest.version``, references, and a refused incompatible change; the
client's admin calls are checked one by one at the end."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryError,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from tests.controlplane_fixtures import PASSWORD
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.django_db(transaction=True)

Values = list[Any]


# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture
def registry_url(live_server: Any, registry_broker: ThreadedBroker) -> str:
    """``schema.registry.url`` as a Confluent user writes it, for Weir served over HTTP."""
    return f"{live_server.url}/schema-registry"


def _client(make_user: Callable[[str, str], object], url: str, role: str) -> SchemaRegistryClient:
    name = f"sr-{role}-{uuid.uuid4().hex[:6]}"
    make_user(name, role)
    return SchemaRegistryClient({"url": url, "basic.auth.user.info": f"{name}:{PASSWORD}"})


@pytest.fixture
def client(
    make_user: Callable[[str, str], object], registry_url: str, clean_registry: None
) -> Iterator[SchemaRegistryClient]:
    """A client signed in as an operator: what producers and consumers run as."""
    found = _client(make_user, registry_url, "operator")
    yield found
    found.close()


@pytest.fixture
def admin_client(
    make_user: Callable[[str, str], object], registry_url: str, clean_registry: None
) -> Iterator[SchemaRegistryClient]:
    """A client signed in as an admin (configs and deletes)."""
    found = _client(make_user, registry_url, "admin")
    yield found
    found.close()


@pytest.fixture
def topic(clean_registry: None) -> str:
    """A topic (and so subjects ``<topic>-value``) no other test uses."""
    return f"orders-{uuid.uuid4().hex[:8]}"


def value_ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def produce_and_consume(
    broker: ThreadedBroker,
    topic: str,
    serialize: Callable[[Any, SerializationContext], bytes | None],
    deserialize: Callable[[bytes, SerializationContext], Any],
    values: Values,
) -> tuple[list[bytes], Values]:
    """``values`` through a real Producer and back through a Consumer: the raw record
    values (with their framing) and what the deserializer made of them."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value=serialize(value, value_ctx(topic)), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"g-{topic}",
            "enable.auto.commit": False,
        }
    )
    raw: list[bytes] = []
    try:
        # Assigned, not subscribed: no group rebalance to wait for.
        consumer.assign([TopicPartition(topic, 0, 0)])
        for _ in range(300):
            if len(raw) == len(values):
                break
            message = consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            raw.append(message.value())
    finally:
        consumer.close()
    assert len(raw) == len(values)
    return raw, [deserialize(data, value_ctx(topic)) for data in raw]


def framed_id(data: bytes) -> int:
    """The schema id of Confluent's wire format: magic byte 0, then the id (big-endian)."""
    assert data[0] == 0
    return int.from_bytes(data[1:5], "big")


# -- AVRO ---------------------------------------------------------------------------------


def avro_record(name: str, *fields: dict[str, Any], namespace: str = "shop") -> str:
    return json.dumps(
        {"type": "record", "name": name, "namespace": namespace, "fields": list(fields)}
    )


ORDER_V1 = avro_record("Order", {"name": "id", "type": "long"}, {"name": "item", "type": "string"})
ORDER_V2 = avro_record(
    "Order",
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "note", "type": "string", "default": ""},
)
# A new field without a default: v1's data cannot be read with it (BACKWARD refuses).
ORDER_BREAKING = avro_record(
    "Order",
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "qty", "type": "int"},
)


def test_avro_auto_registers_and_round_trips(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    values = [{"id": n, "item": f"thing-{n}"} for n in range(3)]
    raw, decoded = produce_and_consume(
        registry_broker,
        topic,
        AvroSerializer(client, ORDER_V1),
        AvroDeserializer(client),
        values,
    )
    assert decoded == values
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 1
    assert json.loads(latest.schema.schema_str) == json.loads(ORDER_V1)
    assert {framed_id(data) for data in raw} == {latest.schema_id}


def test_avro_use_latest_version_writes_with_the_latest_schema(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(ORDER_V1, "AVRO"))
    v2_id = client.register_schema(subject, Schema(ORDER_V2, "AVRO"))
    serializer = AvroSerializer(
        client,
        ORDER_V1,
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    raw, decoded = produce_and_consume(
        registry_broker, topic, serializer, AvroDeserializer(client), [{"id": 1, "item": "a"}]
    )
    assert framed_id(raw[0]) == v2_id
    assert decoded == [{"id": 1, "item": "a", "note": ""}]  # v2's default filled in
    assert client.get_versions(subject) == [1, 2]  # nothing registered by the serializer


def test_avro_named_type_from_another_subject_through_a_reference(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    address_subject = f"{topic}-address"
    client.register_schema(
        address_subject, Schema(avro_record("Address", {"name": "city", "type": "string"}), "AVRO")
    )
    order = Schema(
        avro_record(
            "Order", {"name": "id", "type": "long"}, {"name": "ship_to", "type": "shop.Address"}
        ),
        "AVRO",
        [SchemaReference("shop.Address", address_subject, 1)],
    )
    values = [{"id": 7, "ship_to": {"city": "Lyon"}}]
    raw, decoded = produce_and_consume(
        registry_broker, topic, AvroSerializer(client, order), AvroDeserializer(client), values
    )
    assert decoded == values
    registered = client.get_latest_version(f"{topic}-value")
    assert framed_id(raw[0]) == registered.schema_id
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == [
        ("shop.Address", address_subject, 1)
    ]
    assert client.get_referenced_by(address_subject, 1) == [registered.schema_id]


def test_avro_incompatible_change_is_refused_with_409(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(ORDER_V1, "AVRO"))
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(ORDER_BREAKING, "AVRO"))
    assert refused.value.http_status_code == 409
    # The serializer's auto-registration meets the same refusal.
    serializer = AvroSerializer(client, ORDER_BREAKING)
    with pytest.raises(SchemaRegistryError) as again:
        serializer({"id": 1, "item": "a", "qty": 2}, value_ctx(topic))
    assert again.value.http_status_code == 409
    assert client.get_versions(subject) == [1]


# -- JSON Schema --------------------------------------------------------------------------


def json_schema(properties: dict[str, Any], required: list[str], **extra: Any) -> str:
    return json.dumps(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Order",
            "type": "object",
            "properties": properties,
            "required": required,
            **extra,
        }
    )


JSON_V1 = json_schema({"id": {"type": "integer"}, "item": {"type": "string"}}, ["id", "item"])
# Closed content model: a new optional property is BACKWARD compatible.
JSON_CLOSED_V1 = json_schema(
    {"id": {"type": "integer"}, "item": {"type": "string"}},
    ["id", "item"],
    additionalProperties=False,
)
JSON_CLOSED_V2 = json_schema(
    {"id": {"type": "integer"}, "item": {"type": "string"}, "note": {"type": "string"}},
    ["id", "item"],
    additionalProperties=False,
)
# A property's type changed: old data is not valid under it.
JSON_BREAKING = json_schema({"id": {"type": "string"}, "item": {"type": "string"}}, ["id", "item"])


def test_json_schema_auto_registers_and_round_trips(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    values = [{"id": n, "item": f"thing-{n}"} for n in range(3)]
    raw, decoded = produce_and_consume(
        registry_broker,
        topic,
        JSONSerializer(JSON_V1, client),
        JSONDeserializer(None, schema_registry_client=client),
        values,
    )
    assert decoded == values
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON"
    assert json.loads(latest.schema.schema_str) == json.loads(JSON_V1)
    assert {framed_id(data) for data in raw} == {latest.schema_id}


def test_json_schema_use_latest_version_and_a_refused_change(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    subject = f"{topic}-value"
    client.register_schema(subject, Schema(JSON_CLOSED_V1, "JSON"))
    v2_id = client.register_schema(subject, Schema(JSON_CLOSED_V2, "JSON"))
    serializer = JSONSerializer(
        JSON_CLOSED_V1,
        client,
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    values = [{"id": 1, "item": "a", "note": "only v2 allows this"}]
    raw, decoded = produce_and_consume(
        registry_broker,
        topic,
        serializer,
        JSONDeserializer(None, schema_registry_client=client),
        values,
    )
    assert framed_id(raw[0]) == v2_id and decoded == values
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(JSON_BREAKING, "JSON"))
    assert refused.value.http_status_code == 409
    assert client.get_versions(subject) == [1, 2]


def test_json_schema_ref_to_another_subject(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    address_subject = f"{topic}-address"
    address = json.dumps(
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }
    )
    client.register_schema(address_subject, Schema(address, "JSON"))
    order = Schema(
        json_schema(
            {"id": {"type": "integer"}, "ship_to": {"$ref": "address.json"}}, ["id", "ship_to"]
        ),
        "JSON",
        [SchemaReference("address.json", address_subject, 1)],
    )
    values = [{"id": 3, "ship_to": {"city": "Oslo"}}]
    raw, decoded = produce_and_consume(
        registry_broker,
        topic,
        JSONSerializer(order, client),
        JSONDeserializer(None, schema_registry_client=client),
        values,
    )
    assert decoded == values
    assert framed_id(raw[0]) == client.get_latest_version(f"{topic}-value").schema_id
    # The referenced schema is enforced: a ship_to without its required city is refused.
    with pytest.raises(Exception, match="city"):
        JSONSerializer(order, client)({"id": 4, "ship_to": {}}, value_ctx(topic))


# -- PROTOBUF -----------------------------------------------------------------------------


def proto_classes(tag: str) -> tuple[type[Message], str]:
    """``Order`` (which imports ``Address`` from another file and has a map field) built at
    runtime from FileDescriptorProtos, as protoc's generated code would define it; and the
    import path of the address file. The files are named per test (``tag``) because the
    serializer registers an import under its path as the subject."""
    F = descriptor_pb2.FieldDescriptorProto
    address_path = f"shop_{tag}/address.proto"  # a subject with a slash, URL-encoded
    address = descriptor_pb2.FileDescriptorProto(
        name=address_path, package=f"shop_{tag}", syntax="proto3"
    )
    message = address.message_type.add(name="Address")
    message.field.add(name="city", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)

    order = descriptor_pb2.FileDescriptorProto(
        name=f"shop_{tag}/order.proto", package=f"shop_{tag}", syntax="proto3"
    )
    order.dependency.append(address_path)
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    message.field.add(
        name="ship_to",
        number=2,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_OPTIONAL,
        type_name=f".shop_{tag}.Address",
    )
    message.field.add(
        name="lines",
        number=3,
        type=F.TYPE_MESSAGE,
        label=F.LABEL_REPEATED,
        type_name=f".shop_{tag}.Order.LinesEntry",
    )
    entry = message.nested_type.add(name="LinesEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)

    pool = descriptor_pool.DescriptorPool()
    pool.Add(address)
    pool.Add(order)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(f"shop_{tag}.Order"))
    return cls, address_path


def test_protobuf_registers_imports_as_references_and_round_trips(
    client: SchemaRegistryClient, registry_broker: ThreadedBroker, topic: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    order_cls, address_path = proto_classes(tag)
    values = [
        order_cls(id=n, ship_to={"city": f"city-{n}"}, lines={"apple": n, "pear": 2 * n})
        for n in range(3)
    ]
    raw, decoded = produce_and_consume(
        registry_broker,
        topic,
        ProtobufSerializer(order_cls, client, {"use.deprecated.format": False}),
        ProtobufDeserializer(order_cls, {"use.deprecated.format": False}),
        values,
    )
    assert decoded == values
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert "message Order {" in latest.schema.schema_str
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        (address_path, address_path, 1)
    ]
    assert address_path in client.get_subjects()
    assert {framed_id(data) for data in raw} == {latest.schema_id}
    # Confluent's framing: the id, then the message indexes (0 = the first message, Order).
    assert {data[5:6] for data in raw} == {b"\x00"}


def test_protobuf_use_latest_version_and_a_refused_change(
    client: SchemaRegistryClient,
    admin_client: SchemaRegistryClient,
    registry_broker: ThreadedBroker,
    topic: str,
) -> None:
    tag = uuid.uuid4().hex[:8]
    order_cls, _ = proto_classes(tag)
    subject = f"{topic}-value"
    # Registered by the serializer first (with its reference), then used as the latest.
    first = ProtobufSerializer(order_cls, client, {"use.deprecated.format": False})
    first(order_cls(id=1), value_ctx(topic))
    # Looked at through another client: confluent-kafka caches a subject's versions without
    # the format they were fetched in, and the serializer needs them ``serialized``.
    registered = admin_client.get_latest_version(subject)
    serializer = ProtobufSerializer(
        order_cls,
        client,
        {
            "use.deprecated.format": False,
            "auto.register.schemas": False,
            "use.latest.version": True,
        },
    )
    raw, decoded = produce_and_consume(
        registry_broker,
        topic,
        serializer,
        ProtobufDeserializer(order_cls, {"use.deprecated.format": False}),
        [order_cls(id=2, lines={"fig": 1})],
    )
    assert framed_id(raw[0]) == registered.schema_id
    assert decoded == [order_cls(id=2, lines={"fig": 1})]
    # id changes from int64 to string: a different wire kind, refused.
    breaking = registered.schema.schema_str.replace("int64 id = 1;", "string id = 1;")
    assert breaking != registered.schema.schema_str
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(breaking, "PROTOBUF", registered.schema.references))
    assert refused.value.http_status_code == 409
    assert admin_client.get_versions(subject) == [1]


# -- SchemaRegistryClient's admin calls ---------------------------------------------------


def test_admin_calls_of_the_client(
    client: SchemaRegistryClient, admin_client: SchemaRegistryClient, topic: str
) -> None:
    subject, other = f"{topic}-value", f"{topic}-key"
    # Schemas of this test alone: other tests' subjects share ids of equal schemas.
    namespace = topic.replace("-", "_")
    v1_text, v2_text, breaking_text = (
        text.replace('"shop"', f'"{namespace}"') for text in (ORDER_V1, ORDER_V2, ORDER_BREAKING)
    )
    v1_id = client.register_schema(subject, Schema(v1_text, "AVRO"))
    v2 = client.register_schema_full_response(subject, Schema(v2_text, "AVRO"))
    assert (v2.subject, v2.schema_id > v1_id) == (subject, True)
    assert client.register_schema(other, Schema(v1_text, "AVRO")) == v1_id  # one id

    assert {subject, other} <= set(client.get_subjects())
    assert client.get_subjects(subject_prefix=topic) == sorted([other, subject])
    assert client.get_subjects(subject_prefix=topic, offset=1, limit=1) == [subject]
    assert client.get_contexts() == ["."]
    assert client.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]
    assert client.get_versions(subject) == [1, 2]
    latest = client.get_latest_version(subject)
    assert (latest.version, latest.schema_id) == (2, v2.schema_id)
    assert client.get_version(subject, 1).schema_id == v1_id
    found = client.lookup_schema(subject, Schema(v1_text, "AVRO"))
    assert (found.subject, found.version, found.schema_id) == (subject, 1, v1_id)
    with pytest.raises(SchemaRegistryError) as missing:
        client.lookup_schema(subject, Schema(breaking_text, "AVRO"))
    assert (missing.value.http_status_code, missing.value.error_code) == (404, 40403)

    schema = client.get_schema(v1_id)
    assert (schema.schema_type, json.loads(schema.schema_str)) == ("AVRO", json.loads(v1_text))
    assert admin_client.get_schema(v1_id, subject_name=subject).schema_str == schema.schema_str
    assert client.get_subjects_by_schema_id(v1_id) == sorted([other, subject])
    assert client.get_subjects_by_schema_id(v1_id, subject_name=other) == [other]
    assert {(v.subject, v.version) for v in client.get_schema_versions(v1_id)} == {
        (subject, 1),
        (other, 1),
    }
    assert [v.subject for v in client.get_schema_versions(v1_id, subject_name=subject)] == [subject]
    with pytest.raises(SchemaRegistryError) as unknown:
        client.get_schema(2**31 - 1)
    assert (unknown.value.http_status_code, unknown.value.error_code) == (404, 40403)

    # Compatibility: tested, then the subject's level changed (admins only).
    assert client.test_compatibility(subject, Schema(v2_text, "AVRO")) is True
    assert client.test_compatibility(subject, Schema(breaking_text, "AVRO")) is False
    assert client.test_compatibility_all_versions(subject, Schema(v2_text, "AVRO")) is True
    assert client.get_compatibility() == "BACKWARD"
    with pytest.raises(SchemaRegistryError) as forbidden:
        client.set_compatibility(subject, "NONE")  # an operator may not
    assert forbidden.value.http_status_code == 403
    assert admin_client.set_compatibility(subject, "none") == {"compatibility": "NONE"}
    assert client.get_compatibility(subject) == "NONE"
    assert client.test_compatibility(subject, Schema(breaking_text, "AVRO")) is True
    assert client.register_schema(subject, Schema(breaking_text, "AVRO")) > v2.schema_id

    # Deleting: soft first (still listed with deleted), then permanently.
    assert admin_client.delete_version(subject, 3) == 3
    assert admin_client.delete_subject(subject) == [1, 2]
    assert subject not in client.get_subjects()
    assert subject in client.get_subjects(deleted=True)
    assert client.get_subjects(subject_prefix=topic, deleted_only=True) == [subject]
    assert client.get_versions(subject, deleted=True) == [1, 2, 3]
    assert client.get_versions(subject, deleted_only=True) == [1, 2, 3]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_versions(subject)
    assert gone.value.error_code == 40401
    assert admin_client.delete_subject(subject, permanent=True) == [1, 2, 3]
    assert subject not in client.get_subjects(deleted=True)
    assert client.get_schema(v1_id).schema_str == schema.schema_str  # still under ``other``


def test_schema_by_id_answers_max_id_when_asked(
    viewer: Any, client: SchemaRegistryClient, topic: str
) -> None:
    """``?fetchMaxId=true``: the highest id the registry gave out, beside the schema."""
    v1_id = client.register_schema(f"{topic}-value", Schema(ORDER_V1, "AVRO"))
    v2_id = client.register_schema(f"{topic}-value", Schema(ORDER_V2, "AVRO"))
    path = f"/schema-registry/schemas/ids/{v1_id}"
    with_max = viewer.get(path, {"fetchMaxId": "true", "subject": f"{topic}-value"}).json()
    assert with_max["maxId"] >= v2_id > v1_id
    assert "maxId" not in viewer.get(path).json()

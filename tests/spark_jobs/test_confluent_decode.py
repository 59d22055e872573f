"""``spark_jobs.schemas.from_confluent``: Confluent-framed records as typed Spark columns.

Most tests are pure and fast: Confluent's framing taken apart and rebuilt, each format's
schema mapped to a Spark type, and values decoded by the real libraries (fastavro, protobuf)
fitted to that type and accepted by Arrow as Spark builds the column. The registry tests
(``registry_url``) serve the real ``/schema-registry`` view with pytest-django's
``live_server`` over the shared cluster (``cp_cluster``, where the registry keeps
``_schemas``): one decodes JSON and Protobuf records through it without Spark, and one Spark
query reads a topic of Avro-framed records written by two schema versions.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import urllib.request
import uuid
from collections.abc import Callable

import fastavro
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from spark_jobs.registry_client import RegistryAccess
from spark_jobs.schema_types import (
    UnsupportedSchema,
    avro_type,
    conform,
    json_schema_type,
    protobuf_type,
    protobuf_value,
)
from spark_jobs.schemas import (
    ReaderSchema,
    RecordNotDecoded,
    decode_one,
    from_confluent,
    reader_schema,
)
from tests.controlplane_fixtures import PASSWORD, basic
from tests.spark_jobs.conftest import create_topic, produce
from weir.registry.framing import NotFramed, frame, parse_frame

# -- framing --------------------------------------------------------------------------------


def test_frame_round_trips_id_payload_and_protobuf_indexes() -> None:
    assert frame(7, b"abc") == b"\x00\x00\x00\x00\x07abc"
    assert parse_frame(b"\x00\x00\x00\x01\x00xyz") == parse_frame(frame(256, b"xyz"))
    assert parse_frame(frame(256, b"xyz")).schema_id == 256
    # [0] is the single 0 byte; other paths are a zigzag count then zigzag indexes.
    assert frame(3, b"p", [0]) == b"\x00\x00\x00\x00\x03\x00p"
    assert frame(3, b"p", [1, 2]) == b"\x00\x00\x00\x00\x03\x04\x02\x04p"
    for indexes in ([0], [1], [2, 0, 70], [300]):
        parsed = parse_frame(frame(99, b"payload", indexes), protobuf=True)
        assert (parsed.schema_id, parsed.indexes, parsed.payload) == (
            99,
            tuple(indexes),
            b"payload",
        )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "too few"),
        (b"\x00\x00\x01", "too few"),
        (b'{"id": 1}', "not Confluent's magic byte 0"),
        (b"\x01\x00\x00\x00\x01payload", "first byte is 1"),
    ],
)
def test_bytes_that_are_not_framed_say_why(data: bytes, message: str) -> None:
    with pytest.raises(NotFramed, match=message):
        parse_frame(data)


def test_protobuf_indexes_running_past_the_record_are_not_framed() -> None:
    with pytest.raises(NotFramed, match="past the end"):
        parse_frame(b"\x00\x00\x00\x00\x01\x04\x02", protobuf=True)  # count 2, one index


def test_a_record_that_is_not_framed_fails_naming_where_unless_permissive() -> None:
    reader = ReaderSchema(1, "AVRO", LongType())
    access = RegistryAccess("http://127.0.0.1:1/unused")  # never asked: framing fails first
    with pytest.raises(RecordNotDecoded, match="topic t partition 2 offset 41 is not"):
        decode_one(
            access, reader, b"plain text", "FAILFAST", lambda: "topic t partition 2 offset 41"
        )
    assert decode_one(access, reader, b"plain text", "PERMISSIVE") is None
    assert decode_one(access, reader, None, "FAILFAST") is None  # a tombstone is null


# -- Avro -----------------------------------------------------------------------------------

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "qty", "type": "int"},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "extra", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "digest", "type": {"type": "fixed", "name": "Md5", "size": 4}},
        {
            "name": "ship",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Address",
                    "fields": [{"name": "city", "type": "string"}],
                },
            ],
        },
        {"name": "bill", "type": ["null", "Address"], "default": None},
        {"name": "either", "type": ["int", "string", "null"]},
        {"name": "wide", "type": ["int", "long"]},
        {"name": "ratio", "type": "float"},
        {"name": "ok", "type": "boolean"},
    ],
}

ADDRESS = StructType([StructField("city", StringType(), False)])
ORDER_TYPE = StructType(
    [
        StructField("id", LongType(), False),
        StructField("note", StringType(), True),
        StructField("qty", IntegerType(), False),
        StructField("price", DecimalType(9, 2), False),
        StructField("day", DateType(), False),
        StructField("at", TimestampType(), False),
        StructField("local", TimestampNTZType(), False),
        StructField("status", StringType(), False),
        StructField("tags", ArrayType(StringType(), False), False),
        StructField("extra", MapType(StringType(), DoubleType(), True), False),
        StructField("digest", BinaryType(), False),
        StructField("ship", ADDRESS, True),
        StructField("bill", ADDRESS, True),
        StructField(
            "either",
            StructType(
                [
                    StructField("member0", IntegerType(), True),
                    StructField("member1", StringType(), True),
                ]
            ),
            True,
        ),
        StructField("wide", LongType(), False),
        StructField("ratio", FloatType(), False),
        StructField("ok", BooleanType(), False),
    ]
)


def test_avro_types_map_as_spark_from_avro_maps_them() -> None:
    assert avro_type(ORDER) == (ORDER_TYPE, False)
    assert avro_type(["null", "string"]) == (StringType(), True)
    assert avro_type("bytes") == (BinaryType(), False)


def test_avro_named_types_come_from_references_and_recursion_is_refused() -> None:
    address = {
        "type": "record",
        "name": "Address",
        "namespace": "shop",
        "fields": [{"name": "city", "type": "string"}],
    }
    user = {
        "type": "record",
        "name": "User",
        "namespace": "shop",
        "fields": [{"name": "home", "type": "Address"}],
    }
    from spark_jobs.schema_types import avro_named_types

    spark_type, _ = avro_type(user, avro_named_types(address))
    assert spark_type == StructType([StructField("home", ADDRESS, False)])
    with pytest.raises(UnsupportedSchema, match="not defined"):
        avro_type(user)
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    with pytest.raises(UnsupportedSchema, match="recursive"):
        avro_type(node)


def _avro_round_trip(schema: dict, record: dict) -> object:
    parsed = fastavro.parse_schema(schema)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, record)
    return fastavro.schemaless_reader(io.BytesIO(out.getvalue()), parsed, None)


def test_fastavro_values_fit_the_struct_and_arrow_builds_the_column() -> None:
    at = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC)
    record = {
        "id": 1,
        "note": None,
        "qty": 3,
        "price": decimal.Decimal("12.34"),
        "day": dt.date(2024, 5, 6),
        "at": at,
        "local": dt.datetime(2024, 5, 6, 7, 8, 9, 5),
        "status": "PAID",
        "tags": ["a", "b"],
        "extra": {"x": 1.5, "y": None},
        "digest": b"\x01\x02\x03\x04",
        "ship": {"city": "Oslo"},
        "bill": None,
        "either": "text",
        "wide": 2**40,
        "ratio": 0.5,
        "ok": True,
    }
    value = conform(_avro_round_trip(ORDER, record), ORDER_TYPE)
    other = conform(_avro_round_trip(ORDER, {**record, "either": 7, "note": "n"}), ORDER_TYPE)
    column = pa.array([value, other, None], type=to_arrow_type(ORDER_TYPE, timezone="UTC"))
    rows = column.to_pylist()
    assert rows[0]["either"] == {"member0": None, "member1": "text"}
    assert rows[1]["either"] == {"member0": 7, "member1": None}
    assert rows[1]["note"] == "n" and rows[2] is None
    assert rows[0]["at"] == at and rows[0]["day"] == dt.date(2024, 5, 6)
    assert rows[0]["price"] == decimal.Decimal("12.34")
    assert rows[0]["local"] == dt.datetime(2024, 5, 6, 7, 8, 9, 5)
    assert dict(rows[0]["extra"]) == {"x": 1.5, "y": None}
    assert rows[0]["ship"] == {"city": "Oslo"} and rows[0]["tags"] == ["a", "b"]
    assert rows[0]["digest"] == b"\x01\x02\x03\x04" and rows[0]["wide"] == 2**40


# -- JSON Schema ----------------------------------------------------------------------------

PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": ["integer", "null"]},
        "score": {"type": "number"},
        "born": {"type": "string", "format": "date"},
        "seen": {"type": "string", "format": "date-time"},
        "home": {"$ref": "#/definitions/Address"},
        "emails": {"type": "array", "items": {"type": "string"}},
        "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
        "anything": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "definitions": {
        "Address": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_json_schema_properties_map_to_struct_fields_by_type() -> None:
    spark_type, nullable = json_schema_type(PERSON)
    assert not nullable
    assert spark_type == StructType(
        [
            StructField("name", StringType()),
            StructField("age", LongType()),
            StructField("score", DoubleType()),
            StructField("born", DateType()),
            StructField("seen", TimestampType()),
            StructField("home", StructType([StructField("city", StringType())])),
            StructField("emails", ArrayType(StringType(), False)),
            StructField("labels", MapType(StringType(), LongType(), False)),
            StructField("anything", StringType()),
        ]
    )
    value = conform(
        {
            "name": "Ada",
            "age": None,
            "score": 3,
            "born": "1990-01-02",
            "seen": "2024-01-01T00:00:00Z",
            "home": {"city": "Rome", "zip": "x"},
            "emails": [],
            "labels": {"a": 1},
            "anything": {"deep": [1]},
        },
        spark_type,
    )
    row = pa.array([value], type=to_arrow_type(spark_type, timezone="UTC")).to_pylist()[0]
    assert row["score"] == 3.0 and row["born"] == dt.date(1990, 1, 2)
    assert row["seen"] == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert row["home"] == {"city": "Rome"}  # properties the schema lacks are dropped
    assert row["anything"] == '{"deep": [1]}'
    with pytest.raises(ValueError, match="expected an integer"):
        conform({"age": "old"}, spark_type)


def test_json_schema_recursion_is_refused() -> None:
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#"}}}}
    with pytest.raises(UnsupportedSchema, match="recursive"):
        json_schema_type(tree)


# -- Protobuf -------------------------------------------------------------------------------

PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";

message Order {
  int64 id = 1;
  uint64 big = 2;
  uint32 small = 3;
  string note = 4;
  repeated string tags = 5;
  map<string, int32> counts = 6;
  Status status = 7;
  google.protobuf.Timestamp at = 8;
  Line line = 9;
  bytes blob = 10;
  message Line { string sku = 1; double amount = 2; }
}
enum Status { NEW = 0; PAID = 1; }
"""


def _proto_classes(text: str) -> Callable[[str], type]:
    from google.protobuf import message_factory

    from weir.registry.formats.protobuf import FORMAT

    pool = FORMAT.parse(text).pool
    return lambda name: message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


def test_protobuf_messages_map_to_structs_and_decode_by_field() -> None:
    cls = _proto_classes(PROTO)("shop.Order")
    spark_type = protobuf_type(cls.DESCRIPTOR)
    line = StructType([StructField("sku", StringType()), StructField("amount", DoubleType())])
    assert spark_type == StructType(
        [
            StructField("id", LongType()),
            StructField("big", DecimalType(20, 0)),
            StructField("small", LongType()),
            StructField("note", StringType()),
            StructField("tags", ArrayType(StringType(), False)),
            StructField("counts", MapType(StringType(), IntegerType(), True)),
            StructField("status", StringType()),
            StructField("at", TimestampType()),
            StructField("line", line),
            StructField("blob", BinaryType()),
        ]
    )
    message = cls(id=5, big=2**64 - 1, small=2**32 - 1, tags=["x"], counts={"a": 2}, status=1)
    message.at.FromDatetime(dt.datetime(2024, 2, 3, 4, 5, 6))
    decoded = cls.FromString(message.SerializeToString())
    value = conform(protobuf_value(decoded), spark_type)
    row = pa.array([value], type=to_arrow_type(spark_type, timezone="UTC")).to_pylist()[0]
    assert row["big"] == decimal.Decimal(2**64 - 1) and row["small"] == 2**32 - 1
    assert row["status"] == "PAID" and row["line"] is None and row["note"] == ""
    assert row["at"] == dt.datetime(2024, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert dict(row["counts"]) == {"a": 2} and row["tags"] == ["x"]


def test_recursive_protobuf_messages_are_refused() -> None:
    cls = _proto_classes('syntax = "proto3"; message Node { Node next = 1; }')("Node")
    with pytest.raises(UnsupportedSchema, match="recursive"):
        protobuf_type(cls.DESCRIPTOR)


# -- through the registry -------------------------------------------------------------------


@pytest.fixture
def registry_url(live_server: object, cp_cluster: object, make_user: Callable) -> str:
    """The real ``/schema-registry`` view served over HTTP, storing in the shared cluster."""
    make_user("decoder", "operator")
    return f"{live_server.url}/schema-registry"  # type: ignore[attr-defined]


def _register(url: str, subject: str, schema: str, schema_type: str = "AVRO") -> int:
    body = json.dumps({"schema": schema, "schemaType": schema_type}).encode()
    request = urllib.request.Request(
        f"{url}/subjects/{subject}/versions",
        data=body,
        headers={
            "Content-Type": "application/vnd.schemaregistry.v1+json",
            "Authorization": basic("decoder"),
        },
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return int(json.loads(answer.read())["id"])


LINE_PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  google.protobuf.Timestamp at = 2;
  message Line { string sku = 1; int32 qty = 2; }
  repeated Line lines = 3;
}
"""


def test_json_and_protobuf_records_decode_with_the_schema_their_frame_names(
    registry_url: str,
) -> None:
    access = RegistryAccess(registry_url, auth=("decoder", PASSWORD))
    tag = uuid.uuid4().hex[:8]
    person = json.dumps(PERSON)
    json_id = _register(registry_url, f"people-{tag}-value", person, "JSON")
    reader = reader_schema(access, f"people-{tag}-value")
    assert reader.schema_id == json_id and reader.spark_type == json_schema_type(PERSON)[0]
    data = frame(json_id, json.dumps({"name": "Ada", "age": 36, "born": "1990-01-02"}).encode())
    value = decode_one(access, reader, data, "FAILFAST")
    assert value["name"] == "Ada" and value["age"] == 36 and value["born"] == dt.date(1990, 1, 2)

    proto_id = _register(registry_url, f"orders-{tag}-value", LINE_PROTO, "PROTOBUF")
    order = reader_schema(access, f"orders-{tag}-value")
    assert order.message == "shop.Order"
    cls = _proto_classes(LINE_PROTO)
    message = cls("shop.Order")(id=9, lines=[cls("shop.Order.Line")(sku="s1", qty=2)])
    message.at.FromDatetime(dt.datetime(2024, 2, 3, 4, 5, 6))
    value = decode_one(access, order, frame(proto_id, message.SerializeToString(), [0]), "FAILFAST")
    assert value == {
        "id": 9,
        "at": dt.datetime(2024, 2, 3, 4, 5, 6, tzinfo=dt.UTC),
        "lines": [{"sku": "s1", "qty": 2}],
    }
    # A nested message, named by the frame's indexes [0, 0], into a column of that type.
    line = reader_schema(access, f"orders-{tag}-value", message="shop.Order.Line")
    payload = cls("shop.Order.Line")(sku="s2", qty=5).SerializeToString()
    assert decode_one(access, line, frame(proto_id, payload, [0, 0]), "FAILFAST") == {
        "sku": "s2",
        "qty": 5,
    }
    with pytest.raises(RecordNotDecoded, match=f"schema id {proto_id}. does not decode"):
        decode_one(access, order, frame(proto_id, b"\xff\xff\xff", [0]), "FAILFAST")


PAYMENT_V1 = {
    "type": "record",
    "name": "Payment",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "amount",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
# Version 2 adds an optional field: version-1 records read with it get its default.
PAYMENT_V2 = {
    **PAYMENT_V1,
    "fields": [
        *PAYMENT_V1["fields"],
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    ],
}


def test_spark_reads_avro_framed_records_as_typed_columns(
    spark: object, bootstrap: str, topic_name: str, registry_url: str
) -> None:
    subject = f"{topic_name}-value"
    v1 = _register(registry_url, subject, json.dumps(PAYMENT_V1))
    v2 = _register(registry_url, subject, json.dumps(PAYMENT_V2))
    at = dt.datetime(2024, 3, 4, 5, 6, 7, 890000, tzinfo=dt.UTC)

    def avro(schema: dict, schema_id: int, record: dict) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
        return frame(schema_id, out.getvalue())

    values = [
        avro(PAYMENT_V1, v1, {"id": i, "amount": decimal.Decimal(f"{i}.25"), "at": at})
        if i % 2
        else avro(PAYMENT_V2, v2, {"id": i, "amount": decimal.Decimal(i), "at": at, "tags": ["t"]})
        for i in range(20)
    ]
    create_topic(bootstrap, topic_name, 2)
    produce(bootstrap, [(topic_name, i % 2, None, v) for i, v in enumerate(values)])

    def raw() -> object:
        reader = spark.read.format("weir").option("kafka.bootstrap.servers", bootstrap)  # type: ignore[attr-defined]
        return reader.option("subscribe", topic_name).load()

    access = {"registry_url": registry_url, "auth": ("decoder", PASSWORD)}
    typed = from_confluent(raw(), topic=topic_name, **access)
    assert typed.schema["value"].dataType == StructType(
        [
            StructField("id", LongType(), False),
            StructField("amount", DecimalType(9, 2), False),
            StructField("at", TimestampType(), False),
            StructField("tags", ArrayType(StringType(), False), False),
        ]
    )
    rows = typed.select("value.*").orderBy("id").collect()
    assert [r["id"] for r in rows] == list(range(20))
    assert rows[3]["amount"] == decimal.Decimal("3.25") and rows[3]["tags"] == []
    assert rows[4]["amount"] == decimal.Decimal(4) and rows[4]["tags"] == ["t"]
    assert all(r["at"].astimezone(dt.UTC) == at for r in rows)

    # A record that is not Confluent-framed fails the query naming its offset, or is null.
    produce(bootstrap, [(topic_name, 1, None, b"not framed")])  # partition 1, offset 10
    raw_now = raw()  # a loaded frame keeps the offsets it planned; load again to see it
    with pytest.raises(PySparkException, match=f"topic {topic_name} partition 1 offset 10"):
        from_confluent(raw_now, subject=subject, **access).collect()
    permissive = from_confluent(
        raw_now, subject=subject, mode="PERMISSIVE", output="payment", **access
    )
    bad = permissive.where("payment IS NULL").select("partition", "offset", "value").collect()
    assert [tuple(r) for r in bad] == [(1, 10, b"not framed")]

"""weir.registry.serde as pure logic: Confluent's framing and message indexes, Avro's JSON
encoding (unions, bytes, defaults, logical types as their underlying type), JSON Schema and
Protobuf conversion, and the subject name strategies. Payloads are checked against bytes
written by hand or by fastavro/protobuf directly, not only round trips."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from weir.registry import serde
from weir.registry.formats import parse

AVRO = parse(
    "AVRO",
    json.dumps(
        {
            "type": "record",
            "name": "Event",
            "namespace": "com.acme",
            "fields": [
                {"name": "id", "type": "long"},
                {"name": "blob", "type": "bytes"},
                {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
                {
                    "name": "who",
                    "type": [
                        "null",
                        {"type": "record", "name": "A", "fields": [{"name": "n", "type": "int"}]},
                        {"type": "record", "name": "B", "fields": [{"name": "n", "type": "int"}]},
                    ],
                    "default": None,
                },
                {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
            ],
        }
    ),
)
PROTO = parse(
    "PROTOBUF",
    """syntax = "proto3";
package acme;
message Outer {
  int32 a = 1;
  message Inner { string s = 1; }
}
message Second { Outer.Inner inner = 1; }
""",
)


def test_framing_is_magic_zero_and_a_big_endian_id() -> None:
    assert serde.frame(258, b"xy") == b"\x00\x00\x00\x01\x02xy"
    assert serde.unframe(b"\x00\x00\x00\x01\x02xy") == (258, b"xy")
    for junk in (b"", b"\x00\x00", b"\x01\x00\x00\x00\x01x", b'{"json": 1}'):
        with pytest.raises(serde.DataError, match="Confluent-framed"):
            serde.unframe(junk)


def test_avro_json_encoding_picks_the_named_union_branch_and_fills_defaults() -> None:
    data = {"id": 1, "blob": "\u00ff\u0000", "at": 1700000000000, "who": {"com.acme.B": {"n": 2}}}
    payload = serde.encode(AVRO, data)
    raw = fastavro.parse_schema(json.loads(AVRO.canonical()))
    # Branch 2 (B) was written, not A, although {"n": 2} fits both.
    assert fastavro.schemaless_reader(io.BytesIO(payload), raw, None, return_record_name=True)[
        "who"
    ] == ("com.acme.B", {"n": 2})
    assert serde.decode(AVRO, payload) == {**data, "tags": []}


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"id": "1", "blob": "", "at": 0}, "value.id: expected an long"),
        ({"id": 1, "blob": "€", "at": 0}, "value.blob: expected bytes"),
        ({"id": 1, "blob": "", "at": 0, "who": {"n": 1}}, "value.who: expected a branch"),
        ({"id": 1, "blob": "", "at": 0, "tags": ["a", 2]}, "value.tags[1]: expected a string"),
        ({"id": 1, "blob": ""}, "field 'at' of com.acme.Event is missing"),
        ({"id": 2**63, "blob": "", "at": 0}, "value.id"),
    ],
)
def test_avro_data_that_does_not_fit_names_the_path(data: dict, words: str) -> None:
    with pytest.raises(serde.DataError, match=words.replace("[", r"\[").replace("]", r"\]")):
        serde.encode(AVRO, data)


def test_json_schema_validates_before_writing_compact_utf8() -> None:
    schema = parse("JSON", '{"type": "object", "properties": {"n": {"type": "integer"}}}')
    assert serde.encode(schema, {"n": 1, "s": "é"}) == '{"n":1,"s":"é"}'.encode()
    with pytest.raises(serde.DataError, match=r"value\['n'\]: 'x' is not of type 'integer'"):
        serde.encode(schema, {"n": "x"})


def test_protobuf_writes_index_zero_and_reads_nested_message_indexes() -> None:
    payload = serde.encode(PROTO, {"a": 5})
    assert payload == b"\x00\x08\x05"  # indexes [0], then field 1 varint 5
    assert serde.decode(PROTO, payload) == {"a": 5}
    # acme.Outer.Inner is [0, 0]: count 2 and two zeros, zigzag-encoded.
    assert serde.message_indexes([0, 0]) == b"\x04\x00\x00"
    inner = serde.message_indexes([0, 0]) + b"\x0a\x02hi"
    assert serde.decode(PROTO, inner) == {"s": "hi"}
    assert serde.decode(PROTO, serde.message_indexes([1]) + b"") == {}
    with pytest.raises(serde.DataError, match="names no message type"):
        serde.decode(PROTO, serde.message_indexes([7]))


@pytest.mark.parametrize(
    ("strategy", "is_key", "schema", "subject"),
    [
        ("TOPIC_NAME", True, None, "orders-key"),
        ("TOPIC_NAME", False, None, "orders-value"),
        ("RECORD_NAME", False, AVRO, "com.acme.Event"),
        ("TOPIC_RECORD_NAME", True, PROTO, "orders-acme.Outer"),
    ],
)
def test_subject_name_strategies(strategy: str, is_key: bool, schema, subject: str) -> None:
    assert serde.subject_name(strategy, "orders", is_key, schema) == subject


def test_record_strategies_need_a_schema_with_a_name() -> None:
    with pytest.raises(serde.SchemaArgumentError, match="needs the schema"):
        serde.subject_name("RECORD_NAME", "orders", False, None)
    untitled = parse("JSON", '{"type": "object"}')
    with pytest.raises(serde.SchemaArgumentError, match="title"):
        serde.subject_name("RECORD_NAME", "orders", False, untitled)
    with pytest.raises(serde.SchemaArgumentError, match="TOPIC_NAME"):
        serde.subject_name("NAME_OF_TOPIC", "orders", False, AVRO)

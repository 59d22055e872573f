"""The AVRO format: parsing (with references), stored and normalized text, and the
compatibility levels over Avro's reader/writer resolution rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from weir.registry.formats import InvalidSchema, ResolvedReference, check, parse


def avro(schema: Any, references: tuple[ResolvedReference, ...] = ()) -> Any:
    return parse("AVRO", json.dumps(schema), references)


def record(*fields: dict[str, Any], name: str = "User") -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "com.acme", "fields": list(fields)}


ID = {"name": "id", "type": "long"}
NAME = {"name": "name", "type": "string"}
EMAIL_OPTIONAL = {"name": "email", "type": ["null", "string"], "default": None}
EMAIL_REQUIRED = {"name": "email", "type": "string"}


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (record({"name": "a", "type": "strng"}), "unknown type 'strng'"),
        (record({"name": "a", "type": "int", "default": "x"}), "invalid default for field 'a'"),
        ({"type": "record", "fields": []}, 'has no "name"'),
        (record({"name": "a", "type": "int"}, {"name": "a", "type": "long"}), "a already in use"),
        ({"type": "enum", "name": "E", "symbols": ["A", "A"]}, "Duplicate symbol"),
        ({"type": "fixed", "name": "F"}, "size"),
        ("{not json", "not JSON"),
    ],
    ids=[
        "unknown-type",
        "bad-default",
        "missing-name",
        "duplicate-field",
        "duplicate-symbol",
        "fixed-without-size",
        "not-json",
    ],
)
def test_invalid_schema_message_says_what_is_wrong(schema: Any, says: str) -> None:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    with pytest.raises(InvalidSchema, match="Invalid schema") as raised:
        parse("AVRO", text)
    assert says in str(raised.value)


def test_unknown_logical_type_is_kept_as_a_property_as_java_avro_does() -> None:
    parsed = avro({"type": "int", "logicalType": "weird"})
    assert parsed.canonical() == '{"type":"int","logicalType":"weird"}'


def test_reference_names_a_type_by_full_name_and_stays_a_reference_in_stored_text() -> None:
    address = avro(record({"name": "street", "type": "string"}, name="Address"))
    ref = ResolvedReference("com.acme.Address", "address-value", 1, address)
    user = avro(record(ID, {"name": "home", "type": "com.acme.Address"}), (ref,))
    assert user.canonical() == (
        '{"type":"record","name":"User","namespace":"com.acme","fields":'
        '[{"name":"id","type":"long"},{"name":"home","type":"Address"}]}'
    )
    with pytest.raises(InvalidSchema, match=r"unknown type 'com\.acme\.Address'"):
        avro(record(ID, {"name": "home", "type": "com.acme.Address"}))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ('{"type": "string"}', '"string"'),
        (
            '{"name":"R","type":"record","fields":[{"type":"int","name":"a"}]}',
            '{ "type" : "record", "name" : "R", "fields" : [{"name":"a","type":{"type":"int"}}] }',
        ),
    ],
    ids=["primitive-object-form", "key-order-and-whitespace"],
)
def test_stored_text_is_the_same_for_spellings_of_one_schema(first: str, second: str) -> None:
    assert parse("AVRO", first).canonical() == parse("AVRO", second).canonical()


def test_stored_text_keeps_docs_defaults_aliases_and_field_order() -> None:
    text = (
        '{"type":"record","name":"R","doc":"d","fields":[{"name":"b","type":"int","default":1,'
        '"aliases":["old"]},{"name":"a","type":{"type":"long","logicalType":"timestamp-millis"}}]}'
    )
    assert parse("AVRO", text).canonical() == text


def test_normalized_sorts_properties_and_qualifies_names() -> None:
    one = avro(
        {
            "type": "record",
            "name": "com.acme.R",
            "fields": [{"name": "a", "type": {"type": "string", "z": 1, "a": 2}}],
        }
    )
    two = avro(
        {
            "type": "record",
            "name": "R",
            "namespace": "com.acme",
            "fields": [{"name": "a", "type": {"type": "string", "a": 2, "z": 1}}],
        }
    )
    assert one.canonical() != two.canonical()
    assert one.normalized().canonical() == two.normalized().canonical()


V1 = avro(record(ID, NAME))
V2_ADD_OPTIONAL = avro(record(ID, NAME, EMAIL_OPTIONAL))
V2_ADD_REQUIRED = avro(record(ID, NAME, EMAIL_REQUIRED))
V2_DROP_NAME = avro(record(ID))
V2_INT_TO_LONG = avro(record({"name": "n", "type": "long"}))
V1_INT = avro(record({"name": "n", "type": "int"}))
ENUM_AB = avro({"type": "enum", "name": "E", "symbols": ["A", "B"]})
ENUM_ABC = avro({"type": "enum", "name": "E", "symbols": ["A", "B", "C"]})
RENAMED = avro(record(ID, NAME, name="Customer"))


@pytest.mark.parametrize(
    ("level", "new", "previous", "compatible"),
    [
        ("BACKWARD", V2_ADD_OPTIONAL, [V1], True),
        ("BACKWARD", V2_ADD_REQUIRED, [V1], False),
        ("BACKWARD", V2_DROP_NAME, [V1], True),
        ("FORWARD", V2_DROP_NAME, [V1], False),
        ("FORWARD", V2_ADD_REQUIRED, [V1], True),
        ("FULL", V2_ADD_OPTIONAL, [V1], True),
        ("FULL", V2_ADD_REQUIRED, [V1], False),
        ("BACKWARD", V2_INT_TO_LONG, [V1_INT], True),
        ("FORWARD", V2_INT_TO_LONG, [V1_INT], False),
        ("BACKWARD", ENUM_ABC, [ENUM_AB], True),
        ("FORWARD", ENUM_ABC, [ENUM_AB], False),
        ("BACKWARD", RENAMED, [V1], False),
        ("NONE", V2_ADD_REQUIRED, [V1], True),
        ("BACKWARD", V1, [], True),
    ],
    ids=[
        "backward-add-optional",
        "backward-add-required",
        "backward-drop-field",
        "forward-drop-field",
        "forward-add-required",
        "full-add-optional",
        "full-add-required",
        "backward-int-promotes-to-long",
        "forward-long-does-not-narrow",
        "backward-enum-grows",
        "forward-enum-grows",
        "backward-record-renamed",
        "none-allows-anything",
        "first-version-always-fits",
    ],
)
def test_compatibility_matrix(level: str, new: Any, previous: list[Any], compatible: bool) -> None:
    assert (check(level, new, previous) == []) is compatible


# Three versions: v2 drops "score", v3 brings it back as an int with a default. v3 and v2
# read each other's data (a missing field takes its default; an unknown one is skipped), but v3
# and v1 disagree on the type of "score": compatible with the newest, not with the first.
CHAIN_V1 = avro(record(ID, {"name": "score", "type": "string"}))
CHAIN_V2 = avro(record(ID))
CHAIN_V3 = avro(record(ID, {"name": "score", "type": "int", "default": 0}))


@pytest.mark.parametrize(
    ("level", "compatible"),
    [
        ("BACKWARD", True),
        ("BACKWARD_TRANSITIVE", False),
        ("FORWARD", True),
        ("FORWARD_TRANSITIVE", False),
        ("FULL", True),
        ("FULL_TRANSITIVE", False),
        ("NONE", True),
    ],
)
def test_transitive_levels_check_every_version_others_only_the_newest(
    level: str, compatible: bool
) -> None:
    assert (check(level, CHAIN_V3, [CHAIN_V1, CHAIN_V2]) == []) is compatible


def test_missing_default_is_worded_as_confluent_words_it() -> None:
    [message] = check("BACKWARD", V2_ADD_REQUIRED, [V1])
    assert message == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'email' at path "
        "'/fields/2' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'email'}"
    )


def test_type_mismatch_names_the_path_of_the_field() -> None:
    messages = check("BACKWARD_TRANSITIVE", CHAIN_V3, [CHAIN_V1, CHAIN_V2])
    assert any("TYPE_MISMATCH" in m and "/fields/1/type" in m for m in messages)

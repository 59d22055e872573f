"""The JSON format: JSON Schema validation per draft, references by $ref URL, stored and
normalized text, and Confluent's JSON Schema compatibility rules through the levels."""

from __future__ import annotations

import json
from typing import Any

import pytest

from weir.registry.formats import InvalidSchema, ResolvedReference, check, parse


def js(schema: Any, references: tuple[ResolvedReference, ...] = ()) -> Any:
    return parse("JSON", json.dumps(schema), references)


def obj(properties: dict[str, Any], *, closed: bool = False, required: tuple[str, ...] = ()) -> Any:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return js(schema)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"type": "strin"}', "at type"),
        ('{"type": "object", "minProperties": -1}', "minProperties"),
        ('{"$schema": "http://example.com/mine", "type": "string"}', "unknown $schema"),
        ('{"type": "object", "properties": {"a": {"$ref": "other.json"}}}', "does not resolve"),
        ("[1, 2]", "JSON object or a boolean"),
        ("{nope", "not JSON"),
    ],
    ids=[
        "bad-type",
        "negative-limit",
        "unknown-draft",
        "unresolved-ref",
        "not-an-object",
        "not-json",
    ],
)
def test_invalid_schema_message_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(InvalidSchema) as raised:
        parse("JSON", text)
    assert says in str(raised.value)


@pytest.mark.parametrize(
    "draft",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ],
)
def test_every_supported_draft_parses(draft: str) -> None:
    assert js({"$schema": draft, "type": "string"}).schema_type == "JSON"


def test_draft_2020_keyword_is_checked_against_its_own_meta_schema() -> None:
    with pytest.raises(InvalidSchema, match="prefixItems"):
        parse(
            "JSON", '{"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": 3}'
        )


def test_reference_resolves_by_the_url_the_ref_uses() -> None:
    address = js({"type": "object", "properties": {"street": {"type": "string"}}})
    ref = ResolvedReference("address.json", "address-value", 1, address)
    person = js({"type": "object", "properties": {"home": {"$ref": "address.json"}}}, (ref,))
    assert person.references == (ref,)


def test_normalized_sorts_keys_and_stored_text_keeps_them() -> None:
    one = parse("JSON", '{"type": "object", "properties": {"b": {"type": "string"}, "a": {}}}')
    two = parse("JSON", '{"properties": {"a": {}, "b": {"type": "string"}}, "type": "object"}')
    assert one.canonical() == '{"type":"object","properties":{"b":{"type":"string"},"a":{}}}'
    assert one.canonical() != two.canonical()
    assert one.normalized().canonical() == two.normalized().canonical()


OPEN_A = obj({"a": {"type": "string"}})
OPEN_AB = obj({"a": {"type": "string"}, "b": {"type": "integer"}})
CLOSED_A = obj({"a": {"type": "string"}}, closed=True)
CLOSED_AB = obj({"a": {"type": "string"}, "b": {"type": "integer"}}, closed=True)
CLOSED_AB_REQ = obj(
    {"a": {"type": "string"}, "b": {"type": "integer"}}, closed=True, required=("b",)
)
OPEN_A_REQ = obj({"a": {"type": "string"}}, required=("a",))
A_INT = obj({"a": {"type": "integer"}})
A_NUMBER = obj({"a": {"type": "number"}})
ENUM_XY = js({"enum": ["x", "y"]})
ENUM_XYZ = js({"enum": ["x", "y", "z"]})
ONEOF = js({"oneOf": [{"type": "string"}, {"type": "integer"}]})
STRING = js({"type": "string"})


@pytest.mark.parametrize(
    ("level", "new", "previous", "difference"),
    [
        ("BACKWARD", OPEN_AB, [OPEN_A], "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
        ("FORWARD", OPEN_AB, [OPEN_A], None),
        ("BACKWARD", CLOSED_AB, [CLOSED_A], None),
        ("FORWARD", CLOSED_AB, [CLOSED_A], "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
        ("BACKWARD", CLOSED_AB_REQ, [CLOSED_A], "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"),
        ("BACKWARD", OPEN_A_REQ, [OPEN_A], "REQUIRED_ATTRIBUTE_ADDED"),
        ("BACKWARD", A_NUMBER, [A_INT], None),
        ("FORWARD", A_NUMBER, [A_INT], "TYPE_NARROWED"),
        ("BACKWARD", obj({"a": {"type": "boolean"}}), [OPEN_A], "TYPE_CHANGED"),
        ("BACKWARD", ENUM_XYZ, [ENUM_XY], None),
        ("FULL", ENUM_XYZ, [ENUM_XY], "ENUM_ARRAY_NARROWED"),
        (
            "BACKWARD",
            js({"type": "string", "maxLength": 5}),
            [js({"type": "string", "maxLength": 9})],
            "MAX_LENGTH_DECREASED",
        ),
        ("BACKWARD", ONEOF, [STRING], None),
        ("FORWARD", ONEOF, [STRING], "TYPE_CHANGED"),
        ("NONE", STRING, [A_INT], None),
    ],
    ids=[
        "backward-open-add",
        "forward-open-add",
        "backward-closed-add",
        "forward-closed-add",
        "backward-closed-add-required",
        "backward-required-added",
        "backward-integer-to-number",
        "forward-integer-to-number",
        "backward-type-changed",
        "backward-enum-grows",
        "full-enum-grows",
        "backward-max-length-decreased",
        "backward-string-to-oneof",
        "forward-string-to-oneof",
        "none-allows-anything",
    ],
)
def test_compatibility_matrix(
    level: str, new: Any, previous: list[Any], difference: str | None
) -> None:
    messages = check(level, new, previous)
    if difference is None:
        assert messages == []
    else:
        assert messages and any(f'errorType:"{difference}"' in m for m in messages), messages


# v1 has no length limit, v2 limits strings to 5 characters, v3 to 8: v3 reads everything
# v2 wrote (BACKWARD) but not everything v1 wrote (BACKWARD_TRANSITIVE); v2 cannot read all
# that v3 writes, so every FORWARD and FULL level fails.
CHAIN_V1 = js({"type": "string"})
CHAIN_V2 = js({"type": "string", "maxLength": 5})
CHAIN_V3 = js({"type": "string", "maxLength": 8})


@pytest.mark.parametrize(
    ("level", "compatible"),
    [
        ("BACKWARD", True),
        ("BACKWARD_TRANSITIVE", False),
        ("FORWARD", False),
        ("FORWARD_TRANSITIVE", False),
        ("FULL", False),
        ("FULL_TRANSITIVE", False),
        ("NONE", True),
    ],
)
def test_levels_over_three_versions(level: str, compatible: bool) -> None:
    assert (check(level, CHAIN_V3, [CHAIN_V1, CHAIN_V2]) == []) is compatible


def test_transitive_catches_a_change_the_newest_version_does_not_see() -> None:
    v1 = obj({"a": {"type": "string"}}, closed=True)
    v2 = obj({"a": {"type": "string"}, "b": {"type": "integer"}}, closed=True)
    v3 = obj({"a": {"type": "string"}, "b": {"type": "integer"}}, closed=True, required=("b",))
    # Old readers of v3's data: v2 declares "b" (optional) and reads it; v1 is closed and
    # has no "b", so a transitive check fails where the newest-only one passes.
    assert check("FORWARD", v3, [v1, v2]) == []
    assert check("FORWARD_TRANSITIVE", v3, [v1, v2]) != []


def test_message_is_worded_as_confluent_words_it() -> None:
    [message] = check("BACKWARD", OPEN_A_REQ, [OPEN_A])
    assert message == (
        '{errorType:"REQUIRED_ATTRIBUTE_ADDED", description:"The keyword at path '
        "'#/required/a' in the new schema is not present in the old schema\"}"
    )

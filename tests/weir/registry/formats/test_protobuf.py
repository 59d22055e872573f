"""The PROTOBUF format: parsing both input forms, references, printing, normalization and
Confluent's compatibility rules, all as pure logic (protoc runs in-process)."""

from __future__ import annotations

import base64

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from weir.registry.formats import InvalidSchema, ResolvedReference, check, parse

ORDER = """
syntax = "proto3";
package shop;

import "google/protobuf/timestamp.proto";

message Order {
  int64 id = 1;
  string customer = 2;
  google.protobuf.Timestamp placed = 3;
  map<string, Line> lines = 4;
  oneof payment {
    string card = 5;
    string voucher = 6;
  }
  optional bool gift = 7;
  reserved 10 to 12;
  message Line {
    int32 quantity = 1;
  }
}

enum Status {
  UNKNOWN = 0;
  PAID = 1;
}
"""


def proto(body: str, *, syntax: str = "proto3", package: str = "shop") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


def b64(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    return base64.standard_b64encode(fdp.SerializeToString()).decode("ascii")


def test_text_and_base64_descriptor_give_the_same_schema() -> None:
    from_text = parse("PROTOBUF", ORDER)
    from_b64 = parse("PROTOBUF", from_text.formatted("serialized"))
    assert from_b64.canonical() == from_text.canonical()
    assert from_b64.identity() == from_text.identity()


def test_canonical_text_prints_confluents_layout_and_round_trips() -> None:
    schema = parse("PROTOBUF", ORDER)
    text = schema.canonical()
    assert text.startswith('syntax = "proto3";\npackage shop;\n\nimport ')
    assert "  map<string, .shop.Order.Line> lines = 4;\n" in text
    assert "  optional bool gift = 7;\n" in text
    assert "  oneof payment {\n    string card = 5;\n" in text
    assert "LineEntry" not in text  # a map's synthetic entry is part of its field
    again = parse("PROTOBUF", text)
    assert again.canonical() == text
    assert parse("PROTOBUF", again.canonical()).canonical() == text


def test_proto2_required_default_and_extensions_round_trip() -> None:
    text = proto(
        """
message Item {
  required string sku = 1;
  optional int32 count = 2 [default = 5];
  optional string label = 3 [default = "a \\"b\\""];
  extensions 100 to max;
}
extend Item {
  optional int32 weight = 100;
}
""",
        syntax="proto2",
    )
    schema = parse("PROTOBUF", text)
    printed = schema.canonical()
    assert "required string sku = 1;" in printed
    assert "[default = 5]" in printed
    assert "extensions 100 to max;" in printed
    assert "extend .shop.Item {" in printed
    assert parse("PROTOBUF", printed).canonical() == printed


def test_imports_resolve_through_references() -> None:
    common = parse("PROTOBUF", proto("message Money { int64 cents = 1; }", package="common"))
    ref = ResolvedReference("common/money.proto", "money-value", 1, common)
    text = proto('import "common/money.proto";\nmessage Price { common.Money amount = 1; }')
    schema = parse("PROTOBUF", text, [ref])
    assert "  .common.Money amount = 1;\n" in schema.canonical()
    # The base64 form of the same file resolves through the same reference.
    assert parse("PROTOBUF", schema.formatted("serialized"), [ref]).canonical() == (
        schema.canonical()
    )


def test_import_without_reference_is_invalid() -> None:
    with pytest.raises(InvalidSchema, match=r"other\.proto"):
        parse("PROTOBUF", proto('import "other.proto";\nmessage A { int32 x = 1; }'))


def test_well_known_and_google_types_import_without_reference() -> None:
    text = proto(
        'import "google/protobuf/wrappers.proto";\nimport "google/type/money.proto";\n'
        "message A { google.protobuf.StringValue s = 1; google.type.Money m = 2; }"
    )
    schema = parse("PROTOBUF", text)
    assert ".google.type.Money m = 2;" in schema.canonical()


def test_custom_and_confluent_options_print_and_round_trip() -> None:
    text = proto(
        'import "google/protobuf/descriptor.proto";\nimport "confluent/meta.proto";\n'
        "extend google.protobuf.FieldOptions { string tag = 50001; }\n"
        'message A { int32 a = 1 [(shop.tag) = "pii", deprecated = true];\n'
        '  string b = 2 [(confluent.field_meta) = { doc: "hi" }]; }'
    )
    printed = parse("PROTOBUF", text).canonical()
    assert '  int32 a = 1 [deprecated = true, (shop.tag) = "pii"];\n' in printed
    assert '  string b = 2 [(confluent.field_meta) = { doc: "hi" }];\n' in printed
    assert parse("PROTOBUF", printed).canonical() == printed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (proto("message A { Missing m = 1; }"), r'line 3, column 13: "Missing" is not defined'),
        (proto("message A { int32 a = 1; int32 b = 1; }"), "Field number 1 has already been used"),
        (proto("message A { reserved 2; int32 a = 2; }"), "reserved"),
        (proto("message A { int32 a = 1 }"), 'line 3, column 25: Expected ";"'),
        ("  ", "empty"),
    ],
)
def test_invalid_schemas_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InvalidSchema, match=message):
        parse("PROTOBUF", text)


def test_invalid_base64_descriptor_is_rejected_by_the_pool() -> None:
    fdp = descriptor_pb2.FileDescriptorProto(name="x.proto", package="p", syntax="proto3")
    msg = fdp.message_type.add(name="A")
    msg.field.add(name="a", number=1, type=5, label=1)
    msg.field.add(name="b", number=1, type=5, label=1)
    with pytest.raises(InvalidSchema, match="duplicate field number"):
        parse("PROTOBUF", b64(fdp))


def test_normalization_ignores_declaration_order() -> None:
    a = parse(
        "PROTOBUF",
        proto(
            'import "google/protobuf/wrappers.proto";\nimport "google/protobuf/timestamp.proto";\n'
            "message A { int32 b = 2; int32 a = 1; }\nenum E { X = 0; Z = 2; Y = 1; }"
        ),
    )
    b = parse(
        "PROTOBUF",
        proto(
            'import "google/protobuf/timestamp.proto";\nimport "google/protobuf/wrappers.proto";\n'
            "message A { int32 a = 1; int32 b = 2; }\nenum E { X = 0; Y = 1; Z = 2; }"
        ),
    )
    assert a.canonical() != b.canonical()
    assert a.normalized().canonical() == b.normalized().canonical()
    normalized = a.normalized().canonical()
    assert parse("PROTOBUF", normalized).normalized().canonical() == normalized


def test_base64_form_of_a_generated_message_class_parses() -> None:
    """What confluent-kafka 2.16.1's ProtobufSerializer registers: ``_schema_to_str`` is
    base64 of the message class's ``DESCRIPTOR.file.serialized_pb``."""
    fdp = descriptor_pb2.FileDescriptorProto(name="user.proto", package="demo", syntax="proto3")
    fdp.dependency.append("google/protobuf/timestamp.proto")
    user = fdp.message_type.add(name="User")
    user.field.add(name="name", number=1, type=9, label=1, json_name="name")
    user.field.add(name="seen", number=2, type=11, label=1, type_name=".google.protobuf.Timestamp")
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import timestamp_pb2

    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("demo.User"))
    registered = base64.standard_b64encode(cls.DESCRIPTOR.file.serialized_pb).decode("ascii")
    schema = parse("PROTOBUF", registered)
    assert "message User {" in schema.canonical()
    assert "  .google.protobuf.Timestamp seen = 2;" in schema.canonical()


# -- compatibility ------------------------------------------------------------------------


def v(body: str, **kwargs: str) -> object:
    return parse("PROTOBUF", proto(body, **kwargs))


def test_adding_and_removing_optional_fields_is_full_compatible() -> None:
    old = v("message A { int32 a = 1; }")
    new = v("message A { int32 a = 1; string b = 2; }")
    assert check("FULL", new, [old]) == []


def test_changing_a_fields_kind_is_incompatible_both_ways() -> None:
    old = v("message A { int32 a = 1; }\nmessage B { int32 x = 1; }")
    new = v("message A { B a = 1; }\nmessage B { int32 x = 1; }")
    expected = "Difference{fullPath='#/A/1', type=FIELD_KIND_CHANGED}"
    assert check("BACKWARD", new, [old]) == [expected]
    assert check("FORWARD", new, [old]) == [expected]


def test_scalar_kinds_within_a_group_are_compatible_across_groups_not() -> None:
    old = v("message A { int32 a = 1; string s = 2; }")
    assert check("FULL", v("message A { int64 a = 1; bytes s = 2; }"), [old]) == []
    assert check("BACKWARD", v("message A { sint32 a = 1; string s = 2; }"), [old]) == [
        "Difference{fullPath='#/A/1', type=FIELD_SCALAR_KIND_CHANGED}"
    ]


def test_removing_a_message_is_backward_but_not_forward_incompatible() -> None:
    old = v("message A { int32 a = 1; }\nmessage B { int32 b = 1; }")
    new = v("message A { int32 a = 1; }")
    assert check("BACKWARD", new, [old]) == ["Difference{fullPath='#/B', type=MESSAGE_REMOVED}"]
    assert check("FORWARD", new, [old]) == []


def test_required_field_added_is_backward_incompatible_removed_forward() -> None:
    old = v("message A { optional int32 a = 1; }", syntax="proto2")
    new = v("message A { optional int32 a = 1; required int32 b = 2; }", syntax="proto2")
    assert check("BACKWARD", new, [old]) == [
        "Difference{fullPath='#/A/2', type=REQUIRED_FIELD_ADDED}"
    ]
    assert check("FORWARD", new, [old]) == [
        "Difference{fullPath='#/A/2', type=REQUIRED_FIELD_REMOVED}"
    ]


def test_moving_fields_into_oneofs() -> None:
    old = v("message A { int32 a = 1; int32 b = 2; oneof o { int32 c = 3; } }")
    two_moved = v("message A { oneof n { int32 a = 1; int32 b = 2; } oneof o { int32 c = 3; } }")
    assert "Difference{fullPath='#/A/n', type=MULTIPLE_FIELDS_MOVED_TO_ONEOF}" in check(
        "BACKWARD", two_moved, [old]
    )
    into_existing = v("message A { int32 b = 2; oneof o { int32 a = 1; int32 c = 3; } }")
    assert check("BACKWARD", into_existing, [old]) == [
        "Difference{fullPath='#/A/o', type=FIELD_MOVED_TO_EXISTING_ONEOF}"
    ]
    one_moved = v("message A { int32 b = 2; oneof n { int32 a = 1; } oneof o { int32 c = 3; } }")
    assert check("BACKWARD", one_moved, [old]) == []


def test_package_change_is_incompatible() -> None:
    old = v("message A { int32 a = 1; }")
    new = v("message A { int32 a = 1; }", package="other")
    assert check("BACKWARD", new, [old]) == ["Difference{fullPath='#/', type=PACKAGE_CHANGED}"]


def test_nested_message_changes_are_reported_with_their_path() -> None:
    old = v("message A { B b = 1; }\nmessage B { int32 x = 1; }")
    new = v("message A { C b = 1; }\nmessage C { int32 x = 1; }")
    assert check("BACKWARD", new, [old]) == [
        "Difference{fullPath='#/A/1', type=FIELD_NAMED_TYPE_CHANGED}",
        "Difference{fullPath='#/B', type=MESSAGE_REMOVED}",
    ]


def test_transitive_levels_check_every_earlier_version() -> None:
    v1 = v("message A { int32 a = 1; }")
    v2 = v("message A { int32 a = 1; }\nmessage B { int32 b = 1; }")
    v3 = v("message A { string a = 1; }\nmessage B { int32 b = 1; }")
    v3_ok = v("message A { }\nmessage B { int32 b = 1; }")
    # Removing A.a then re-adding 1 as another kind: fine against v2 (it lacks nothing)...
    v4 = v("message A { string a = 1; }\nmessage B { int32 b = 1; }")
    assert check("BACKWARD", v3_ok, [v1, v2]) == []
    assert check("BACKWARD", v4, [v1, v2, v3_ok]) == []
    # ...but BACKWARD_TRANSITIVE also compares with v1 and v2, where field 1 was an int32.
    transitive = check("BACKWARD_TRANSITIVE", v4, [v1, v2, v3_ok])
    assert transitive == [
        "Difference{fullPath='#/A/1', type=FIELD_SCALAR_KIND_CHANGED}",
        "Difference{fullPath='#/A/1', type=FIELD_SCALAR_KIND_CHANGED}",
    ]
    assert check("FULL", v3, [v2]) != []


# -- map entries written out, as Confluent's Java serializer registers them ---------------

JAVA_MAP_ENTRIES = """
syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  repeated LinesEntry lines = 2;
  Detail detail = 3;

  message LinesEntry {
    option map_entry = true;

    string key = 1;
    Line value = 2;
  }
  message Line {
    int32 quantity = 1;
  }
  message Detail {
    // option map_entry = true; (a comment: left alone)
    string note = 1;
    repeated TagsEntry tags = 2;

    message TagsEntry {
      option map_entry = true;
      int32 key = 1;
      string value = 2;
    }
  }
}
"""

WITH_MAP_FIELDS = """
syntax = "proto3";
package shop;

message Order {
  int64 id = 1;
  map<string, Line> lines = 2;
  Detail detail = 3;

  message Line {
    int32 quantity = 1;
  }
  message Detail {
    string note = 1;
    map<int32, string> tags = 2;
  }
}
"""


def test_explicit_map_entry_messages_are_map_fields() -> None:
    """protoc refuses ``option map_entry = true;``; Weir reads it as the map field it
    stands for, so both spellings are one schema (same canonical text, same identity)."""
    java = parse("PROTOBUF", JAVA_MAP_ENTRIES)
    maps = parse("PROTOBUF", WITH_MAP_FIELDS)
    assert "map<string, .shop.Order.Line> lines = 2;" in java.canonical()
    assert "map<int32, string> tags = 2;" in java.canonical()
    assert "map_entry" not in java.canonical()
    assert java.normalized().canonical() == maps.normalized().canonical()
    assert java.identity() == maps.identity()
    entry = java.file.message_type[0].nested_type[0]
    assert (entry.name, entry.options.map_entry) == ("LinesEntry", True)
    assert check("FULL_TRANSITIVE", java, [maps]) == []


def test_explicit_map_entry_keeps_protocs_line_numbers_in_errors() -> None:
    broken = JAVA_MAP_ENTRIES.replace("int32 quantity = 1;", "int32 quantity = ;")
    with pytest.raises(InvalidSchema, match=r"line 17, column"):
        parse("PROTOBUF", broken)


def test_explicit_map_entry_without_a_map_entrys_shape_is_invalid() -> None:
    text = proto(
        """message Order {
  repeated Item items = 1;
  message Item {
    option map_entry = true;
    string key = 1;
    string value = 2;
    string extra = 3;
  }
}"""
    )
    with pytest.raises(InvalidSchema, match=r"Order\.Item sets map_entry but its fields"):
        parse("PROTOBUF", text)

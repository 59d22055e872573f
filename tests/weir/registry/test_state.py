"""Confluent Schema Registry's rules, proven on the pure layers: the ``_schemas`` record
bytes, the state they build, and the service's operations over an in-memory backend (no
Kafka, no Redis). Schemas are real Avro schemas parsed by ``weir.registry.formats``."""

from __future__ import annotations

import json

import pytest

from weir.registry.backend import LocalBackend
from weir.registry.errors import RegistryError
from weir.registry.records import (
    ConfigRecord,
    DeleteSubjectRecord,
    ModeRecord,
    NoopRecord,
    Reference,
    SchemaRecord,
    decode,
    encode,
)
from weir.registry.service import SchemaRegistry
from weir.registry.state import RegistryState


def record(*fields: str, name: str = "R") -> str:
    """An Avro record schema with string fields ``fields`` (each later one with a default,
    so adding fields stays BACKWARD compatible)."""
    body = [{"name": fields[0], "type": "string"}] + [
        {"name": f, "type": "string", "default": ""} for f in fields[1:]
    ]
    return json.dumps({"type": "record", "name": name, "fields": body})


def fails(code: int, call, *args, **kwargs) -> RegistryError:  # type: ignore[no-untyped-def]
    with pytest.raises(RegistryError) as caught:
        call(*args, **kwargs)
    assert caught.value.error_code == code, caught.value
    return caught.value


@pytest.fixture
def registry() -> SchemaRegistry:
    return SchemaRegistry(LocalBackend())


# -- the topic's bytes ---------------------------------------------------------------------


def test_schema_record_bytes_are_confluents() -> None:
    key, value = encode(SchemaRecord("orders-value", 3, 7, '{"type":"string"}'))
    assert key == b'{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}'
    assert json.loads(value or b"") == {
        "subject": "orders-value",
        "version": 3,
        "id": 7,
        "schema": '{"type":"string"}',
        "deleted": False,
    }
    assert b" " not in (value or b"")


def test_non_avro_schema_record_names_its_type_and_references() -> None:
    ref = Reference("other.json", "other", 1)
    _, value = encode(SchemaRecord("s", 1, 2, "{}", "JSON", (ref,)))
    body = json.loads(value or b"")
    assert body["schemaType"] == "JSON"
    assert body["references"] == [{"name": "other.json", "subject": "other", "version": 1}]


def test_other_record_kinds_bytes() -> None:
    assert encode(ConfigRecord(None, "FULL")) == (
        b'{"keytype":"CONFIG","subject":null,"magic":0}',
        b'{"compatibilityLevel":"FULL"}',
    )
    assert encode(ModeRecord("s", "READONLY")) == (
        b'{"keytype":"MODE","subject":"s","magic":0}',
        b'{"mode":"READONLY"}',
    )
    assert encode(DeleteSubjectRecord("s", 4)) == (
        b'{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}',
        b'{"subject":"s","version":4}',
    )
    assert encode(NoopRecord()) == (b'{"keytype":"NOOP","magic":0}', None)
    assert encode(SchemaRecord("s", 2)) == (
        b'{"keytype":"SCHEMA","subject":"s","version":2,"magic":1}',
        None,
    )


@pytest.mark.parametrize(
    "rec",
    [
        SchemaRecord("s", 1, 5, "x", "PROTOBUF", (Reference("a.proto", "a", 2),), True),
        SchemaRecord("s", 1),
        ConfigRecord("s", "NONE"),
        ConfigRecord(None, None),
        ModeRecord(None, "IMPORT"),
        DeleteSubjectRecord("s", 9),
        NoopRecord(),
    ],
)
def test_records_decode_to_what_was_encoded(rec: object) -> None:
    assert decode(*encode(rec)) == rec  # type: ignore[arg-type]


def test_decode_reads_confluents_global_config_key_without_subject() -> None:
    assert decode(b'{"keytype":"CONFIG","magic":0}', b'{"compatibilityLevel":"NONE"}') == (
        ConfigRecord(None, "NONE")
    )


def test_decode_skips_unknown_kinds() -> None:
    assert decode(b'{"keytype":"CONTEXT","tenant":"t","magic":0}', b"{}") is None


# -- the state -----------------------------------------------------------------------------


def test_state_fences_records_of_an_older_epoch() -> None:
    state = RegistryState()
    assert state.apply(SchemaRecord("a", 1, 1, "x"), epoch=2)
    assert not state.apply(SchemaRecord("b", 1, 1, "y"), epoch=1)
    assert state.subject_names() == ["a"]
    assert state.apply(NoopRecord(), epoch=None)  # a writer that is not Weir is not fenced


def test_state_keeps_max_id_after_hard_delete_and_forgets_unused_schema() -> None:
    state = RegistryState()
    state.apply(SchemaRecord("a", 1, 9, "x"))
    state.apply(SchemaRecord("a", 1))
    assert state.schemas == {}
    assert state.max_id == 9
    assert state.next_version("a") == 1


def test_delete_subject_record_soft_deletes_up_to_its_version() -> None:
    state = RegistryState()
    for v in (1, 2, 3):
        state.apply(SchemaRecord("a", v, v, f"s{v}"))
    state.apply(DeleteSubjectRecord("a", 2))
    assert [v.version for v in state.versions("a")] == [3]
    assert [v.version for v in state.versions("a", deleted=True)] == [1, 2, 3]


def test_current_record_overwrites_a_key_with_what_the_state_holds() -> None:
    state = RegistryState()
    state.apply(SchemaRecord("a", 1, 4, "x"))
    state.apply(SchemaRecord("a", 2, 5, "y"))
    state.apply(DeleteSubjectRecord("a", 1))
    state.apply(ConfigRecord("a", "NONE"))
    assert state.current(SchemaRecord("a", 1, 9, "zombie")) == SchemaRecord(
        "a", 1, 4, "x", deleted=True
    )
    assert state.current(SchemaRecord("b", 1, 9, "zombie")) == SchemaRecord("b", 1)
    assert state.current(ConfigRecord("a", "FULL")) == ConfigRecord("a", "NONE")
    assert state.current(ModeRecord(None, "READONLY")) == ModeRecord(None, None)
    assert state.current(DeleteSubjectRecord("a", 2)) == DeleteSubjectRecord("a", 1)
    assert state.current(NoopRecord()) is None


# -- register, ids and versions ------------------------------------------------------------


def test_same_schema_under_two_subjects_has_one_id(registry: SchemaRegistry) -> None:
    first = registry.register("a-value", record("x"))
    second = registry.register("b-value", record("x"))
    assert first == second == {"id": 1}
    assert registry.schema_subjects(1) == ["a-value", "b-value"]
    assert registry.schema_versions(1) == [
        {"subject": "a-value", "version": 1},
        {"subject": "b-value", "version": 1},
    ]


def test_register_is_idempotent(registry: SchemaRegistry) -> None:
    assert registry.register("s", record("x")) == {"id": 1}
    # Same schema, different spelling: one version.
    assert registry.register("s", json.dumps(json.loads(record("x")), indent=2)) == {"id": 1}
    assert registry.versions("s") == [1]


def test_incompatible_schema_is_409_with_details(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    error = fails(409, registry.register, "s", record("y"))
    assert error.http_status == 409
    assert 'subject "s"' in error.message
    assert "details: [" in error.message


def test_invalid_schema_is_42201(registry: SchemaRegistry) -> None:
    error = fails(42201, registry.register, "s", '{"type": "recrod"}')
    assert error.http_status == 422
    fails(42201, registry.register, "s", "{}", schema_type="XML")


def test_ids_are_never_reused_even_after_hard_delete(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.delete_subject("s")
    registry.delete_subject("s", permanent=True)
    fails(40403, registry.schema_by_id, 1)
    assert registry.register("t", record("y")) == {"id": 2}


def test_versions_are_not_reused_after_soft_delete(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.register("s", record("x", "y"))
    assert registry.delete_version("s", "latest") == 2
    registry.register("s", record("x", "z"))
    assert registry.versions("s") == [1, 3]
    assert registry.versions("s", deleted=True) == [1, 2, 3]


def test_soft_deleted_schema_keeps_its_id_when_registered_again(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.delete_subject("s")
    assert registry.register("s", record("x")) == {"id": 1}
    assert registry.versions("s") == [2]


def test_compatibility_checks_only_live_versions(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.delete_version("s", 1)
    assert registry.register("s", record("y")) == {"id": 2}


def test_get_version_latest_and_errors(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.register("s", record("x", "y"))
    latest = registry.version("s", "latest")
    assert latest["version"] == 2 and latest["id"] == 2
    assert "schemaType" not in latest
    assert registry.version("s", -1) == latest
    assert registry.version("s", "1")["id"] == 1
    fails(40401, registry.version, "nope", 1)
    fails(40402, registry.version, "s", 3)
    fails(42202, registry.version, "s", "0")
    fails(42202, registry.version, "s", "one")


def test_lookup_finds_the_version_holding_a_schema(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    found = registry.lookup("s", record("x"))
    assert (found["subject"], found["version"], found["id"]) == ("s", 1, 1)
    fails(40403, registry.lookup, "s", record("q"))
    fails(40401, registry.lookup, "other", record("x"))


def test_normalize_registers_one_version_for_equivalent_texts(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"), normalize=True)
    spaced = json.dumps(json.loads(record("x")), indent=4)
    assert registry.register("s", spaced, normalize=True) == {"id": 1}


# -- deletes -------------------------------------------------------------------------------


def test_subject_delete_soft_then_hard(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.register("s", record("x", "y"))
    fails(40405, registry.delete_subject, "s", permanent=True)
    assert registry.delete_subject("s") == [1, 2]
    assert registry.subjects() == []
    assert registry.subjects(deleted=True) == ["s"]
    assert registry.subjects(deleted_only=True) == ["s"]
    fails(40401, registry.versions, "s")
    assert registry.versions("s", deleted=True) == [1, 2]
    fails(40404, registry.delete_subject, "s")
    assert registry.delete_subject("s", permanent=True) == [1, 2]
    assert registry.subjects(deleted=True) == []
    fails(40401, registry.delete_subject, "s")


def test_version_delete_soft_then_hard(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.register("s", record("x", "y"))
    fails(40407, registry.delete_version, "s", 1, permanent=True)
    assert registry.delete_version("s", 1) == 1
    fails(40406, registry.delete_version, "s", 1)
    fails(40402, registry.version, "s", 1)
    assert registry.version("s", 1, deleted=True)["id"] == 1
    assert registry.delete_version("s", 1, permanent=True) == 1
    fails(40402, registry.delete_version, "s", 1, permanent=True)
    fails(40402, registry.delete_version, "s", 7)
    fails(40401, registry.delete_version, "nope", 1)


def test_referenced_schema_cannot_be_deleted(registry: SchemaRegistry) -> None:
    inner = json.dumps(
        {"type": "record", "name": "Inner", "fields": [{"name": "a", "type": "int"}]}
    )
    registry.register("inner", inner)
    outer = json.dumps(
        {"type": "record", "name": "Outer", "fields": [{"name": "i", "type": "Inner"}]}
    )
    refs = [{"name": "Inner", "subject": "inner", "version": 1}]
    assert registry.register("outer", outer, references=refs) == {"id": 2}
    assert registry.referenced_by("inner", 1) == [2]
    assert registry.schema_by_id(2)["references"] == refs
    assert registry.version("outer", 1)["references"] == refs
    fails(42206, registry.delete_version, "inner", 1)
    fails(42206, registry.delete_subject, "inner")
    registry.delete_subject("outer")
    assert registry.referenced_by("inner", 1) == []
    assert registry.delete_subject("inner") == [1]


def test_reference_to_latest_is_stored_as_the_version_it_named(registry: SchemaRegistry) -> None:
    inner = json.dumps(
        {"type": "record", "name": "Inner", "fields": [{"name": "a", "type": "int"}]}
    )
    registry.register("inner", inner)
    outer = json.dumps({"type": "record", "name": "O", "fields": [{"name": "i", "type": "Inner"}]})
    registry.register(
        "outer", outer, references=[{"name": "Inner", "subject": "inner", "version": -1}]
    )
    assert registry.version("outer", 1)["references"] == [
        {"name": "Inner", "subject": "inner", "version": 1}
    ]
    assert registry.referenced_by("inner", 1) == [2]


def test_reference_to_missing_version_is_invalid(registry: SchemaRegistry) -> None:
    outer = json.dumps({"type": "record", "name": "O", "fields": [{"name": "i", "type": "Inner"}]})
    fails(
        42201,
        registry.register,
        "outer",
        outer,
        references=[{"name": "Inner", "subject": "inner", "version": 1}],
    )


# -- config and mode -----------------------------------------------------------------------


def test_config_global_and_per_subject(registry: SchemaRegistry) -> None:
    assert registry.get_config() == {"compatibilityLevel": "BACKWARD"}
    fails(40408, registry.get_config, "s")
    assert registry.get_config("s", default_to_global=True) == {"compatibilityLevel": "BACKWARD"}
    assert registry.set_config("s", "none") == {"compatibility": "NONE"}
    assert registry.get_config("s") == {"compatibilityLevel": "NONE"}
    registry.register("s", record("x"))
    assert registry.register("s", record("y")) == {"id": 2}  # NONE lets anything follow
    fails(42203, registry.set_config, None, "SIDEWAYS")
    assert registry.set_config(None, "FULL") == {"compatibility": "FULL"}
    assert registry.delete_config() == {"compatibilityLevel": "FULL"}
    assert registry.get_config() == {"compatibilityLevel": "BACKWARD"}
    assert registry.delete_config("s") == {"compatibilityLevel": "NONE"}
    fails(40408, registry.delete_config, "s")
    fails(40401, registry.delete_config, "never")


def test_readonly_mode_refuses_writes(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    assert registry.set_mode("s", "READONLY") == {"mode": "READONLY"}
    fails(42205, registry.register, "s", record("x", "y"))
    fails(42205, registry.delete_version, "s", 1)
    assert registry.register("t", record("x", "y"))["id"] == 2
    assert registry.get_mode("s") == {"mode": "READONLY"}
    fails(40409, registry.get_mode, "t")
    assert registry.get_mode("t", default_to_global=True) == {"mode": "READWRITE"}
    assert registry.delete_mode("s") == {"mode": "READONLY"}
    assert registry.delete_version("s", 1) == 1
    fails(42204, registry.set_mode, None, "SOMETIMES")


def test_import_mode_registers_explicit_ids_only_where_empty(registry: SchemaRegistry) -> None:
    registry.register("existing", record("x"))
    fails(42205, registry.set_mode, None, "IMPORT")
    fails(42205, registry.register, "s", record("q"), schema_id=50)
    assert registry.set_mode("s", "IMPORT") == {"mode": "IMPORT"}
    assert registry.register("s", record("q"), schema_id=50, version=4) == {"id": 50}
    assert registry.version("s", 4)["id"] == 50
    fails(42205, registry.register, "s", record("q", "r"))  # no id: not read-write
    registry.delete_mode("s")
    # Ids go on above the imported one.
    assert registry.register("t", record("t1")) == {"id": 51}
    assert registry.set_mode(None, "IMPORT", force=True) == {"mode": "IMPORT"}
    fails(42207, registry.register, "u", record("other"), schema_id=50)


def test_soft_deleting_a_subject_drops_its_settings(registry: SchemaRegistry) -> None:
    registry.register("s", record("x"))
    registry.set_config("s", "NONE")
    registry.delete_subject("s")
    fails(40408, registry.get_config, "s")


# -- compatibility test --------------------------------------------------------------------


def test_compatibility_against_one_version_or_all(registry: SchemaRegistry) -> None:
    registry.set_config("s", "NONE")
    registry.register("s", record("x"))
    registry.register("s", record("y"))
    registry.set_config("s", "BACKWARD")
    assert registry.test_compatibility("s", record("y", "z")) == {"is_compatible": True}
    verbose = registry.test_compatibility("s", record("y", "z"), version=1, verbose=True)
    assert verbose["is_compatible"] is False and verbose["messages"]
    registry.set_config("s", "BACKWARD_TRANSITIVE")
    assert not registry.test_compatibility("s", record("y", "z"), version=None)["is_compatible"]
    fails(40402, registry.test_compatibility, "s", record("x"), version=9)
    fails(40401, registry.test_compatibility, "nope", record("x"))
    fails(42201, registry.test_compatibility, "s", "not json")

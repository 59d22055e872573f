"""``/schema-registry/...`` over HTTP as Confluent's clients call it: every endpoint, its
answers and Confluent's error codes, the roles and the audit, against the registry stored in
a real in-process cluster (tests/schemaregistry/conftest.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from controlplane.models import AuditEntry
from weir.registry.formats import SCHEMA_TYPES

pytestmark = pytest.mark.django_db

BASE = "/schema-registry"
MEDIA = "application/vnd.schemaregistry.v1+json"


def record(name: str, *fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


V1 = record("Order", {"name": "id", "type": "long"})
V2 = record(
    "Order", {"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}
)
# A new required field: old data cannot be read with it (not BACKWARD compatible).
BREAKING = record("Order", {"name": "id", "type": "long"}, {"name": "qty", "type": "int"})


def call(client: APIClient, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """A request with Confluent's media type, as confluent-kafka sends it; (status, JSON)."""
    data = None if body is None else json.dumps(body)
    answer = getattr(client, method)(
        f"{BASE}{path}", data=data, content_type=MEDIA, HTTP_ACCEPT=MEDIA
    )
    try:
        return answer.status_code, answer.json()
    except ValueError:
        return answer.status_code, answer.content.decode()


def register(client: APIClient, subject: str, schema: str, **extra: Any) -> tuple[int, Any]:
    return call(client, "post", f"/subjects/{subject}/versions", {"schema": schema, **extra})


def test_register_is_idempotent_and_one_schema_has_one_id_across_subjects(
    operator: APIClient, viewer: APIClient, subject: str
) -> None:
    status, first = register(operator, subject, V1)
    assert status == 200 and isinstance(first["id"], int)
    assert register(operator, subject, V1) == (200, first)  # idempotent
    other = subject.replace("-value", "-key")
    assert register(operator, other, V1) == (200, first)  # one schema, one id
    status, second = register(operator, subject, V2)
    assert status == 200 and second["id"] > first["id"]

    assert call(viewer, "get", f"/subjects/{subject}/versions") == (200, [1, 2])
    status, latest = call(viewer, "get", f"/subjects/{subject}/versions/latest")
    assert status == 200
    assert (latest["subject"], latest["version"], latest["id"]) == (subject, 2, second["id"])
    assert "schemaType" not in latest  # AVRO, as Confluent leaves it out
    assert json.loads(latest["schema"]) == json.loads(V2)
    assert call(viewer, "get", f"/subjects/{subject}/versions/-1")[1] == latest
    status, raw = call(viewer, "get", f"/subjects/{subject}/versions/1/schema")
    assert status == 200 and raw == json.loads(V1)  # the schema itself, not a JSON string
    status, by_id = call(viewer, "get", f"/schemas/ids/{first['id']}")
    assert status == 200 and json.loads(by_id["schema"]) == json.loads(V1)
    assert call(viewer, "get", f"/schemas/ids/{first['id']}/schema")[1] == json.loads(V1)
    assert call(viewer, "get", f"/schemas/ids/{first['id']}/subjects") == (
        200,
        sorted([subject, other]),
    )
    status, versions = call(viewer, "get", f"/schemas/ids/{first['id']}/versions")
    assert status == 200
    assert sorted(map(tuple, (v.values() for v in versions))) == sorted([(subject, 1), (other, 1)])
    status, subjects = call(viewer, "get", "/subjects")
    assert status == 200 and {subject, other} <= set(subjects)
    assert call(viewer, "get", "/schemas/types") == (200, list(SCHEMA_TYPES))
    assert call(viewer, "get", "/") == (200, {})


def test_lookup_finds_the_version_of_a_schema_and_says_when_there_is_none(
    operator: APIClient, viewer: APIClient, subject: str
) -> None:
    register(operator, subject, V1)
    status, found = call(viewer, "post", f"/subjects/{subject}", {"schema": V1})
    assert status == 200 and (found["subject"], found["version"]) == (subject, 1)
    status, error = call(viewer, "post", f"/subjects/{subject}", {"schema": V2})
    assert (status, error["error_code"]) == (404, 40403)
    status, error = call(viewer, "post", "/subjects/no-such-subject", {"schema": V1})
    assert (status, error["error_code"]) == (404, 40401)


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/subjects/no-such-subject/versions", 404, 40401),
        ("/subjects/no-such-subject/versions/1", 404, 40401),
        ("/schemas/ids/999999", 404, 40403),
        ("/no/such/endpoint", 404, 404),
    ],
)
def test_unknown_things_get_confluents_codes(
    viewer: APIClient, registry_broker: object, path: str, status: int, code: int
) -> None:
    answer = call(viewer, "get", path)
    assert (answer[0], answer[1]["error_code"]) == (status, code)
    assert answer[1]["message"]


def test_versions_that_do_not_exist_or_are_not_versions_are_refused(
    operator: APIClient, viewer: APIClient, subject: str
) -> None:
    register(operator, subject, V1)
    status, error = call(viewer, "get", f"/subjects/{subject}/versions/7")
    assert (status, error["error_code"]) == (404, 40402)
    status, error = call(viewer, "get", f"/subjects/{subject}/versions/first")
    assert (status, error["error_code"]) == (422, 42202)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"schema": "{not json"}, ""),
        ({"schema": json.dumps({"type": "record", "name": "X"})}, "fields"),
        ({"schema": json.dumps({"type": "nosuchtype"})}, "nosuchtype"),
        ({"schema": ""}, "Empty schema"),
        ({}, "Empty schema"),
        ({"schema": "{}", "schemaType": "XML"}, "XML"),
        ({"schema": 'syntax = "proto3"; message M { strin a = 1; }', "schemaType": "PROTOBUF"}, ""),
        ({"schema": json.dumps({"type": "object", "properties": 3}), "schemaType": "JSON"}, ""),
    ],
)
def test_invalid_schemas_are_422_with_a_message_never_5xx(
    operator: APIClient, subject: str, body: dict[str, Any], says: str
) -> None:
    status, error = call(operator, "post", f"/subjects/{subject}/versions", body)
    assert (status, error["error_code"]) == (422, 42201), error
    assert says in error["message"]


def test_an_incompatible_schema_is_409_and_the_compatibility_endpoint_says_why(
    operator: APIClient, viewer: APIClient, subject: str
) -> None:
    register(operator, subject, V1)
    status, error = register(operator, subject, BREAKING)
    assert (status, error["error_code"]) == (409, 409)
    path = f"/compatibility/subjects/{subject}/versions/latest"
    assert call(viewer, "post", path, {"schema": V2}) == (200, {"is_compatible": True})
    status, verdict = call(viewer, "post", f"{path}?verbose=true", {"schema": BREAKING})
    assert status == 200 and verdict["is_compatible"] is False
    assert any("qty" in message for message in verdict["messages"])
    status, verdict = call(
        viewer, "post", f"/compatibility/subjects/{subject}/versions", {"schema": V2}
    )
    assert (status, verdict["is_compatible"]) == (200, True)


def test_config_global_and_per_subject_decides_what_registers(
    operator: APIClient, admin: APIClient, viewer: APIClient, subject: str
) -> None:
    assert call(viewer, "get", "/config") == (200, {"compatibilityLevel": "BACKWARD"})
    register(operator, subject, V1)
    status, error = call(viewer, "get", f"/config/{subject}")
    assert (status, error["error_code"]) == (404, 40408)
    assert call(viewer, "get", f"/config/{subject}?defaultToGlobal=true")[1] == {
        "compatibilityLevel": "BACKWARD"
    }
    assert call(admin, "put", f"/config/{subject}", {"compatibility": "NONE"}) == (
        200,
        {"compatibility": "NONE"},
    )
    assert register(operator, subject, BREAKING)[0] == 200  # NONE lets it in
    status, error = call(admin, "put", "/config", {"compatibility": "SIDEWAYS"})
    assert (status, error["error_code"]) == (422, 42203)
    assert call(admin, "delete", f"/config/{subject}") == (200, {"compatibilityLevel": "NONE"})
    assert call(viewer, "get", f"/config/{subject}")[0] == 404


def test_modes_readonly_refuses_writes_and_import_takes_explicit_ids(
    operator: APIClient, admin: APIClient, viewer: APIClient, subject: str
) -> None:
    register(operator, subject, V1)
    assert call(admin, "put", f"/mode/{subject}", {"mode": "READONLY"}) == (
        200,
        {"mode": "READONLY"},
    )
    status, error = register(operator, subject, V2)
    assert (status, error["error_code"]) == (422, 42205)
    assert call(admin, "delete", f"/mode/{subject}") == (200, {"mode": "READONLY"})
    status, error = call(admin, "put", "/mode", {"mode": "SOMETIMES"})
    assert (status, error["error_code"]) == (422, 42204)

    imported = subject.replace("-value", "-imported")
    assert call(admin, "put", f"/mode/{imported}", {"mode": "IMPORT"})[0] == 200
    explicit = 900_000 + int(subject.split("-")[1], 16) % 90_000
    status, body = register(operator, imported, V2, id=explicit, version=5)
    assert (status, body) == (200, {"id": explicit})
    assert call(viewer, "get", f"/subjects/{imported}/versions") == (200, [5])
    status, error = register(operator, subject, V2, id=explicit)  # not in IMPORT mode
    assert (status, error["error_code"]) == (422, 42205)
    assert call(viewer, "get", f"/mode/{imported}") == (200, {"mode": "IMPORT"})


def test_deletes_are_soft_then_permanent_with_confluents_rules(
    operator: APIClient, admin: APIClient, viewer: APIClient, subject: str
) -> None:
    register(operator, subject, V1)
    register(operator, subject, V2)
    status, error = call(admin, "delete", f"/subjects/{subject}/versions/1?permanent=true")
    assert (status, error["error_code"]) == (404, 40407)  # not soft-deleted first
    assert call(admin, "delete", f"/subjects/{subject}/versions/1") == (200, 1)
    assert call(viewer, "get", f"/subjects/{subject}/versions") == (200, [2])
    assert call(viewer, "get", f"/subjects/{subject}/versions?deleted=true") == (200, [1, 2])
    assert call(viewer, "get", f"/subjects/{subject}/versions/1?deleted=true")[0] == 200
    assert call(admin, "delete", f"/subjects/{subject}/versions/1?permanent=true") == (200, 1)
    assert call(viewer, "get", f"/subjects/{subject}/versions?deleted=true") == (200, [2])

    assert call(admin, "delete", f"/subjects/{subject}") == (200, [2])
    status, error = call(admin, "delete", f"/subjects/{subject}")
    assert (status, error["error_code"]) == (404, 40404)  # already soft-deleted
    assert subject not in call(viewer, "get", "/subjects")[1]
    assert subject in call(viewer, "get", "/subjects?deleted=true")[1]
    assert call(admin, "delete", f"/subjects/{subject}?permanent=true") == (200, [2])
    assert subject not in call(viewer, "get", "/subjects?deleted=true")[1]
    # Ids are never reused: a new schema after a hard delete gets a new one.
    status, _ = register(operator, subject, V1)
    assert status == 200


def test_a_referenced_schema_cannot_be_deleted_and_referencedby_names_its_users(
    operator: APIClient, admin: APIClient, viewer: APIClient, subject: str
) -> None:
    address = subject.replace("-value", "-address")
    register(operator, address, record("com.acme.Address", {"name": "city", "type": "string"}))
    order = record("Order", {"name": "ship_to", "type": "com.acme.Address"})
    refs = [{"name": "com.acme.Address", "subject": address, "version": 1}]
    status, body = register(operator, subject, order, references=refs)
    assert status == 200, body
    status, version = call(viewer, "get", f"/subjects/{subject}/versions/1")
    assert version["references"] == refs
    assert call(viewer, "get", f"/subjects/{address}/versions/1/referencedby") == (
        200,
        [body["id"]],
    )
    status, error = call(admin, "delete", f"/subjects/{address}/versions/1")
    assert (status, error["error_code"]) == (422, 42206)
    status, error = call(admin, "delete", f"/subjects/{address}")
    assert (status, error["error_code"]) == (422, 42206)
    assert call(viewer, "get", f"/subjects/{address}/versions") == (200, [1])


def test_roles_viewers_read_operators_register_admins_configure_and_delete(
    viewer: APIClient, operator: APIClient, subject: str
) -> None:
    assert register(viewer, subject, V1)[0] == 403
    assert register(operator, subject, V1)[0] == 200
    assert call(operator, "put", "/config", {"compatibility": "NONE"})[0] == 403
    assert call(operator, "put", f"/mode/{subject}", {"mode": "READONLY"})[0] == 403
    assert call(operator, "delete", f"/subjects/{subject}")[0] == 403
    assert call(APIClient(), "get", "/subjects")[0] == 401


def test_every_change_is_audited(operator: APIClient, admin: APIClient, subject: str) -> None:
    register(operator, subject, V1)
    call(admin, "put", f"/config/{subject}", {"compatibility": "FULL"})
    entries = AuditEntry.objects.filter(path__contains=subject).order_by("id")
    assert [(e.username, e.method, e.status_code) for e in entries] == [
        ("operator-user", "POST", 200),
        ("admin-user", "PUT", 200),
    ]
    assert entries[0].action == "registry-versions"


def test_plain_json_is_accepted_and_answered(operator: APIClient, subject: str) -> None:
    answer = operator.post(
        f"{BASE}/subjects/{subject}/versions",
        data=json.dumps({"schema": V1}),
        content_type="application/json",
        HTTP_ACCEPT="application/json",
    )
    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    answer = operator.get(f"{BASE}/subjects/{subject}/versions")
    assert answer["Content-Type"] == MEDIA  # the default without an Accept header

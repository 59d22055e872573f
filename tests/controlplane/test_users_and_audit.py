"""Roles, credentials and the audit log of the control plane's API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from controlplane.models import AuditEntry
from tests.controlplane.conftest import PASSWORD, basic

pytestmark = pytest.mark.django_db


def test_anonymous_request_gets_401_with_basic_challenge(anonymous: APIClient) -> None:
    response = anonymous.get("/api/me/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Basic")
    assert response.json()["error_code"] == 401
    assert "credentials" in response.json()["message"].lower()


def test_wrong_password_gets_401(make_user, anonymous: APIClient) -> None:
    make_user("mallory", "viewer")
    anonymous.credentials(HTTP_AUTHORIZATION=basic("mallory", "not-the-password"))
    response = anonymous.get("/api/me/")
    assert response.status_code == 401
    assert response.json()["message"] == "Invalid username/password."


def test_me_reports_role_for_basic_and_token(operator: APIClient, anonymous: APIClient) -> None:
    assert operator.get("/api/me/").json() == {"username": "operator-user", "role": "operator"}
    token = operator.post("/api/token/").json()["token"]
    anonymous.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert anonymous.get("/api/me/").json()["role"] == "operator"
    # Rotating the token revokes the old one.
    operator.post("/api/token/")
    assert anonymous.get("/api/me/").status_code == 401


def test_only_admins_manage_users(admin: APIClient, operator: APIClient) -> None:
    body = {"username": "carol", "password": PASSWORD, "role": "viewer"}
    denied = operator.post("/api/users/", body, format="json")
    assert denied.status_code == 403
    assert "needs the admin role" in denied.json()["message"]
    created = admin.post("/api/users/", body, format="json")
    assert created.status_code == 201
    assert created.json()["role"] == "viewer"
    assert admin.post("/api/users/", body, format="json").status_code == 409
    changed = admin.patch("/api/users/carol/", {"role": "operator"}, format="json")
    assert changed.json()["role"] == "operator"
    assert admin.delete("/api/users/carol/").status_code == 204
    assert admin.get("/api/users/carol/").status_code == 404


def test_bad_user_input_names_the_field(admin: APIClient) -> None:
    response = admin.post(
        "/api/users/", {"username": "dave", "password": "short", "role": "king"}, format="json"
    )
    assert response.status_code == 400
    message = response.json()["message"]
    assert "password" in message and "role" in message
    malformed = admin.post("/api/users/", "{not json", content_type="application/json")
    assert malformed.status_code == 400
    assert "JSON parse error" in malformed.json()["message"]


def test_every_mutation_is_audited_with_user_and_result(
    admin: APIClient, operator: APIClient
) -> None:
    admin.post(
        "/api/users/", {"username": "erin", "password": PASSWORD, "role": "viewer"}, format="json"
    )
    operator.delete("/api/users/erin/")
    entries = list(AuditEntry.objects.order_by("id"))
    assert [(e.username, e.method, e.status_code) for e in entries] == [
        ("admin-user", "POST", 201),
        ("operator-user", "DELETE", 403),
    ]
    assert entries[0].action == "users-list"
    assert '"password": "***"' in entries[0].request_body
    assert entries[1].target == "username=erin"
    assert "needs the admin role" in entries[1].result
    listed = operator.get("/api/audit/?username=operator-user").json()
    assert [e["method"] for e in listed] == ["DELETE"]
    assert listed[0]["succeeded"] is False


def test_viewer_cannot_read_the_audit_log(viewer: APIClient) -> None:
    assert viewer.get("/api/audit/").status_code == 403


def test_schema_and_docs_are_served_without_a_cdn(anonymous: APIClient) -> None:
    schema = anonymous.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    assert "/api/users/" in schema.json()["paths"]
    docs = anonymous.get("/api/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()


def test_password_change_revokes_cached_basic_credentials(
    admin: APIClient, make_user, anonymous: APIClient
) -> None:
    make_user("frank", "viewer")
    anonymous.credentials(HTTP_AUTHORIZATION=basic("frank"))
    assert anonymous.get("/api/me/").status_code == 200
    assert anonymous.get("/api/me/").status_code == 200  # served from the credential cache
    admin.patch("/api/users/frank/", {"password": "another-password-1"}, format="json")
    assert anonymous.get("/api/me/").status_code == 401
    anonymous.credentials(HTTP_AUTHORIZATION=basic("frank", "another-password-1"))
    assert anonymous.get("/api/me/").status_code == 200
    admin.patch("/api/users/frank/", {"is_active": False}, format="json")
    assert anonymous.get("/api/me/").status_code == 401

"""Across the whole API: viewers cannot mutate, anonymous callers get 401, and every
mutating call — allowed or not — lands in the audit log.

The operations come from the OpenAPI schema, so an endpoint added later is covered without
touching this test.
"""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from controlplane.models import AuditEntry

pytestmark = pytest.mark.django_db

# Mutations a viewer may make: rotating their own token, and reading records through a REST
# Proxy v2 consumer instance (creating, subscribing and positioning it is reading).
VIEWER_ALLOWED = [
    ("POST", r"^/api/token/$"),
    ("POST", r"^/kafka/consumers/[^/]+$"),
    ("DELETE", r"^/kafka/consumers/[^/]+/instances/[^/]+$"),
    ("POST", r"^/kafka/consumers/[^/]+/instances/[^/]+/(subscription|assignments|positions.*)$"),
    ("DELETE", r"^/kafka/consumers/[^/]+/instances/[^/]+/subscription$"),
]
MUTATING = ("post", "put", "patch", "delete")


def _filled(path: str) -> str:
    """A concrete URL for a templated path: every ``{param}`` becomes ``1`` (int or str)."""
    return re.sub(r"\{[^}]+\}", "1", path)


def _mutations(client: APIClient) -> list[tuple[str, str]]:
    schema = client.get("/api/schema/?format=json").json()
    found = []
    for path, item in schema["paths"].items():
        for method in MUTATING:
            if method in item:
                found.append((method.upper(), _filled(path)))
    return found


def _viewer_may(method: str, path: str) -> bool:
    return any(method == m and re.match(p, path) for m, p in VIEWER_ALLOWED)


def test_viewer_gets_403_on_every_mutation_and_each_is_audited(
    viewer: APIClient, anonymous: APIClient
) -> None:
    mutations = [(m, p) for m, p in _mutations(anonymous) if not _viewer_may(m, p)]
    assert mutations, "no mutating operations in the schema"
    wrong = []
    for method, path in mutations:
        response = getattr(viewer, method.lower())(path, {}, format="json")
        if response.status_code != 403:
            wrong.append(f"{method} {path} -> {response.status_code}")
        elif "needs the" not in response.json()["message"]:
            wrong.append(f"{method} {path}: message does not name the role")
    assert not wrong, "\n".join(wrong)
    audited = set(AuditEntry.objects.values_list("method", "path"))
    missing = [f"{m} {p}" for m, p in mutations if (m, p) not in audited]
    assert not missing, "not audited:\n" + "\n".join(missing)
    assert set(AuditEntry.objects.values_list("username", flat=True)) == {"viewer-user"}


def test_anonymous_gets_401_on_every_operation(anonymous: APIClient) -> None:
    schema = anonymous.get("/api/schema/?format=json").json()
    wrong = []
    for path, item in schema["paths"].items():
        concrete = _filled(path)
        if concrete.startswith(("/api/schema/", "/api/docs/")):
            continue
        for method in ("get", *MUTATING):
            if method not in item:
                continue
            response = getattr(anonymous, method)(concrete, {}, format="json")
            if response.status_code != 401:
                wrong.append(f"{method.upper()} {concrete} -> {response.status_code}")
    assert not wrong, "\n".join(wrong)

"""Schemas registered through the served dashboard's own ``/schema-registry`` API, so the
daphne process that renders the Schemas pages has applied them before the call returns
(read-your-writes; another process would see them only within a second)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.controlplane_fixtures import Dashboard, basic

__all__ = ["avro_order", "register"]


def avro_order(*extra: dict[str, Any]) -> str:
    """An Avro record ``Order`` with an ``id`` and the ``extra`` fields."""
    fields = [{"name": "id", "type": "string"}, *extra]
    return json.dumps({"type": "record", "name": "Order", "fields": fields})


def register(dashboard: Dashboard, subject: str, schema: str) -> int:
    """Register ``schema`` (Avro) under ``subject`` as the operator; its id."""
    request = urllib.request.Request(
        f"{dashboard.url}/schema-registry/subjects/{subject}/versions",
        data=json.dumps({"schema": schema}).encode(),
        headers={"Authorization": basic("operator"), "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return int(json.loads(answer.read())["id"])

"""The schemas pages: the registry's subjects (``/schemas/``) and one subject (``/schemas/<s>/``).

Both are thin views over the process's :class:`~weir.registry.service.SchemaRegistry`
(``schemaregistry.registry.registry()``), which answers from memory what it read from the
``_schemas`` topic: the first paint is the server's, and the browser only filters the list
(``schemas.js``) and runs the subject page's compatibility test and registration.

*List*: every live subject with its latest version, schema type, id and compatibility level
(its own, or ``global: X`` when it follows the global level), and the global level and mode.

*Subject*: its versions (number, id, type, references), the selected version's schema
pretty-printed (``?version=N``, default the latest), and a side-by-side line diff of two
versions (``?from=A&to=B``, default the two newest) computed here with :mod:`difflib` over the
pretty-printed texts — a plain GET form, so a diff is a link one can share. Operators get the
"Test compatibility" box: ``POST /schema-registry/compatibility/subjects/<s>/versions/latest
?verbose=true``, then *Register* (``POST /schema-registry/subjects/<s>/versions``), enabled only
after a test said the schema is compatible. Viewers get neither (the API refuses them the
registration anyway).

A :class:`~weir.registry.errors.RegistryError` becomes an :class:`~controlplane.errors.ApiError`
here (:func:`_registry_errors`), so :class:`~frontend.pages.base.Page` shows an error page: a
404 for an unknown subject or version, a 503 saying the registry cannot be reached when its
``_schemas`` topic cannot be read.
"""

from __future__ import annotations

import contextlib
import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import URLPattern, path

from controlplane.errors import BadRequest, NotFound, ServiceUnavailable
from frontend.pages.base import Page
from schemaregistry.registry import registry
from weir.registry.errors import RegistryError
from weir.registry.formats import SCHEMA_TYPES
from weir.registry.service import SchemaRegistry

__all__ = ["DiffRow", "pretty", "side_by_side", "subject_rows", "urlpatterns"]


@contextlib.contextmanager
def _registry_errors() -> Iterator[SchemaRegistry]:
    """The registry, with its errors turned into the dashboard's: 404s stay 404s (an unknown
    subject or version), a bad version is a 400, and anything else (the store cannot be read)
    is a 503 that says the registry is unreachable rather than a bare 500."""
    try:
        yield registry()
    except RegistryError as exc:
        if exc.http_status == 404:
            raise NotFound(exc.message) from None
        if exc.http_status < 500:
            raise BadRequest(exc.message) from None
        raise ServiceUnavailable(f"The schema registry cannot be reached: {exc.message}") from None


def _level(found: SchemaRegistry, subject: str, global_level: str) -> str:
    """The subject's own compatibility level, or ``global: X`` when it has none."""
    try:
        return found.get_config(subject)["compatibilityLevel"]
    except RegistryError as exc:
        if exc.http_status != 404:
            raise
        return f"global: {global_level}"


def subject_rows(found: SchemaRegistry) -> list[dict[str, Any]]:
    """One row per live subject, by name: latest version, its id and type, the level."""
    global_level = found.get_config()["compatibilityLevel"]
    rows = []
    for subject in found.subjects():
        try:
            latest = found.version(subject, "latest")
        except RegistryError as exc:  # deleted between the listing and this read
            if exc.http_status == 404:
                continue
            raise
        rows.append(
            {
                "subject": subject,
                "version": latest["version"],
                "id": latest["id"],
                "type": latest.get("schemaType", "AVRO"),
                "compatibility": _level(found, subject, global_level),
            }
        )
    return rows


def pretty(text: str, schema_type: str) -> str:
    """Avro and JSON Schema indented two spaces (keys in their order); Protobuf as written."""
    if schema_type == "PROTOBUF":
        return text
    try:
        return json.dumps(json.loads(text), indent=2)
    except ValueError:  # stored by a foreign writer as something else: show it as it is
        return text


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One line of a side-by-side diff: ``kind`` is ``equal``, ``delete``, ``insert`` or
    ``replace``; a side without a line (an insertion's left) has number and text None."""

    kind: str
    left_number: int | None
    left: str | None
    right_number: int | None
    right: str | None


def side_by_side(old: str, new: str) -> list[DiffRow]:
    """The lines of ``old`` and ``new`` aligned as a two-column diff (difflib's opcodes; a
    replaced block is paired line by line, the longer side's rest left unpaired)."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + k, j1 + k
            left = (i + 1, a[i]) if i < i2 else (None, None)
            right = (j + 1, b[j]) if j < j2 else (None, None)
            kind = tag
            if tag == "replace" and left[0] is None:
                kind = "insert"
            elif tag == "replace" and right[0] is None:
                kind = "delete"
            rows.append(DiffRow(kind, left[0], left[1], right[0], right[1]))
    return rows


def _version_number(request: HttpRequest, name: str, numbers: list[int], default: int) -> int:
    raw = request.GET.get(name, "")
    if not raw or raw == "latest":
        return default
    try:
        number = int(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw!r} is not a version number") from None
    if number not in numbers:
        raise NotFound(f"Version {number} not found.")
    return number


class SchemaListPage(Page):
    template_name = "frontend/schemas/list.html"
    assets = ("schemas.css", "schemas.js")
    title = "Schemas"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        with _registry_errors() as found:
            rows = subject_rows(found)
            return {
                "subjects": rows,
                "types": sorted({r["type"] for r in rows}),
                "global_level": found.get_config()["compatibilityLevel"],
                "global_mode": found.get_mode()["mode"],
            }


class SchemaSubjectPage(Page):
    template_name = "frontend/schemas/detail.html"
    assets = ("schemas.css", "schemas.js")
    title = "Schema"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        subject = kwargs["subject"]
        with _registry_errors() as found:
            versions = [self._version(found, subject, n) for n in found.versions(subject)]
            global_level = found.get_config()["compatibilityLevel"]
            level = _level(found, subject, global_level)
            mode = found.get_mode(subject, default_to_global=True)["mode"]
        numbers = [v["version"] for v in versions]
        latest = numbers[-1]
        selected = _version_number(self.request, "version", numbers, latest)
        by_number = {v["version"]: v for v in versions}
        diff_to = _version_number(self.request, "to", numbers, latest)
        default_from = numbers[numbers.index(diff_to) - 1] if numbers.index(diff_to) else diff_to
        diff_from = _version_number(self.request, "from", numbers, default_from)
        return {
            "title": subject,
            "subject": subject,
            "versions": versions,
            "selected": by_number[selected],
            "latest": by_number[latest],
            "level": level,
            "mode": mode,
            "diff_from": diff_from,
            "diff_to": diff_to,
            "diff": side_by_side(by_number[diff_from]["pretty"], by_number[diff_to]["pretty"]),
            "schema_types": list(SCHEMA_TYPES),
        }

    @staticmethod
    def _version(found: SchemaRegistry, subject: str, number: int) -> dict[str, Any]:
        body = found.version(subject, number)
        schema_type = body.get("schemaType", "AVRO")
        return {
            "version": body["version"],
            "id": body["id"],
            "type": schema_type,
            "references": body.get("references", []),
            "pretty": pretty(body["schema"], schema_type),
        }


urlpatterns: list[URLPattern] = [
    path("schemas/", SchemaListPage.as_view(), name="dashboard-schemas"),
    # path: a subject written by a foreign writer may hold a "/" (the API cannot register one).
    path("schemas/<path:subject>/", SchemaSubjectPage.as_view(), name="dashboard-schema"),
]

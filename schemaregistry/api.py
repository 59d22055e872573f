"""Confluent Schema Registry's REST API, one thin view per resource.

Each view turns the URL, the query string and the body into one call of
:class:`~weir.registry.service.SchemaRegistry` and answers what it returns; a
:class:`~weir.registry.errors.RegistryError` becomes Confluent's ``{"error_code",
"message"}`` with its HTTP status (:meth:`RegistryView.handle_exception`). Sign-in is the
control plane's (HTTP Basic, ``Authorization: Token``, the dashboard's session). Roles, as for
``/api/``: viewers read (lookups and compatibility tests included, they change nothing),
operators register, admins change configs and modes and delete. The audit middleware records
every mutating call under ``/schema-registry/``.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from rest_framework.exceptions import ParseError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from controlplane.errors import ApiError
from controlplane.roles import ADMIN, OPERATOR, VIEWER
from schemaregistry.content import PARSERS, REGISTRY_MEDIA_TYPE, RENDERERS, RegistryNegotiation
from schemaregistry.registry import registry
from weir.registry import errors
from weir.registry.errors import RegistryError

__all__ = [
    "AssociationsView",
    "CompatibilityView",
    "ConfigView",
    "ContextsView",
    "ModeView",
    "ReferencedByView",
    "RootView",
    "SchemaByIdView",
    "SchemaRawByIdView",
    "SchemaSubjectsByIdView",
    "SchemaTypesView",
    "SchemaVersionsByIdView",
    "SubjectListView",
    "SubjectVersionListView",
    "SubjectVersionSchemaView",
    "SubjectVersionView",
    "SubjectView",
]


def _flag(request: Request, name: str) -> bool:
    """A boolean query parameter as Confluent reads them (``?deleted=true``)."""
    return str(request.query_params.get(name, "false")).lower() == "true"


def _deleted_only(request: Request) -> bool:
    """``?deletedOnly=true``; confluent-kafka 2.16.1 spells it ``deleted_only``."""
    return _flag(request, "deletedOnly") or _flag(request, "deleted_only")


def _page(request: Request, items: list[Any]) -> list[Any]:
    """``?offset=&limit=`` as Confluent pages listings; a negative or absent limit is all
    (confluent-kafka sends ``offset=0&limit=-1`` by default)."""
    bounds = []
    for name, default in (("offset", 0), ("limit", -1)):
        text = request.query_params.get(name) or str(default)
        try:
            bounds.append(int(text))
        except ValueError:
            raise RegistryError(400, 400, f"{name} must be an integer, not {text!r}") from None
    offset, limit = max(bounds[0], 0), bounds[1]
    return items[offset:] if limit < 0 else items[offset : offset + limit]


def _of_subject(request: Request, items: list[Any], key: Any) -> list[Any]:
    """Only the items of ``?subject=``, when given (``/schemas/ids/{id}/subjects|versions``)."""
    subject = request.query_params.get("subject")
    return items if not subject else [item for item in items if key(item) == subject]


def _body(request: Request) -> dict[str, Any]:
    try:
        data = request.data
    except ParseError as exc:
        raise RegistryError(400, 400, f"the body is not JSON: {exc.detail}") from None
    if not isinstance(data, dict):
        raise RegistryError(400, 400, "the body must be a JSON object")
    return data


def _schema_request(request: Request) -> dict[str, Any]:
    """The fields of a register, lookup or compatibility body, checked for shape."""
    body = _body(request)
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise errors.invalid_schema("Empty schema")
    schema_type = body.get("schemaType") or "AVRO"
    references = body.get("references") or []
    if not isinstance(schema_type, str):
        raise errors.invalid_schema("schemaType must be a string")
    if not isinstance(references, list) or not all(isinstance(r, dict) for r in references):
        raise errors.invalid_schema("references must be a list of {name, subject, version}")
    return {"schema": schema, "schema_type": schema_type.upper(), "references": references}


def _raw(text: str) -> HttpResponse:
    """A schema's own text as the body (``.../schema``): not a JSON string of it."""
    return HttpResponse(text, content_type=REGISTRY_MEDIA_TYPE)


class RegistryView(APIView):
    """Confluent's media types and error bodies for every registry view."""

    parser_classes = PARSERS
    renderer_classes = RENDERERS
    content_negotiation_class = RegistryNegotiation
    # Confluent's API, documented by Confluent and docs/schema-registry.md, not in Weir's
    # OpenAPI schema (whose fuzz test would otherwise check it against guessed shapes).
    schema = None

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, RegistryError):
            return Response(exc.body(), status=exc.http_status)
        if isinstance(exc, ApiError):
            return Response(
                {"error_code": exc.error_code, "message": exc.message}, status=exc.status_code
            )
        return super().handle_exception(exc)


class RootView(RegistryView):
    """``GET /schema-registry/``: an empty object, as Confluent's root answers."""

    def get(self, request: Request) -> Response:
        return Response({})


# -- schemas ------------------------------------------------------------------------------


class SchemaTypesView(RegistryView):
    def get(self, request: Request) -> Response:
        return Response(registry().schema_types())


class SchemaByIdView(RegistryView):
    """``GET /schemas/ids/{id}[?format=serialized][&fetchMaxId=true]``. confluent-kafka also
    sends ``?subject=`` (a context hint for Confluent; ids are global in Weir) and
    ``reference_format``; both are accepted and change nothing."""

    def get(self, request: Request, schema_id: str) -> Response:
        fmt = request.query_params.get("format") or None
        return Response(
            registry().schema_by_id(
                int(schema_id), fmt=fmt, fetch_max_id=_flag(request, "fetchMaxId")
            )
        )


class SchemaRawByIdView(RegistryView):
    """``GET /schemas/ids/{id}/schema``: the schema's text alone."""

    def get(self, request: Request, schema_id: str) -> HttpResponse:
        fmt = request.query_params.get("format") or None
        return _raw(registry().schema_by_id(int(schema_id), fmt=fmt)["schema"])


class SchemaSubjectsByIdView(RegistryView):
    def get(self, request: Request, schema_id: str) -> Response:
        found = registry().schema_subjects(int(schema_id), deleted=_flag(request, "deleted"))
        return Response(_page(request, _of_subject(request, found, lambda s: s)))


class SchemaVersionsByIdView(RegistryView):
    def get(self, request: Request, schema_id: str) -> Response:
        found = registry().schema_versions(int(schema_id), deleted=_flag(request, "deleted"))
        return Response(_page(request, _of_subject(request, found, lambda v: v["subject"])))


# -- subjects and versions ----------------------------------------------------------------


class SubjectListView(RegistryView):
    """``GET /subjects[?deleted=true|deletedOnly=true|subjectPrefix=][&offset=&limit=]``."""

    def get(self, request: Request) -> Response:
        found = registry().subjects(
            deleted=_flag(request, "deleted"),
            deleted_only=_deleted_only(request),
            prefix=request.query_params.get("subjectPrefix", ""),
        )
        return Response(_page(request, found))


class SubjectView(RegistryView):
    """``POST /subjects/{s}`` looks a schema up (a read); ``DELETE`` deletes the subject."""

    roles = {"POST": VIEWER, "DELETE": ADMIN}

    def post(self, request: Request, subject: str) -> Response:
        return Response(
            registry().lookup(
                subject,
                **_schema_request(request),
                normalize=_flag(request, "normalize"),
                deleted=_flag(request, "deleted"),
            )
        )

    def delete(self, request: Request, subject: str) -> Response:
        return Response(registry().delete_subject(subject, permanent=_flag(request, "permanent")))


class SubjectVersionListView(RegistryView):
    """``GET /subjects/{s}/versions``; ``POST`` registers a schema (operators)."""

    roles = {"POST": OPERATOR}

    def get(self, request: Request, subject: str) -> Response:
        found = registry().versions(
            subject, deleted=_flag(request, "deleted"), deleted_only=_deleted_only(request)
        )
        return Response(_page(request, found))

    def post(self, request: Request, subject: str) -> Response:
        fields = _schema_request(request)
        body = _body(request)
        schema_id, version = body.get("id"), body.get("version")
        for name, value in (("id", schema_id), ("version", version)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise RegistryError(422, 42201, f"{name} must be an integer")
        return Response(
            registry().register(
                subject,
                **fields,
                normalize=_flag(request, "normalize"),
                schema_id=schema_id,
                version=version,
            )
        )


class SubjectVersionView(RegistryView):
    """``GET /subjects/{s}/versions/{v}`` (``latest`` or ``-1`` too); ``DELETE`` (admins)."""

    roles = {"DELETE": ADMIN}

    def get(self, request: Request, subject: str, version: str) -> Response:
        return Response(
            registry().version(
                subject,
                version,
                deleted=_flag(request, "deleted"),
                fmt=request.query_params.get("format") or None,
            )
        )

    def delete(self, request: Request, subject: str, version: str) -> Response:
        return Response(
            registry().delete_version(subject, version, permanent=_flag(request, "permanent"))
        )


class SubjectVersionSchemaView(RegistryView):
    """``GET /subjects/{s}/versions/{v}/schema``: the schema's text alone."""

    def get(self, request: Request, subject: str, version: str) -> HttpResponse:
        found = registry().version(
            subject,
            version,
            deleted=_flag(request, "deleted"),
            fmt=request.query_params.get("format") or None,
        )
        return _raw(found["schema"])


class ReferencedByView(RegistryView):
    def get(self, request: Request, subject: str, version: str) -> Response:
        return Response(_page(request, registry().referenced_by(subject, version)))


class ContextsView(RegistryView):
    """``GET /contexts``: Weir has Confluent's default context only, ``"."``."""

    def get(self, request: Request) -> Response:
        return Response(_page(request, ["."]))


class AssociationsView(RegistryView):
    """``GET /associations/resources/{namespace}/{name}``: the subjects associated with a
    topic. confluent-kafka 2.16.1's default subject name strategy asks this first and falls
    back to TopicNameStrategy when there are none; Weir keeps no associations, so none."""

    def get(self, request: Request, namespace: str, name: str) -> Response:
        return Response([])


# -- compatibility, config, mode ----------------------------------------------------------


class CompatibilityView(RegistryView):
    """``POST /compatibility/subjects/{s}/versions[/{v}][?verbose=true]``: a test that
    changes nothing, so viewers may run it."""

    roles = {"POST": VIEWER}

    def post(self, request: Request, subject: str, version: str | None = None) -> Response:
        return Response(
            registry().test_compatibility(
                subject,
                **_schema_request(request),
                version=version,
                normalize=_flag(request, "normalize"),
                verbose=_flag(request, "verbose"),
            )
        )


class ConfigView(RegistryView):
    """``/config`` and ``/config/{s}``: the compatibility level (admins change it)."""

    roles = {"PUT": ADMIN, "DELETE": ADMIN}

    def get(self, request: Request, subject: str | None = None) -> Response:
        return Response(
            registry().get_config(subject, default_to_global=_flag(request, "defaultToGlobal"))
        )

    def put(self, request: Request, subject: str | None = None) -> Response:
        return Response(registry().set_config(subject, _body(request).get("compatibility")))

    def delete(self, request: Request, subject: str | None = None) -> Response:
        return Response(registry().delete_config(subject))


class ModeView(RegistryView):
    """``/mode`` and ``/mode/{s}``: READWRITE, READONLY or IMPORT (admins change it)."""

    roles = {"PUT": ADMIN, "DELETE": ADMIN}

    def get(self, request: Request, subject: str | None = None) -> Response:
        return Response(
            registry().get_mode(subject, default_to_global=_flag(request, "defaultToGlobal"))
        )

    def put(self, request: Request, subject: str | None = None) -> Response:
        return Response(
            registry().set_mode(subject, _body(request).get("mode"), force=_flag(request, "force"))
        )

    def delete(self, request: Request, subject: str | None = None) -> Response:
        return Response(registry().delete_mode(subject))

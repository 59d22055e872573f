"""OpenAPI post-processing: every operation documents the error responses it can give.

Errors come from one exception handler (controlplane.errors) in one shape, for any view, so
the schema says so once here rather than on each view: 400, 401, 403, 404, 405, 406, 409,
415, 422 and 503 answer ``{"error_code", "message"}``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.authentication import BasicScheme

ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "error_code": {"type": "integer"},
        "message": {"type": "string"},
    },
    "required": ["error_code", "message"],
}

ERROR_STATUSES = {
    "400": "Malformed request (bad JSON, invalid field)",
    "401": "No or wrong credentials",
    "403": "The user's role does not allow this",
    "404": "A named resource does not exist",
    "405": "Method not allowed",
    "406": "Cannot answer in the requested content type",
    "409": "Conflicts with the resource's current state",
    "415": "Unsupported request content type",
    "422": "Well-formed but cannot be applied",
    "503": "The cluster did not answer; retry",
}

# v2 proxy views answer errors in Confluent's v2 content type, the rest in plain JSON.
ERROR_MEDIA_TYPES = (
    "application/json",
    "application/vnd.kafka.v2+json",
    "application/vnd.kafka.json.v2+json",
    "application/vnd.kafka.binary.v2+json",
)

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def add_error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: Any
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add the shared Error responses everywhere."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Error", ERROR_SCHEMA)
    ref = {"$ref": "#/components/schemas/Error"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in _METHODS:
                continue
            responses = operation.setdefault("responses", {})
            for code, description in ERROR_STATUSES.items():
                if code in responses:
                    continue
                content = {media: {"schema": ref} for media in ERROR_MEDIA_TYPES}
                responses[code] = {"description": description, "content": content}
    return result


class CachedBasicScheme(BasicScheme):
    """Document CachedBasicAuthentication as plain HTTP Basic (it is, on the wire)."""

    target_class = "controlplane.authentication.CachedBasicAuthentication"

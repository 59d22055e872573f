"""The audit log: every mutating call to ``/api/``, ``/kafka/`` or
``/schema-registry/`` is recorded after it ran.

A middleware rather than a mixin, so no view can forget it: it sees the response status, and
DRF's authentication has already put the user on the request by then (DRF sets the
authenticated user on the underlying Django request). Request bodies are kept truncated, with
password fields masked; the result is the error message for failures.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
AUDITED_PREFIXES = ("/api/", "/kafka/", "/schema-registry/")
MAX_BODY = 4000
_SECRET_FIELDS = ("password", "token", "secret")


def _masked(body: bytes) -> str:
    text = body[:MAX_BODY].decode("utf-8", "replace")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return text
    if isinstance(data, dict):
        for key in list(data):
            if any(secret in key.lower() for secret in _SECRET_FIELDS):
                data[key] = "***"
        return json.dumps(data)[:MAX_BODY]
    return text


def _result(response: HttpResponse) -> str:
    if response.status_code < 400:
        return "ok"
    try:
        data = json.loads(response.content)
    except (ValueError, AttributeError):
        return response.reason_phrase
    if isinstance(data, dict) and "message" in data:
        return str(data["message"])[:2000]
    return response.reason_phrase


class AuditMiddleware:
    """Writes an :class:`~controlplane.models.AuditEntry` per mutating API call."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        audited = request.method in MUTATING and request.path.startswith(AUDITED_PREFIXES)
        body = b""
        if audited:
            try:
                body = request.body  # read now: the view may consume the stream
            except Exception:
                body = b""
        response = self.get_response(request)
        if audited:
            try:
                self._record(request, response, body)
            except Exception:  # an audit failure must not turn a done change into an error
                logger.exception("could not write the audit entry for %s", request.path)
        return response

    def _record(self, request: HttpRequest, response: HttpResponse, body: bytes) -> None:
        from controlplane.models import AuditEntry

        user = getattr(request, "user", None)
        authenticated = user is not None and user.is_authenticated
        match = request.resolver_match
        kwargs: dict[str, Any] = dict(match.kwargs) if match else {}
        AuditEntry.objects.create(
            user=user if authenticated else None,
            username=user.get_username() if authenticated else "",
            method=request.method or "",
            path=request.path[:500],
            action=(match.view_name if match else "")[:200],
            target=" ".join(f"{k}={v}" for k, v in kwargs.items())[:500],
            request_body=_masked(body),
            status_code=response.status_code,
            result=_result(response),
            remote_addr=request.META.get("REMOTE_ADDR", "")[:100],
        )

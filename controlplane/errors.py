"""API errors and the one exception handler that shapes them.

Every error the control plane returns — REST proxy v2 and v3, and Weir's own ``/api/`` — has
Confluent REST Proxy's shape: ``{"error_code": <int>, "message": "<text>"}`` with the HTTP
status as the response code. v3 and ``/api/`` use the HTTP status as ``error_code``; v2 uses
Confluent's five-digit codes (``40401`` topic not found, ...). Views raise :class:`ApiError`
(or DRF's own exceptions); :func:`exception_handler` is the only place they become responses.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

__all__ = [
    "ApiError",
    "BadRequest",
    "Conflict",
    "KafkaUnavailable",
    "NotFound",
    "ServiceUnavailable",
    "Unprocessable",
    "exception_handler",
]


class ApiError(Exception):
    """An error with an HTTP status, an ``error_code`` (defaults to the status) and a message."""

    status_code: int = status.HTTP_500_INTERNAL_SERVER_ERROR

    def __init__(
        self, message: str, *, error_code: int | None = None, status_code: int | None = None
    ):
        super().__init__(message)
        if status_code is not None:
            self.status_code = status_code
        self.message = message
        self.error_code = error_code if error_code is not None else self.status_code


class BadRequest(ApiError):
    """The request itself is malformed."""

    status_code = status.HTTP_400_BAD_REQUEST


class NotFound(ApiError):
    """A named resource (cluster, broker, topic, partition, group, consumer...) does not exist."""

    status_code = status.HTTP_404_NOT_FOUND


class Conflict(ApiError):
    """The resource already exists or is in a state that forbids the change."""

    status_code = status.HTTP_409_CONFLICT


class Unprocessable(ApiError):
    """Well-formed, but the values cannot be applied (unknown broker, bad config...)."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY


class KafkaUnavailable(ApiError):
    """The cluster (brokers or Redis) did not answer in time; retrying may help."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE


class ServiceUnavailable(ApiError):
    """A service the control plane relies on (the job queue) is unreachable."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE


def _flatten(detail: Any) -> str:
    """DRF's nested validation details as one readable line naming each field."""
    if isinstance(detail, dict):
        parts = []
        for key, value in detail.items():
            text = _flatten(value)
            parts.append(text if key == "non_field_errors" else f"{key}: {text}")
        return "; ".join(parts)
    if isinstance(detail, list):
        return " ".join(_flatten(item) for item in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Turn any API exception into ``{"error_code", "message"}`` with the right status."""
    if isinstance(exc, ApiError):
        return Response(
            {"error_code": exc.error_code, "message": exc.message}, status=exc.status_code
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.APIException):
        message = _flatten(exc.detail)
    else:  # Django's Http404 / PermissionDenied, already translated by DRF
        message = _flatten(response.data.get("detail", response.data))
    response.data = {"error_code": response.status_code, "message": message}
    return response

"""Request input checked the same way in every API view: bodies by DRF serializers, and
ISO-8601 datetimes as epoch milliseconds.

:func:`with_body` is the usual door: a view method decorated with it is documented with the
serializer as its request schema and is called with the body that serializer validated, so
the serializer is named once and a bad body never reaches the method."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from controlplane.errors import BadRequest

__all__ = ["iso_datetime_ms", "validated", "with_body"]

BodyMethod = Callable[..., Response]


def validated(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """``data`` checked by ``serializer_class``; 400 naming the bad fields otherwise.

    An empty body counts as ``{}`` (so optional-only bodies may be left out); anything but a
    JSON object is refused.
    """
    if data is None or (hasattr(data, "keys") and not data):
        data = {}
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def with_body(
    serializer_class: type[serializers.Serializer], **schema: Any
) -> Callable[[BodyMethod], BodyMethod]:
    """Decorate a view method ``method(self, request, data, **url_kwargs)``: ``data`` is the
    request body checked by :func:`validated`; ``schema`` is the rest of its OpenAPI
    description (``operation_id``, ``responses``, ``tags``...)."""

    def decorate(method: BodyMethod) -> BodyMethod:
        @functools.wraps(method)
        def view(self: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
            return method(self, request, validated(serializer_class, request.data), *args, **kwargs)

        return extend_schema(request=serializer_class, **schema)(view)

    return decorate


def iso_datetime_ms(text: str) -> int | None:
    """Epoch milliseconds of an ISO-8601 datetime (``Z`` or an offset; UTC when naive), or
    None when ``text`` is not one (each caller says what it expected)."""
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)

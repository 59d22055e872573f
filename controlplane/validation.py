"""Request input checked the same way in every API view: bodies by DRF serializers, and
ISO-8601 datetimes as epoch milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rest_framework import serializers

from controlplane.errors import BadRequest

__all__ = ["iso_datetime_ms", "validated"]


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

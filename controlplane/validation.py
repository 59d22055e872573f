"""Request bodies checked by DRF serializers, the same way in every API view."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from controlplane.errors import BadRequest

__all__ = ["validated"]


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

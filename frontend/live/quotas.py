"""Live socket of the quotas page (``/ws/ui/quotas/``).

The message is :func:`brokers.quotas.client_quota_view` — the configured entities from the
metadata image and every broker's usage rows from the metrics hash, two Redis reads — typed
``quotas``. Brokers publish their figures about once a second, so the server reads at that
pace while the page is open and pushes only when a limit or a figure moved.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern

from brokers.quotas import client_quota_view
from frontend.live.base import page_socket

__all__ = ["quota_message", "websocket_urlpatterns"]


def quota_message() -> dict[str, Any]:
    """The socket's message (also the page's first paint)."""
    return {"type": "quotas", **client_quota_view()}


websocket_urlpatterns: list[URLPattern] = [
    page_socket("ws/ui/quotas/", quota_message, name="ws-ui-quotas"),
]

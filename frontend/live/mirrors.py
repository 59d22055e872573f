"""Live socket of the mirrors page (``/ws/ui/mirrors/``).

The message is :func:`mirrors.selectors.flow_list` — the body of ``GET /api/mirrors/`` —
typed ``mirrors``: every flow with its processes, per-partition lag, throughput and
checkpoint/heartbeat ages. Mirror processes publish every 2 s and the clusters' lag is cached
for as long, so the server reads at that pace while the page is open and pushes only when a
figure moved; the browser never polls.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern

from frontend.live.base import page_socket
from mirrors.selectors import flow_list

__all__ = ["mirror_message", "websocket_urlpatterns"]

INTERVAL_S = 2.0


def mirror_message() -> dict[str, Any]:
    """The socket's message (also the page's first paint)."""
    return {"type": "mirrors", **flow_list()}


websocket_urlpatterns: list[URLPattern] = [
    page_socket("ws/ui/mirrors/", mirror_message, name="ws-ui-mirrors", interval=INTERVAL_S),
]

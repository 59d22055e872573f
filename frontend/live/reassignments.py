"""Live socket of the reassignments page (``/ws/ui/reassignments/``).

One message carries both things the page follows: every reassignment under way (or finished
within the last hour) with per-partition copy progress
(:func:`brokers.ops.selectors.reassignment_list`) and the cluster rebalance plan's status
(:func:`brokers.ops.selectors.rebalance_status`). Brokers publish replica states every
second, so the server reads them at that pace while the page is open and pushes only when a
number moved; the browser never polls.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern

from brokers.ops.selectors import reassignment_list, rebalance_status
from frontend.live.base import page_socket

__all__ = ["progress_view", "websocket_urlpatterns"]


def progress_view() -> dict[str, Any]:
    """The socket's message (also the page's first paint)."""
    return {
        "type": "reassignments",
        "reassignments": reassignment_list(),
        "rebalance": rebalance_status(),
    }


websocket_urlpatterns: list[URLPattern] = [
    page_socket("ws/ui/reassignments/", progress_view, name="ws-ui-reassignments"),
]

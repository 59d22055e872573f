"""Dashboard websocket routes (``/ws/ui/...``): every ``frontend.live`` module's patterns."""

from __future__ import annotations

from django.urls import URLPattern

from frontend.live import (
    brokers,
    groups,
    jobs,
    messages,
    mirrors,
    quotas,
    reassignments,
    topics,
)

websocket_urlpatterns: list[URLPattern] = [
    *brokers.websocket_urlpatterns,
    *topics.websocket_urlpatterns,
    *messages.websocket_urlpatterns,
    *groups.websocket_urlpatterns,
    *mirrors.websocket_urlpatterns,
    *reassignments.websocket_urlpatterns,
    *jobs.websocket_urlpatterns,
    *quotas.websocket_urlpatterns,
]

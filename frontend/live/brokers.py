"""Live sockets: brokers (filled in by the brokers work)."""

from __future__ import annotations

from django.urls import URLPattern

__all__ = ["websocket_urlpatterns"]

websocket_urlpatterns: list[URLPattern] = []

"""Dashboard websocket routes: every ``frontend.live`` module's ``websocket_urlpatterns``."""

from __future__ import annotations

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []

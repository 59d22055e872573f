"""Websocket routes of the groups app (live lag and cluster state)."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []

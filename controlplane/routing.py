"""Websocket routes: ``/ws/cluster/`` and ``/ws/groups/<group>/`` (consumers in ``groups``)."""

from django.urls import URLPattern

from groups.routing import websocket_urlpatterns as group_routes

websocket_urlpatterns: list[URLPattern] = [*group_routes]

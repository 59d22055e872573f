"""Websocket routes: ``/ws/cluster/`` and ``/ws/groups/<group>/`` (consumers in ``groups``)."""

from django.urls import URLPattern

from frontend.routing import websocket_urlpatterns as dashboard_routes
from groups.routing import websocket_urlpatterns as group_routes

websocket_urlpatterns: list[URLPattern] = [*group_routes, *dashboard_routes]

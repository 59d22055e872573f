"""Websocket routes of the groups app (live lag and cluster state)."""

from django.urls import URLPattern, path, re_path

from groups.consumers import ClusterConsumer, GroupLagConsumer

websocket_urlpatterns: list[URLPattern] = [
    path("ws/cluster/", ClusterConsumer.as_asgi(), name="ws-cluster"),
    re_path(r"^ws/groups/(?P<group>[^/]+)/$", GroupLagConsumer.as_asgi(), name="ws-group-lag"),
]

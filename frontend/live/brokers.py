"""Live socket of the brokers page: the broker-by-partition layout (``/ws/ui/brokers/``).

The heatmap's rows are brokers and its columns a bounded slice of partitions chosen by the
page's topic filter, passed as ``?topic=`` (a topic's exact name, or text its name
contains). Changing the filter opens a new socket, so the server always knows what the page
shows. The snapshot is :func:`brokers.ops.selectors.broker_layout` — one metadata read, with
counts per broker over the whole cluster — and is sent only when leadership, replica sets
or ISRs change. Rates and disk use come from the monitor's ``/ws/cluster/``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from django.urls import URLPattern, path

from brokers.ops.selectors import broker_layout
from frontend.live.base import WatchConsumer

__all__ = ["BrokerLayoutConsumer", "websocket_urlpatterns"]

MAX_FILTER = 249  # Kafka's longest topic name


class BrokerLayoutConsumer(WatchConsumer):
    """Replica, leader and ISR placement of the filtered partitions, counts per broker."""

    interval = 1.0

    def topic_filter(self) -> str:
        query = parse_qs(self.scope.get("query_string", b"").decode("utf-8", "replace"))
        return query.get("topic", [""])[0][:MAX_FILTER]

    def snapshot(self) -> dict[str, Any]:
        return broker_layout(topic_filter=self.topic_filter())


websocket_urlpatterns: list[URLPattern] = [
    path("ws/ui/brokers/", BrokerLayoutConsumer.as_asgi(), name="ws-ui-brokers"),
]

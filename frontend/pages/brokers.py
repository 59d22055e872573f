"""The brokers page (``/brokers/``): each broker's load and a broker-by-partition heatmap.

First paint comes from the monitor's latest cluster message (address, rack, liveness,
controller, disk use and traffic rates per broker) and :func:`broker_layout` (leaders,
replicas, preferred leaders and out-of-sync replicas per broker, plus the replica sets of a
bounded slice of partitions for the heatmap) — one metadata read, whatever the topic count.
The script then follows ``/ws/cluster/`` for the cards and ``/ws/ui/brokers/`` for the
heatmap. Operators get the preferred-leader election (``POST /api/elections/preferred/``).
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from brokers.ops.selectors import broker_layout
from controlplane.cluster import gateway
from frontend.pages.base import Page
from frontend.pages.overview import cluster_now

__all__ = ["urlpatterns"]


class BrokersPage(Page):
    template_name = "frontend/brokers/index.html"
    assets = ("brokers.css", "brokers.js")
    title = "Brokers"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        image = gateway().image()
        return {
            "cluster": cluster_now(),
            "layout": broker_layout(image=image),
            # Suggestions for the heatmap's topic filter (names only: a few bytes per topic).
            "topic_names": sorted(image.topics),
        }


urlpatterns: list[URLPattern] = [path("brokers/", BrokersPage.as_view(), name="dashboard-brokers")]

"""The cluster overview (``/``): brokers, controller, partition health, traffic, groups."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from controlplane.cluster import gateway
from controlplane.traffic import traffic_history
from frontend.pages.base import Page
from groups.lag import cluster_snapshot

__all__ = ["urlpatterns"]


def cluster_now() -> dict[str, Any]:
    """The monitor's latest cluster message, or one computed now (no monitor running)."""
    found = cluster_snapshot()
    if found is not None:
        return found
    from groups.monitor import cluster_view

    return cluster_view(gateway().image(), [])


class OverviewPage(Page):
    template_name = "frontend/overview.html"
    assets = ("overview.js",)
    title = "Cluster overview"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        return {"cluster": cluster_now(), "traffic": traffic_history(gw=gateway())}


urlpatterns: list[URLPattern] = [path("", OverviewPage.as_view(), name="dashboard-overview")]

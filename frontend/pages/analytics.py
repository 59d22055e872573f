"""The analytics page (``/analytics/``): the newest result of every Spark analytics job.

One section per job of :data:`controlplane.jobs.ANALYTICS_JOBS`, drawn with Plotly from the
result the job stored (the same JSON as ``GET /api/analytics/<name>/``): traffic per topic
over time, each partition's share of the traffic with the hot ones flagged and the Kafka
documentation's advice, the record size distribution, consumer lag trends. A job that has
never produced a result shows an empty state (with "Run now" for operators).

The page follows ``/ws/ui/jobs/?kind=analytics`` (:mod:`frontend.live.jobs`): a run in
progress shows its bar in its section, and when a newer run has succeeded the page fetches
that one result from the API — a request made because the server said so, never a poll.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from controlplane.errors import NotFound
from controlplane.jobs import ANALYTICS_JOBS, analytics_result
from frontend.live.jobs import jobs_view
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


def _latest(name: str) -> dict[str, Any] | None:
    try:
        return analytics_result(name=name)
    except NotFound:  # no run has produced one yet: the section's empty state
        return None


class AnalyticsPage(Page):
    template_name = "frontend/analytics/index.html"
    assets = ("jobs.css", "analytics.css", "analytics.js")
    title = "Analytics"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        return {
            "sections": [{"name": name, "title": title} for name, title in ANALYTICS_JOBS.items()],
            "page_data": {
                "results": {name: _latest(name) for name in ANALYTICS_JOBS},
                "jobs": jobs_view(kind="analytics")["jobs"],
            },
        }


urlpatterns: list[URLPattern] = [
    path("analytics/", AnalyticsPage.as_view(), name="dashboard-analytics"),
]

"""The jobs page (``/jobs/``): every retention, compaction and analytics run, live.

A table of the newest jobs — status, who or what scheduled it, when it ran, a progress bar
with the runner's current step while it runs, bytes reclaimed, rows produced, the error —
filtered by kind and status, then kept current by ``/ws/ui/jobs/`` (:mod:`frontend.live.jobs`)
without the browser polling. Operators run any job now (``POST /api/jobs/``) and edit the
schedules beat follows (``PATCH /api/schedules/<id>/``: interval, on/off); viewers get the
same tables without a control. First paint uses the socket's own selector.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from controlplane.jobs import ANALYTICS_JOBS
from controlplane.models import Job
from frontend.live.jobs import JOBS_SHOWN, jobs_view
from frontend.pages.base import Page

__all__ = ["RUNNABLE", "urlpatterns"]

# What "Run now" offers: (job name for POST /api/jobs/, label, what it does).
RUNNABLE: tuple[tuple[str, str, str], ...] = (
    (
        "retention",
        "Retention",
        "Delete the segments past retention.ms / retention.bytes on every topic.",
    ),
    (
        "compaction",
        "Compaction",
        "Compact the dirtiest partitions of topics with cleanup.policy=compact.",
    ),
    *(
        (f"analytics:{name}", f"{name} analytics", f"{title}: drawn on the Analytics page.")
        for name, title in ANALYTICS_JOBS.items()
    ),
)


class JobsPage(Page):
    template_name = "frontend/jobs/index.html"
    assets = ("jobs.css", "jobs.js")
    title = "Jobs"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        # Unknown filter values are dropped rather than refused: the URL is the user's.
        kind = self.request.GET.get("kind", "")
        status = self.request.GET.get("status", "")
        kind = kind if kind in Job.Kind.values else ""
        status = status if status in Job.Status.values else ""
        return dict(
            live=jobs_view(kind=kind, status=status),
            jobs_shown=JOBS_SHOWN,
            kinds=Job.Kind.values,
            statuses=Job.Status.values,
            kind=kind,
            status=status,
            runnable=[{"name": n, "label": label, "help": help_} for n, label, help_ in RUNNABLE],
        )


urlpatterns: list[URLPattern] = [
    path("jobs/", JobsPage.as_view(), name="dashboard-jobs"),
]

"""Live socket of the jobs and analytics pages (``/ws/ui/jobs/?kind=&status=``).

Job records live in the database, written by Celery workers as they go (at most twice a
second per running job, :class:`controlplane.jobs.ProgressReporter`). While a jobs page is
open its socket reads the newest jobs (filtered like ``GET /api/jobs/``) and the schedules
once a second and sends them when something moved — a job queued, a bar advanced, a run
finished, beat's last run time — so the browser never polls. The analytics page listens to
the same socket (``kind=analytics``) to show runs in progress and to fetch a new result once
its job has succeeded.

The reads go through the ORM from a worker thread under channels' ``database_sync_to_async``
(``WatchConsumer`` runs every snapshot that way), which closes the thread's stale connections
before and after each read, so an open page holds no database connection between ticks.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from django.urls import URLPattern, path

from controlplane.errors import BadRequest
from controlplane.jobs import schedule_list
from controlplane.jobs_api import JobSerializer
from controlplane.models import Job
from frontend.live.base import WatchConsumer

__all__ = ["JOBS_SHOWN", "JobsConsumer", "jobs_view", "websocket_urlpatterns"]

# Newest jobs a page shows (and the socket reads each tick).
JOBS_SHOWN = 50


def jobs_view(*, kind: str = "", status: str = "", limit: int = JOBS_SHOWN) -> dict[str, Any]:
    """The socket's message (also the page's first paint): jobs, newest first, and schedules."""
    found = Job.objects.all()
    for field, value, choices in (
        ("kind", kind, Job.Kind.values),
        ("status", status, Job.Status.values),
    ):
        if value:
            if value not in choices:
                raise BadRequest(f"{field} must be one of {', '.join(choices)}, not {value!r}")
            found = found.filter(**{field: value})
    return {
        "type": "jobs",
        "filters": {"kind": kind, "status": status},
        "jobs": JobSerializer(found[:limit], many=True).data,
        "schedules": schedule_list(),
    }


class JobsConsumer(WatchConsumer):
    """The newest jobs (``kind``/``status`` from the query string) and the schedules."""

    interval = 1.0

    def snapshot(self) -> dict[str, Any]:
        query = parse_qs(self.scope.get("query_string", b"").decode())
        return jobs_view(kind=query.get("kind", [""])[0], status=query.get("status", [""])[0])


websocket_urlpatterns: list[URLPattern] = [
    path("ws/ui/jobs/", JobsConsumer.as_asgi(), name="ws-ui-jobs"),
]

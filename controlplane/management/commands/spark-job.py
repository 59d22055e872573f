"""``manage.py spark-job NAME``: run one analytics job now, in this process.

The same job Celery runs on schedule (``controlplane.jobs``): it is recorded as a job
(``scheduled_by`` = ``cli``), its result is stored for the dashboard's analytics page, and its
summary is printed as JSON. ``--list`` names the jobs. Spark runs on ``--master``, else
``WEIR_SPARK_MASTER``, else ``local[*]``.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane import jobs
from controlplane.errors import ApiError
from controlplane.models import AnalyticsResult, Job


class Command(BaseCommand):
    help = "Run an analytics job (traffic, hot-partitions, record-sizes, lag-trends) now."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", nargs="?", help="the job to run (see --list)")
        parser.add_argument("--list", action="store_true", help="name the jobs and stop")
        parser.add_argument(
            "--topic",
            action="append",
            default=[],
            help="read only this topic (repeat for several; default every topic)",
        )
        parser.add_argument(
            "--since-hours",
            type=float,
            default=None,
            help=f"how far back to read (default WEIR_ANALYTICS_WINDOW_H, "
            f"{settings.WEIR_ANALYTICS_WINDOW_H:g})",
        )
        parser.add_argument(
            "--master",
            default=None,
            help="Spark master URL (default WEIR_SPARK_MASTER or local[*])",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["list"]:
            for name, title in jobs.ANALYTICS_JOBS.items():
                self.stdout.write(f"{name:16} {title}")
            return
        name = options["name"]
        if not name:
            raise CommandError("name a job to run (spark-job --list names them)")
        if name not in jobs.ANALYTICS_JOBS:
            raise CommandError(
                f"no analytics job named {name!r}; jobs are: {', '.join(jobs.ANALYTICS_JOBS)}"
            )
        since = options["since_hours"]
        if since is not None and since <= 0:
            raise CommandError(f"--since-hours must be positive, not {since:g}")
        if options["master"]:
            settings.WEIR_SPARK_MASTER = options["master"]
        params: dict[str, Any] = {}
        if options["topic"]:
            params["topics"] = options["topic"]
        if since is not None:
            params["since_hours"] = since
        try:
            job = jobs.job_create(name=f"analytics:{name}", scheduled_by="cli", params=params)
            job = jobs.job_execute(job.pk)
        except ApiError as exc:
            raise CommandError(exc.message) from exc
        if job.status != Job.Status.SUCCEEDED:
            raise CommandError(f"job {job.pk} ({job.name}) failed: {job.error}")
        result = AnalyticsResult.objects.filter(job=job).first()
        summary = result.summary if result else {}
        self.stdout.write(
            json.dumps({"job": job.pk, "rows": job.rows_produced, **summary}, indent=2)
        )

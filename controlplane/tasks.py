"""Celery tasks: one task, ``weir.job``, runs any job through :mod:`controlplane.jobs`.

The API queues it with the id of a job record it already created; beat sends it with the
job's name (``kwargs`` of the schedule) and the task creates the record. A task is
acknowledged when a worker takes it, so a worker that dies mid-run loses the run: when that
worker starts again (same name) it marks the runs it left behind failed.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from celery.signals import worker_ready

from controlplane import jobs

__all__ = ["run_job"]

log = logging.getLogger(__name__)


@shared_task(name=jobs.JOB_TASK, ignore_result=True, bind=True)
def run_job(
    self: Task, job_id: int | None = None, name: str | None = None, scheduled_by: str = "beat"
) -> int:
    """Run job ``job_id``, or a new job ``name`` (scheduled by beat); returns the job's id."""
    if job_id is None:
        if name is None:
            raise ValueError("weir.job needs job_id or name")
        job_id = jobs.job_create(name=name, scheduled_by=scheduled_by).pk
    return jobs.job_execute(job_id, worker=self.request.hostname or "").pk


@worker_ready.connect
def _fail_orphaned_jobs(sender: Any = None, **_: Any) -> None:
    """A worker that starts again fails the runs it left behind when it stopped."""
    hostname = getattr(sender, "hostname", "")
    if hostname and (count := jobs.jobs_orphaned(worker=hostname)):
        log.warning("%d job(s) left running by %s marked failed", count, hostname)

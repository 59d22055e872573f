"""Celery tasks: one task, ``weir.job``, runs any job through :mod:`controlplane.jobs`.

The API queues it with the id of a job record it already created; beat sends it with the
job's name (``kwargs`` of the schedule) and the task creates the record.
"""

from __future__ import annotations

from celery import shared_task

from controlplane import jobs

__all__ = ["run_job"]


@shared_task(name=jobs.JOB_TASK, ignore_result=True)
def run_job(job_id: int | None = None, name: str | None = None, scheduled_by: str = "beat") -> int:
    """Run job ``job_id``, or a new job ``name`` (scheduled by beat); returns the job's id."""
    if job_id is None:
        if name is None:
            raise ValueError("weir.job needs job_id or name")
        job_id = jobs.job_create(name=name, scheduled_by=scheduled_by).pk
    return jobs.job_execute(job_id).pk

"""Jobs: retention, compaction, analytics and metadata export runs, their records and their
schedules.

Theory of operation
-------------------
Every run is a :class:`~controlplane.models.Job` row. ``job_submit`` (the API, the dashboard)
creates it ``queued`` and hands its id to the Celery task ``weir.job``; beat sends the same
task with a job name instead of an id, and the task creates the row itself. ``job_execute``
then marks it ``running``, calls the runner for its kind and records the outcome. Runners
report progress through a :class:`ProgressReporter`, which writes the row at most twice a
second, so the jobs page shows a moving bar without hammering the database.

* retention and compaction call :mod:`brokers.ops.housekeeping`, which tells the brokers that
  own the partitions what to delete or compact (through Redis) and sums what they did;
* analytics jobs run on one SparkSession per worker process (``local[*]`` unless
  ``WEIR_SPARK_MASTER`` names a cluster) and store an
  :class:`~controlplane.models.AnalyticsResult` for the dashboard;
* dlq-replay (started by ``POST /api/dlq/<topic>/replay/``, never scheduled) produces dead
  letters back to their topics (:mod:`dlq.replay`);
* metadata-export writes the cluster's whole metadata into ``WEIR_METADATA_EXPORT_DIR``
  (:mod:`weir.metadata.snapshot_file`, the file ``manage.py metadata-snapshot --import``
  restores after losing the Redis deployment) and keeps the newest
  ``WEIR_METADATA_EXPORT_KEEP`` files there.

Schedules are django-celery-beat ``PeriodicTask`` rows for ``weir.job``; the defaults are
declared in the periodic registry (:mod:`controlplane.periodic`, ``RunsIn.BEAT``), created
after ``migrate`` and never overwrite an operator's edit.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from controlplane import periodic
from controlplane.errors import BadRequest, NotFound, ServiceUnavailable
from controlplane.models import AnalyticsResult, Job

__all__ = [
    "ANALYTICS_JOBS",
    "DEFAULT_SCHEDULES",
    "JOB_TASK",
    "ProgressReporter",
    "analytics_latest",
    "analytics_result",
    "ensure_default_schedules",
    "job_create",
    "job_execute",
    "job_names",
    "job_submit",
    "jobs_orphaned",
    "schedule_list",
    "schedule_update",
]

log = logging.getLogger(__name__)

JOB_TASK = "weir.job"
# The analytics jobs of spark_jobs.jobs.JOBS, named here so the web process need not import
# PySpark to validate a request (a test checks the two lists agree).
ANALYTICS_JOBS: dict[str, str] = {
    "traffic": "Traffic per topic and partition",
    "hot-partitions": "Key skew and hot partitions",
    "record-sizes": "Record size distribution",
    "lag-trends": "Consumer lag trends",
}
# The jobs beat runs, declared in the one periodic registry with their default interval:
# retention every 5 minutes like Kafka's log.retention.check.interval.ms; compaction every
# minute; analytics hourly; the metadata export hourly (what it guards is the metadata written
# since the last export; see docs/operations.md, "When the whole Redis deployment is lost").
for _job, _seconds in (
    ("retention", 300),
    ("compaction", 60),
    ("metadata-export", 3600),
    *((f"analytics:{name}", 3600) for name in ANALYTICS_JOBS),
):
    periodic.every(_seconds, name=_job, runs_in=periodic.RunsIn.BEAT)(None)
# Job name -> default interval in seconds (what ``ensure_default_schedules`` creates).
DEFAULT_SCHEDULES: dict[str, int] = {
    t.name: int(t.interval_s) for t in periodic.tasks(periodic.RunsIn.BEAT)
}
MAX_INTERVAL_S = 30 * 24 * 3600
_PROGRESS_EVERY_S = 0.5


def job_names() -> list[str]:
    return [
        "retention",
        "compaction",
        *(f"analytics:{name}" for name in ANALYTICS_JOBS),
        "metadata-export",
    ]


def _kind_of(name: str) -> str:
    if name in ("retention", "compaction", "metadata-export"):
        return name
    if name.startswith("analytics:") and name.removeprefix("analytics:") in ANALYTICS_JOBS:
        return Job.Kind.ANALYTICS
    raise BadRequest(f"no job named {name!r}; jobs are: {', '.join(job_names())}")


# records --------------------------------------------------------------------------------------


def job_create(
    *, name: str, scheduled_by: str, params: dict[str, Any] | None = None, kind: str | None = None
) -> Job:
    """A ``queued`` job record. The name is checked against the schedulable jobs (400 naming
    them) unless ``kind`` says which runner takes it: jobs other services start with their
    own parameters (a DLQ replay) give it, and are not in :func:`job_names`."""
    return Job.objects.create(
        kind=kind or _kind_of(name), name=name, scheduled_by=scheduled_by, params=params or {}
    )


def job_submit(
    *, name: str, scheduled_by: str, params: dict[str, Any] | None = None, kind: str | None = None
) -> Job:
    """Create the job and queue it for a Celery worker (503 when Celery's broker is away)."""
    from controlplane.tasks import run_job

    job = job_create(name=name, scheduled_by=scheduled_by, params=params, kind=kind)
    try:
        result = run_job.apply_async(kwargs={"job_id": job.pk}, retry=False)
    except Exception as exc:  # kombu raises several types for "broker unreachable"
        _finish(job, status=Job.Status.FAILED, error=f"could not queue the job: {exc}")
        raise ServiceUnavailable(f"the job queue (Celery's broker) is unavailable: {exc}") from exc
    Job.objects.filter(pk=job.pk).update(task_id=result.id)
    job.task_id = result.id
    return job


class ProgressReporter:
    """``progress(fraction, message)`` for runners: stores it at most every half second."""

    def __init__(self, job: Job) -> None:
        self.job = job
        self._last = 0.0
        self._lock = threading.Lock()

    def __call__(self, fraction: float, message: str = "") -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._last < _PROGRESS_EVERY_S and fraction < 1.0:
                return
            self._last = now
        fraction = min(max(float(fraction), 0.0), 1.0)
        Job.objects.filter(pk=self.job.pk).update(progress=fraction, message=message[:500])


def _finish(job: Job, *, status: str, error: str = "", **fields: Any) -> None:
    job.status = status
    job.error = error
    job.finished_at = timezone.now()
    for name, value in fields.items():
        setattr(job, name, value)
    job.save()


def job_execute(job_id: int, *, worker: str = "") -> Job:
    """Run a queued job to its end, keeping its record current; never raises for a job's own
    failure (that is recorded on the job). ``worker`` names the Celery worker running it."""
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"no job {job_id}")
        if job.status != Job.Status.QUEUED:
            log.warning("job %s is %s, not queued: not running it again", job_id, job.status)
            return job
        job.status = Job.Status.RUNNING
        job.started_at = timezone.now()
        job.message = "starting"
        job.worker = worker
        job.save(update_fields=["status", "started_at", "message", "worker"])
    reporter = ProgressReporter(job)
    try:
        outcome = _RUNNERS[job.kind](job, reporter)
    except Exception as exc:
        log.exception("job %s (%s) failed", job.pk, job.name)
        _finish(job, status=Job.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
        return job
    _finish(
        job,
        status=Job.Status.FAILED if outcome.errors else Job.Status.SUCCEEDED,
        error="\n".join(outcome.errors),
        progress=1.0,
        message=outcome.message,
        bytes_reclaimed=outcome.bytes_reclaimed,
        rows_produced=outcome.rows_produced,
        detail=outcome.detail,
    )
    return job


def jobs_orphaned(*, worker: str) -> int:
    """Fail the jobs a (re)starting worker was running when it stopped; returns how many.

    A task is acknowledged when a worker takes it, so a worker that dies mid-run takes the
    run with it; without this its record would say ``running`` for ever."""
    return Job.objects.filter(status=Job.Status.RUNNING, worker=worker).update(
        status=Job.Status.FAILED,
        finished_at=timezone.now(),
        error=f"worker {worker} stopped before the job finished",
    )


# runners --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Outcome:
    message: str
    bytes_reclaimed: int = 0
    rows_produced: int = 0
    errors: tuple[str, ...] = ()
    detail: dict[str, Any] | None = None


def _topics(job: Job) -> list[str] | None:
    topics = job.params.get("topics")
    return list(topics) if topics else None


def _housekeeping(job: Job, progress: ProgressReporter) -> _Outcome:
    from brokers.ops import housekeeping
    from controlplane.cluster import gateway

    run: Callable[..., Any] = (
        housekeeping.run_retention
        if job.kind == Job.Kind.RETENTION
        else housekeeping.run_compaction
    )
    result = run(gw=gateway(), topics=_topics(job), progress=progress)
    verb = "deleted" if job.kind == Job.Kind.RETENTION else "compacted"
    return _Outcome(
        message=(
            f"{result.partitions_acted} of {result.partitions_examined} partitions {verb}, "
            f"{result.segments_deleted} segments, {result.bytes_reclaimed} bytes reclaimed"
        ),
        bytes_reclaimed=result.bytes_reclaimed,
        rows_produced=result.records_removed,
        errors=tuple(result.errors),
        detail={
            "partitions_examined": result.partitions_examined,
            "partitions_acted": result.partitions_acted,
            "segments_deleted": result.segments_deleted,
            "records_removed": result.records_removed,
            "partitions": list(result.detail)[:500],
        },
    )


_spark_lock = threading.Lock()
_spark_session: Any = None


def spark() -> Any:
    """This process's SparkSession, started on first use and shared by every analytics run."""
    global _spark_session
    with _spark_lock:
        if _spark_session is None:
            from spark_jobs.session import spark_session

            _spark_session = spark_session("weir-analytics", settings.WEIR_SPARK_MASTER or None)
        return _spark_session


def lag_samples(*, since_ms: int, limit: int = 500_000) -> list[dict[str, Any]]:
    """The lag history since ``since_ms`` as plain rows for the lag-trends job."""
    from datetime import UTC, datetime

    from groups.models import LagSample

    since = datetime.fromtimestamp(since_ms / 1000, tz=UTC)
    rows = (
        LagSample.objects.filter(at__gte=since)
        .order_by("at")
        .values_list("group", "topic", "partition", "at", "lag", "lag_seconds")[:limit]
    )
    return [
        {
            "group": group,
            "topic": topic,
            "partition": partition,
            "at_ms": int(at.timestamp() * 1000),
            "lag": lag,
            "lag_seconds": lag_seconds,
        }
        for group, topic, partition, at, lag, lag_seconds in rows
    ]


def _analytics(job: Job, progress: ProgressReporter) -> _Outcome:
    from controlplane.cluster import gateway
    from spark_jobs.jobs import run_job

    name = job.name.removeprefix("analytics:")
    hours = float(job.params.get("since_hours") or settings.WEIR_ANALYTICS_WINDOW_H)
    since_ms = int(time.time() * 1000 - hours * 3600 * 1000)
    progress(0.0, "starting Spark")
    session = spark()
    samples = lag_samples(since_ms=since_ms) if name == "lag-trends" else None
    output = run_job(
        name,
        session,
        bootstrap_servers=gateway().bootstrap_servers(),
        # The control plane's credentials reach the executors' consumers as kafka.* options.
        kafka_options=gateway().security.spark_options(),
        topics=_topics(job),
        since_ms=since_ms,
        lag_samples=samples,
        progress=progress,
    )
    AnalyticsResult.objects.create(job=job, name=name, summary=output.summary, data=output.data)
    return _Outcome(
        message=f"{output.rows} rows",
        rows_produced=output.rows,
        detail={"summary": output.summary},
    )


def _metadata_export(job: Job, progress: ProgressReporter) -> _Outcome:
    from weir.metadata.snapshot_file import export_rotating

    progress(0.0, "exporting the cluster metadata")
    result = export_rotating(
        settings.WEIR_REDIS_URL,
        cluster_id=settings.WEIR_CLUSTER_ID,
        directory=settings.WEIR_METADATA_EXPORT_DIR,
        keep=settings.WEIR_METADATA_EXPORT_KEEP,
    )
    return _Outcome(
        message=(
            f"{result.topics} topics, {result.keys} keys written to {result.path}; "
            f"{len(result.pruned)} older export(s) removed"
        ),
        rows_produced=result.keys,
        detail={
            "path": str(result.path),
            "topics": result.topics,
            "keys": result.keys,
            "metadata_log_position": result.metadata_log_position,
            "pruned": [str(p) for p in result.pruned],
        },
    )


def _dlq_replay(job: Job, progress: ProgressReporter) -> _Outcome:
    from dlq.replay import ReplayRequest, replay

    result = replay(ReplayRequest.from_params(job.params), progress)
    purged = (
        "; purged "
        + ", ".join(
            f"partition {p['partition']} before {p['low_watermark']}" for p in result.purged
        )
        if result.purged
        else ""
    )
    return _Outcome(
        message=(
            f"{result.replayed} records replayed from {job.params['topic']}, "
            f"{result.plan.skipped} skipped{purged}"
        ),
        rows_produced=result.replayed,
        errors=tuple(result.errors),
        detail=result.as_dict(),
    )


_RUNNERS: dict[str, Callable[[Job, ProgressReporter], _Outcome]] = {
    Job.Kind.RETENTION: _housekeeping,
    Job.Kind.COMPACTION: _housekeeping,
    Job.Kind.ANALYTICS: _analytics,
    Job.Kind.METADATA_EXPORT: _metadata_export,
    Job.Kind.DLQ_REPLAY: _dlq_replay,
}


# analytics results ----------------------------------------------------------------------------


def analytics_latest() -> list[dict[str, Any]]:
    """The newest result of every analytics job that has one (no chart data)."""
    found = []
    for name, title in ANALYTICS_JOBS.items():
        result = AnalyticsResult.objects.filter(name=name).first()
        if result is not None:
            found.append(_result_data(result, title, with_data=False))
    return found


def analytics_result(*, name: str) -> dict[str, Any]:
    if name not in ANALYTICS_JOBS:
        raise NotFound(f"no analytics job named {name!r}; jobs are: {', '.join(ANALYTICS_JOBS)}")
    result = AnalyticsResult.objects.filter(name=name).first()
    if result is None:
        raise NotFound(f"analytics job {name!r} has not produced a result yet")
    return _result_data(result, ANALYTICS_JOBS[name], with_data=True)


def _result_data(result: AnalyticsResult, title: str, *, with_data: bool) -> dict[str, Any]:
    data = {
        "name": result.name,
        "title": title,
        "job_id": result.job_id,
        "created_at": result.created_at,
        "summary": result.summary,
    }
    if with_data:
        data["data"] = result.data
    return data


# schedules ------------------------------------------------------------------------------------


def _schedule_name(job_name: str) -> str:
    return f"weir {job_name}"


def ensure_default_schedules(**_: Any) -> None:
    """Create the default schedule of every job that has none (``post_migrate``)."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    for job_name, seconds in DEFAULT_SCHEDULES.items():
        name = _schedule_name(job_name)
        if PeriodicTask.objects.filter(name=name).exists():
            continue
        interval, _ = IntervalSchedule.objects.get_or_create(
            every=seconds, period=IntervalSchedule.SECONDS
        )
        PeriodicTask.objects.create(
            name=name,
            task=JOB_TASK,
            interval=interval,
            kwargs=json.dumps({"name": job_name, "scheduled_by": f"beat:{name}"}),
            description=f"Weir's {job_name} job (default every {seconds} s)",
        )


def _schedule_data(task: Any) -> dict[str, Any]:
    interval = task.interval
    seconds = (
        int(timedelta(**{interval.period: interval.every}).total_seconds()) if interval else None
    )
    try:
        job_name = json.loads(task.kwargs or "{}").get("name", "")
    except ValueError:
        job_name = ""
    return {
        "id": task.pk,
        "name": task.name,
        "job": job_name,
        "task": task.task,
        "interval_s": seconds,
        "enabled": task.enabled,
        "last_run_at": task.last_run_at,
        "total_run_count": task.total_run_count,
    }


def schedule_list() -> list[dict[str, Any]]:
    from django_celery_beat.models import PeriodicTask

    tasks = PeriodicTask.objects.filter(task=JOB_TASK).select_related("interval").order_by("name")
    return [_schedule_data(t) for t in tasks]


def schedule_update(
    *, schedule_id: int, interval_s: int | None = None, enabled: bool | None = None
) -> dict[str, Any]:
    """Change a job schedule's interval and/or switch it on or off; beat notices at once."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask

    task = PeriodicTask.objects.filter(pk=schedule_id, task=JOB_TASK).first()
    if task is None:
        raise NotFound(f"no job schedule {schedule_id}")
    if interval_s is not None:
        if not 1 <= interval_s <= MAX_INTERVAL_S:
            raise BadRequest(f"interval_s must be between 1 and {MAX_INTERVAL_S}, not {interval_s}")
        task.interval, _ = IntervalSchedule.objects.get_or_create(
            every=interval_s, period=IntervalSchedule.SECONDS
        )
    if enabled is not None:
        task.enabled = enabled
    task.save()  # also bumps PeriodicTasks.last_update, which makes beat reload
    return _schedule_data(task)

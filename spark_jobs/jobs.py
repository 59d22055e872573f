"""The analytics jobs Celery schedules: ``JOBS`` by name and ``run_job`` to run one.

Each job reads the cluster's topics through the ``weir`` data source (or, for ``lag-trends``,
the lag samples the control plane passes in), aggregates with Spark, and returns an
``AnalyticsOutput``: ``rows`` for the job record, a small JSON ``summary`` (headline figures,
flags, advice) and JSON ``data`` with chart series and ready-made Plotly figures in
``data["charts"]``. Nothing here imports Django; the control plane stores the output.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from spark_jobs.analytics import hot_partitions, lag_trends, record_sizes, traffic
from spark_jobs.analytics.common import AnalyticsJob, AnalyticsOutput, JobContext, Progress

__all__ = ["JOBS", "AnalyticsJob", "AnalyticsOutput", "JobContext", "UnknownJobError", "run_job"]

JOBS: dict[str, AnalyticsJob] = {
    job.name: job
    for job in (
        AnalyticsJob(
            name="traffic",
            title="Traffic",
            description="Records and bytes per minute per topic and per partition, from "
            "record timestamps.",
            run=traffic.run,
        ),
        AnalyticsJob(
            name="hot-partitions",
            title="Hot partitions and keys",
            description="Each partition's and key's share of a topic's records and bytes; "
            "flags partitions well above fair share and keys that alone overload a partition, "
            "with advice.",
            run=hot_partitions.run,
        ),
        AnalyticsJob(
            name="record-sizes",
            title="Record sizes",
            description="Distribution of key + value sizes per topic: histogram and "
            "p50/p90/p99/max.",
            run=record_sizes.run,
        ),
        AnalyticsJob(
            name="lag-trends",
            title="Lag trends",
            description="Consumer lag per group and topic over time, its slope per hour, and "
            "groups whose lag keeps growing.",
            run=lag_trends.run,
        ),
    )
}


class UnknownJobError(KeyError):
    """No analytics job has that name."""


def run_job(
    name: str,
    spark: SparkSession,
    *,
    bootstrap_servers: str,
    topics: list[str] | None = None,
    since_ms: int | None = None,
    lag_samples: list[dict] | None = None,
    progress: Progress | None = None,
    kafka_options: Mapping[str, str] | None = None,
) -> AnalyticsOutput:
    """Run job ``name``; ``progress(fraction, message)`` is called as it goes.

    ``kafka_options`` (``kafka.security.protocol``, ``kafka.sasl.*``, ...) reach the source's
    consumers and the planner, for a cluster that needs authentication.
    """
    job = JOBS.get(name)
    if job is None:
        raise UnknownJobError(f"unknown analytics job {name!r}; known: {', '.join(sorted(JOBS))}")
    context = JobContext(
        spark=spark,
        bootstrap_servers=bootstrap_servers,
        topics=list(topics) if topics is not None else None,
        since_ms=since_ms,
        lag_samples=lag_samples,
        progress=progress,
        kafka_options=dict(kafka_options or {}),
    )
    return job.run(context)

"""Weir's Spark side: the ``weir`` data source and the analytics jobs Celery schedules.

``register(spark)`` makes ``spark.read.format("weir")`` (and ``readStream``) available in a
session; ``spark_jobs.session.spark_session()`` builds a session with it registered;
``spark_jobs.jobs`` holds the analytics jobs (``JOBS``, ``run_job``). Executors import this
package, so nothing here imports Django — the control plane hands jobs plain data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register"]


def register(spark: SparkSession) -> None:
    """Register the ``weir`` data source (Spark's Kafka source options and schema)."""
    from spark_jobs.source import WeirDataSource

    spark.dataSource.register(WeirDataSource)

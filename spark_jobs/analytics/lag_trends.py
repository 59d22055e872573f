"""Lag trends: each group's lag on each topic over time, its slope, and groups falling behind.

Input is the control plane's lag history as plain rows
``{"group", "topic", "partition", "at_ms", "lag", "lag_seconds"}`` (Django reads its tables and
passes them in; this package never imports Django). Spark sums lag over a topic's partitions per
sample time — a point is ``(group, topic, at_ms)`` with total lag and the worst partition's lag in
seconds — and fits a least-squares line through each group/topic's points (``regr_slope``),
reported as records per hour.

Rule (documented in docs/analytics.md): a group/topic is **growing** when it has at least
``MIN_SAMPLES`` points, its slope is positive, and the fitted rise over the observed window
(slope * window) is at least ``MIN_RISE_FRACTION`` of its mean lag and at least one record.
A steady lag with noise has a near-zero fitted rise; a consumer that cannot keep up has a rise
comparable to the lag itself.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from spark_jobs.analytics.common import (
    AnalyticsOutput,
    JobContext,
    iso_ms,
    line_chart,
    number,
)

HOUR_MS = 3_600_000
MIN_SAMPLES = 3
MIN_RISE_FRACTION = 0.1

SAMPLE_SCHEMA = StructType(
    [
        StructField("group", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("at_ms", LongType()),
        StructField("lag", LongType()),
        StructField("lag_seconds", DoubleType()),
    ]
)

RULE = (
    f"growing: at least {MIN_SAMPLES} samples, positive least-squares slope, and a fitted rise "
    f"over the window of at least {MIN_RISE_FRACTION:.0%} of the mean lag (and >= 1 record)"
)


def run(ctx: JobContext) -> AnalyticsOutput:
    samples = [s for s in (ctx.lag_samples or []) if _keep(s, ctx)]
    if not samples:
        return AnalyticsOutput(
            0, {"rule": RULE, "groups": [], "growing": [], "samples": 0}, {"charts": []}
        )
    ctx.report(0.1, f"fitting {len(samples)} lag samples")
    rows = [
        (
            str(s["group"]),
            str(s["topic"]),
            int(s.get("partition", 0)),
            int(s["at_ms"]),
            int(s.get("lag") or 0),
            float(s["lag_seconds"]) if s.get("lag_seconds") is not None else None,
        )
        for s in samples
    ]
    frame = ctx.spark.createDataFrame(rows, SAMPLE_SCHEMA)
    points = frame.groupBy("group", "topic", "at_ms").agg(
        F.sum("lag").alias("lag"),
        F.max("lag_seconds").alias("lag_seconds"),
        F.countDistinct("partition").alias("partitions"),
    )
    points = points.cache()
    try:
        fits = (
            points.groupBy("group", "topic")
            .agg(
                F.count(F.lit(1)).alias("samples"),
                F.regr_slope(F.col("lag").cast("double"), F.col("at_ms").cast("double")).alias(
                    "slope"
                ),
                F.min("at_ms").alias("first_ms"),
                F.max("at_ms").alias("last_ms"),
                F.avg("lag").alias("mean_lag"),
                F.max("lag").alias("max_lag"),
                F.max("partitions").alias("partitions"),
                F.min_by("lag", "at_ms").alias("first_lag"),
                F.max_by("lag", "at_ms").alias("last_lag"),
                F.max_by("lag_seconds", "at_ms").alias("last_lag_seconds"),
            )
            .collect()
        )
        series_rows = points.orderBy("group", "topic", "at_ms").collect()
    finally:
        points.unpersist()
    ctx.report(0.8, "shaping results")

    groups, growing = [], []
    for row in sorted(fits, key=lambda r: (r["group"], r["topic"])):
        slope_ms = number(row["slope"]) or 0.0  # records per millisecond; None for one sample
        window_ms = int(row["last_ms"]) - int(row["first_ms"])
        mean_lag = float(row["mean_lag"] or 0.0)
        rise = slope_ms * window_ms
        is_growing = (
            int(row["samples"]) >= MIN_SAMPLES
            and slope_ms > 0
            and rise >= max(1.0, MIN_RISE_FRACTION * mean_lag)
        )
        entry = {
            "group": str(row["group"]),
            "topic": str(row["topic"]),
            "partitions": int(row["partitions"]),
            "samples": int(row["samples"]),
            "from": iso_ms(int(row["first_ms"])),
            "to": iso_ms(int(row["last_ms"])),
            "first_lag": int(row["first_lag"]),
            "last_lag": int(row["last_lag"]),
            "max_lag": int(row["max_lag"]),
            "mean_lag": round(mean_lag, 3),
            "last_lag_seconds": number(row["last_lag_seconds"]),
            "slope_per_hour": round(slope_ms * HOUR_MS, 3),
            "fitted_rise": round(rise, 3),
            "growing": is_growing,
        }
        groups.append(entry)
        if is_growing:
            growing.append({k: entry[k] for k in ("group", "topic", "slope_per_hour", "last_lag")})

    series: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in series_rows:
        cell = series[str(row["group"])].setdefault(
            str(row["topic"]), {"at": [], "lag": [], "lag_seconds": []}
        )
        cell["at"].append(iso_ms(int(row["at_ms"])))
        cell["lag"].append(int(row["lag"]))
        cell["lag_seconds"].append(number(row["lag_seconds"]))
    chart = line_chart(
        "Consumer lag by group and topic",
        {
            f"{g} / {t}": (cell["at"], cell["lag"])
            for g, per in sorted(series.items())
            for t, cell in sorted(per.items())
        },
        y_title="lag (records)",
    )
    summary = {"rule": RULE, "samples": len(samples), "groups": groups, "growing": growing}
    ctx.report(1.0, "done")
    return AnalyticsOutput(
        rows=len(series_rows), summary=summary, data={"series": dict(series), "charts": [chart]}
    )


def _keep(sample: dict, ctx: JobContext) -> bool:
    if ctx.since_ms is not None and int(sample["at_ms"]) < ctx.since_ms:
        return False
    return ctx.topics is None or sample["topic"] in ctx.topics

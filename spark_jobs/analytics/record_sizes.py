"""Record sizes: distribution of key + value bytes per topic (histogram and percentiles).

A record's size is its key length plus its value length (headers and batch overhead are not
counted: they are not what producers choose). Per topic Spark computes count, total, min, mean,
max and the 50th/90th/99th percentiles with ``percentile_approx`` (nearest rank: the smallest
size with at least p of the records at or below it; exact for up to ``ACCURACY`` records per
topic, within 1/``ACCURACY`` of the rank beyond). The histogram uses power-of-two buckets from
64 B to 1 MiB: bucket ``i`` holds sizes in ``[BOUNDS[i], BOUNDS[i+1])`` and the last one is open.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import functions as F

from spark_jobs.analytics.common import (
    AnalyticsOutput,
    JobContext,
    bar_chart,
    load_records,
    number,
    record_bytes,
    topic_partitions,
)

BOUNDS = [0] + [2**e for e in range(6, 21)]  # 0, 64, 128, ..., 1 MiB
PERCENTILES = (0.5, 0.9, 0.99)
ACCURACY = 100_000
LARGE = 1_000_000  # Kafka's default message.max.bytes is about 1 MB


def bucket_label(index: int) -> str:
    lo = BOUNDS[index]
    if index + 1 < len(BOUNDS):
        return f"{_size(lo)} to {_size(BOUNDS[index + 1])}"
    return f"{_size(lo)} and up"


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n // (1024 * 1024)} MiB"
    if n >= 1024:
        return f"{n // 1024} KiB"
    return f"{n} B"


def run(ctx: JobContext) -> AnalyticsOutput:
    ctx.report(0.05, "listing topics")
    partitions = topic_partitions(ctx.bootstrap_servers, ctx.topics, ctx.kafka_options)
    if not partitions:
        return AnalyticsOutput(0, {"topics": [], "advice": []}, {"charts": []})
    ctx.report(0.15, f"reading {len(partitions)} topics")
    sizes = load_records(ctx, sorted(partitions)).select("topic", record_bytes().alias("size"))
    # Bucket index = how many lower bounds the size reaches, minus one.
    bucket = sum((F.when(F.col("size") >= b, 1).otherwise(0) for b in BOUNDS[1:]), F.lit(0))
    sizes = sizes.withColumn("bucket", bucket).cache()
    try:
        stats = (
            sizes.groupBy("topic")
            .agg(
                F.count(F.lit(1)).alias("records"),
                F.sum("size").alias("bytes"),
                F.min("size").alias("min"),
                F.avg("size").alias("mean"),
                F.max("size").alias("max"),
                F.percentile_approx("size", list(PERCENTILES), ACCURACY).alias("pct"),
            )
            .collect()
        )
        ctx.report(0.6, "building histograms")
        histogram = sizes.groupBy("topic", "bucket").agg(F.count(F.lit(1)).alias("n")).collect()
    finally:
        sizes.unpersist()

    buckets: dict[str, dict[int, int]] = defaultdict(dict)
    for row in histogram:
        buckets[str(row["topic"])][int(row["bucket"])] = int(row["n"])
    topics, charts, data_topics, advice = [], [], {}, []
    for row in sorted(stats, key=lambda r: r["topic"]):
        topic = str(row["topic"])
        p50, p90, p99 = (int(v) for v in row["pct"])
        entry = {
            "topic": topic,
            "records": int(row["records"]),
            "bytes": int(row["bytes"] or 0),
            "min": int(row["min"]),
            "mean": round(float(number(row["mean"]) or 0.0), 3),
            "p50": p50,
            "p90": p90,
            "p99": p99,
            "max": int(row["max"]),
        }
        topics.append(entry)
        used = buckets[topic]
        last = max(used) if used else 0
        labels = [bucket_label(i) for i in range(last + 1)]
        counts = [used.get(i, 0) for i in range(last + 1)]
        data_topics[topic] = {
            "bucket": labels,
            "lower_bytes": BOUNDS[: last + 1],
            "records": counts,
        }
        chart = bar_chart(
            f"{topic}: record sizes (key + value)",
            labels,
            counts,
            name="records",
            y_title="records",
        )
        chart["layout"]["xaxis"] = {"title": {"text": "size"}, "type": "category"}
        charts.append(chart)
        if entry["max"] >= LARGE:
            advice.append(
                f"Topic {topic!r} has records of {entry['max']:,} B, at Kafka's default "
                "message.max.bytes (1 MB): compress them, split them, or keep large payloads "
                "elsewhere and send a reference."
            )
        elif entry["p50"] < 100 and entry["records"] >= 1000:
            advice.append(
                f"Topic {topic!r}: half its records are under {entry['p50']} B; producers gain "
                "most from batching (linger.ms, batch.size) and compression."
            )
    summary = {"topics": topics, "advice": advice}
    ctx.report(1.0, "done")
    return AnalyticsOutput(
        rows=len(stats) + len(histogram),
        summary=summary,
        data={"histograms": data_topics, "charts": charts},
    )

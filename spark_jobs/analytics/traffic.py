"""Traffic: records and bytes per minute, per topic and per partition, from record timestamps.

One Spark aggregation groups records by ``(topic, partition, minute)`` where minute is the
record timestamp floored to a whole minute (UTC) and bytes are key + value lengths. That table
is small (partitions times minutes) and is collected; per-topic series, zero-filled between a
topic's first and last minute so averages and charts show quiet minutes, are summed in Python.
Rates use record timestamps (CreateTime unless a topic says LogAppendTime), so a backfill shows
when records were made, not when they arrived.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import functions as F

from spark_jobs.analytics.common import (
    AnalyticsOutput,
    JobContext,
    iso_ms,
    line_chart,
    load_records,
    record_bytes,
    timestamp_ms,
    topic_partitions,
)

MINUTE_MS = 60_000
MAX_FILLED_MINUTES = 20_000  # beyond this span, series keep only minutes that had records


def run(ctx: JobContext) -> AnalyticsOutput:
    ctx.report(0.05, "listing topics")
    partitions = topic_partitions(ctx.bootstrap_servers, ctx.topics, ctx.kafka_options)
    if not partitions:
        return AnalyticsOutput(0, {"topics": 0, "records": 0, "bytes": 0, "per_topic": []}, {})
    ctx.report(0.15, f"reading {len(partitions)} topics")
    records = load_records(ctx, sorted(partitions))
    minute = (F.floor(timestamp_ms() / MINUTE_MS) * MINUTE_MS).cast("long")
    rows = (
        records.select("topic", "partition", minute.alias("minute"), record_bytes().alias("b"))
        .groupBy("topic", "partition", "minute")
        .agg(F.count(F.lit(1)).alias("records"), F.sum("b").alias("bytes"))
        .collect()
    )
    ctx.report(0.85, "shaping results")
    per_partition: dict[str, dict[int, dict[int, list[int]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    per_topic: dict[str, dict[int, list[int]]] = defaultdict(dict)
    for row in rows:
        topic, partition, at = str(row["topic"]), int(row["partition"]), int(row["minute"])
        count, size = int(row["records"]), int(row["bytes"] or 0)
        per_partition[topic][partition][at] = [count, size]
        cell = per_topic[topic].setdefault(at, [0, 0])
        cell[0] += count
        cell[1] += size

    summary_topics = []
    data_topics: dict[str, dict] = {}
    data_partitions: dict[str, dict] = {}
    for topic in sorted(per_topic):
        minutes = _minutes(per_topic[topic])
        counts = [per_topic[topic].get(m, [0, 0])[0] for m in minutes]
        sizes = [per_topic[topic].get(m, [0, 0])[1] for m in minutes]
        peak = max(range(len(minutes)), key=lambda i: counts[i])
        span_minutes = (minutes[-1] - minutes[0]) // MINUTE_MS + 1
        total, total_bytes = sum(counts), sum(sizes)
        summary_topics.append(
            {
                "topic": topic,
                "partitions": partitions.get(topic, 0),
                "records": total,
                "bytes": total_bytes,
                "first_minute": iso_ms(minutes[0]),
                "last_minute": iso_ms(minutes[-1]),
                "peak_minute": iso_ms(minutes[peak]),
                "peak_records_per_minute": counts[peak],
                "avg_records_per_minute": round(total / span_minutes, 3),
                "avg_bytes_per_second": round(total_bytes / (span_minutes * 60), 3),
            }
        )
        data_topics[topic] = {
            "minute": [iso_ms(m) for m in minutes],
            "records": counts,
            "bytes": sizes,
        }
        data_partitions[topic] = {}
        for partition in sorted(per_partition[topic]):
            cells = per_partition[topic][partition]
            data_partitions[topic][str(partition)] = {
                "minute": [iso_ms(m) for m in minutes],
                "records": [cells.get(m, [0, 0])[0] for m in minutes],
                "bytes": [cells.get(m, [0, 0])[1] for m in minutes],
            }

    charts = [
        line_chart(
            "Records per minute by topic",
            {t: (s["minute"], s["records"]) for t, s in data_topics.items()},
            y_title="records / min",
        ),
        line_chart(
            "Bytes per minute by topic",
            {t: (s["minute"], s["bytes"]) for t, s in data_topics.items()},
            y_title="bytes / min",
        ),
    ]
    summary = {
        "topics": len(summary_topics),
        "records": sum(t["records"] for t in summary_topics),
        "bytes": sum(t["bytes"] for t in summary_topics),
        "per_topic": summary_topics,
    }
    data = {"per_topic": data_topics, "per_partition": data_partitions, "charts": charts}
    ctx.report(1.0, "done")
    return AnalyticsOutput(rows=len(rows), summary=summary, data=data)


def _minutes(cells: dict[int, list[int]]) -> list[int]:
    """A topic's minutes: every minute from first to last (zero-filled) unless the span is huge."""
    first, last = min(cells), max(cells)
    if (last - first) // MINUTE_MS + 1 > MAX_FILLED_MINUTES:
        return sorted(cells)
    return list(range(first, last + MINUTE_MS, MINUTE_MS))

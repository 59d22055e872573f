"""Hot partitions and hot keys: who gets more than a fair share of a topic's records or bytes.

Rules (documented in docs/analytics.md)
---------------------------------------
For a topic with ``n`` partitions (from metadata, so idle partitions count), a partition's
*share* is its fraction of the topic's records (and, separately, of its bytes); fair share is
``1/n``. A partition is **hot** when ``n >= 2``, it holds at least ``MIN_RECORDS`` records and
its record or byte share exceeds ``threshold(n) = min(2/n, (1 + 1/n) / 2)`` — twice the fair
share, except that with two partitions (where 2/n is 100%) it is the midpoint between fair and
everything (75%).

A key is **hot** when ``n >= 2``, it has at least ``MIN_RECORDS`` records and it alone carries
more than a fair partition's share (``1/n``) of the topic's records: the default partitioner
sends one key to one partition, so such a key overloads its partition however many partitions
the topic has. Null keys are never hot keys (they are spread by the partitioner).

Advice follows Kafka practice: salt a hot key (a suffix spreading it over several partitions,
merged again downstream), use a compound key with more distinct values, add partitions (new
keys spread; existing keys move, so per-key order breaks across the change), and look at the
partitioner when a partition is hot without a hot key.

Spark computes per-partition counts and, per topic, the top ``TOP_KEYS`` keys (a window over
key counts) plus the number of distinct keys; the rest is arithmetic on a few rows.
"""

from __future__ import annotations

from collections import defaultdict

from pyspark.sql import Window
from pyspark.sql import functions as F

from spark_jobs.analytics.common import (
    AnalyticsOutput,
    JobContext,
    bar_chart,
    key_label,
    load_records,
    record_bytes,
    topic_partitions,
)

MIN_RECORDS = 100
TOP_KEYS = 10
HOT = "#d62728"
NORMAL = "#1f77b4"


def threshold(n: int) -> float:
    """The share above which one of ``n`` partitions is hot."""
    return min(2.0 / n, (1.0 + 1.0 / n) / 2.0)


def run(ctx: JobContext) -> AnalyticsOutput:
    ctx.report(0.05, "listing topics")
    partitions = topic_partitions(ctx.bootstrap_servers, ctx.topics, ctx.kafka_options)
    if not partitions:
        return AnalyticsOutput(0, _summary([], [], []), {"charts": []})
    ctx.report(0.15, f"reading {len(partitions)} topics")
    records = load_records(ctx, sorted(partitions)).select(
        "topic", "partition", "key", record_bytes().alias("b")
    )
    records = records.cache()  # read the topics once for both aggregations
    try:
        by_partition = (
            records.groupBy("topic", "partition")
            .agg(F.count(F.lit(1)).alias("records"), F.sum("b").alias("bytes"))
            .collect()
        )
        ctx.report(0.6, "counting keys")
        keyed = (
            records.where(F.col("key").isNotNull())
            .groupBy("topic", "key")
            .agg(F.count(F.lit(1)).alias("records"), F.sum("b").alias("bytes"))
        )
        ranked = keyed.withColumn(
            "rank",
            F.row_number().over(
                Window.partitionBy("topic").orderBy(F.desc("records"), F.asc("key"))
            ),
        )
        top_keys = ranked.where(F.col("rank") <= TOP_KEYS).collect()
        distinct = {
            str(r["topic"]): int(r["keys"])
            for r in keyed.groupBy("topic").agg(F.count(F.lit(1)).alias("keys")).collect()
        }
    finally:
        records.unpersist()
    ctx.report(0.9, "finding hot partitions")

    counts: dict[str, dict[int, tuple[int, int]]] = defaultdict(dict)
    for row in by_partition:
        counts[str(row["topic"])][int(row["partition"])] = (
            int(row["records"]),
            int(row["bytes"] or 0),
        )
    keys: dict[str, list[tuple[str | None, int, int]]] = defaultdict(list)
    for row in sorted(top_keys, key=lambda r: (r["topic"], r["rank"])):
        keys[str(row["topic"])].append(
            (key_label(row["key"]), int(row["records"]), int(row["bytes"] or 0))
        )

    topics_out, hot_partitions, hot_keys, charts = [], [], [], []
    partition_data: dict[str, dict] = {}
    key_data: dict[str, dict] = {}
    for topic, n in sorted(partitions.items()):
        per = counts.get(topic, {})
        total = sum(c for c, _ in per.values())
        total_bytes = sum(b for _, b in per.values())
        limit = threshold(n)
        shares, byte_shares, flags = [], [], []
        for p in range(n):
            c, b = per.get(p, (0, 0))
            share = c / total if total else 0.0
            byte_share = b / total_bytes if total_bytes else 0.0
            hot = n >= 2 and c >= MIN_RECORDS and (share > limit or byte_share > limit)
            shares.append(round(share, 6))
            byte_shares.append(round(byte_share, 6))
            flags.append(hot)
            if hot:
                hot_partitions.append(
                    {
                        "topic": topic,
                        "partition": p,
                        "records": c,
                        "bytes": b,
                        "share": round(share, 6),
                        "byte_share": round(byte_share, 6),
                        "fair_share": round(1 / n, 6),
                        "threshold": round(limit, 6),
                    }
                )
        topic_hot_keys = []
        for label, c, b in keys.get(topic, []):
            share = c / total if total else 0.0
            if n >= 2 and c >= MIN_RECORDS and share > 1 / n:
                topic_hot_keys.append(
                    {
                        "topic": topic,
                        "key": label,
                        "records": c,
                        "bytes": b,
                        "share": round(share, 6),
                    }
                )
        hot_keys.extend(topic_hot_keys)
        topics_out.append(
            {
                "topic": topic,
                "partitions": n,
                "records": total,
                "bytes": total_bytes,
                "distinct_keys": distinct.get(topic, 0),
                "max_share": max(shares) if shares else 0.0,
                "skew": round(max(shares) * n, 3) if total else 0.0,  # 1.0 = perfectly even
                "hot_partitions": [p for p in range(n) if flags[p]],
                "hot_keys": [k["key"] for k in topic_hot_keys],
            }
        )
        partition_data[topic] = {
            "partition": list(range(n)),
            "records": [per.get(p, (0, 0))[0] for p in range(n)],
            "bytes": [per.get(p, (0, 0))[1] for p in range(n)],
            "share": shares,
            "byte_share": byte_shares,
            "hot": flags,
            "fair_share": round(1 / n, 6),
            "threshold": round(limit, 6),
        }
        key_data[topic] = {
            "key": [k for k, _, _ in keys.get(topic, [])],
            "records": [c for _, c, _ in keys.get(topic, [])],
            "share": [round(c / total, 6) if total else 0.0 for _, c, _ in keys.get(topic, [])],
        }
        chart = bar_chart(
            f"{topic}: share of records per partition",
            [str(p) for p in range(n)],
            shares,
            name="share of records",
            y_title="share",
            colors=[HOT if f else NORMAL for f in flags],
        )
        chart["layout"]["xaxis"] = {"title": {"text": "partition"}, "type": "category"}
        chart["layout"]["shapes"] = [
            _hline(1 / n, "#2ca02c", "fair share"),
            _hline(limit, HOT, "hot threshold"),
        ]
        charts.append(chart)
        if key_data[topic]["key"]:
            hot_labels = {k["key"] for k in topic_hot_keys}
            key_chart = bar_chart(
                f"{topic}: top keys by share of records",
                key_data[topic]["key"],
                key_data[topic]["share"],
                name="share of records",
                y_title="share",
                colors=[HOT if k in hot_labels else NORMAL for k in key_data[topic]["key"]],
            )
            key_chart["layout"]["xaxis"] = {"title": {"text": "key"}, "type": "category"}
            charts.append(key_chart)

    summary = _summary(topics_out, hot_partitions, hot_keys)
    data = {"partitions": partition_data, "keys": key_data, "charts": charts}
    ctx.report(1.0, "done")
    return AnalyticsOutput(rows=len(by_partition) + len(top_keys), summary=summary, data=data)


def _hline(y: float, color: str, name: str) -> dict:
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": y,
        "y1": y,
        "line": {"color": color, "dash": "dash"},
        "name": name,
    }


def _summary(topics: list[dict], hot_partitions: list[dict], hot_keys: list[dict]) -> dict:
    return {
        "rule": (
            f"a partition is hot when it has at least {MIN_RECORDS} records and its share of "
            "the topic's records or bytes exceeds min(2/n, (1 + 1/n)/2) for n partitions; a key "
            f"is hot when it has at least {MIN_RECORDS} records and carries more than 1/n of "
            "the topic's records"
        ),
        "topics": topics,
        "hot_partitions": hot_partitions,
        "hot_keys": hot_keys,
        "advice": advice(hot_partitions, hot_keys),
    }


def advice(hot_partitions: list[dict], hot_keys: list[dict]) -> list[str]:
    """What to do about the skew found (empty when nothing is hot)."""
    if not hot_partitions and not hot_keys:
        return []
    tips: list[str] = []
    keyed_topics = {k["topic"] for k in hot_keys}
    for k in hot_keys:
        tips.append(
            f"Key {k['key']!r} carries {k['share']:.0%} of topic {k['topic']!r}: the default "
            "partitioner sends a key to one partition, so no partition count spreads it. Salt "
            "the key (append a suffix 0..k-1 to spread it over k partitions and merge per key "
            "downstream) or use a compound key (e.g. key plus a secondary attribute) with more "
            "distinct values."
        )
    for p in hot_partitions:
        if p["topic"] in keyed_topics:
            continue
        tips.append(
            f"Partition {p['topic']}-{p['partition']} gets {p['share']:.0%} of the records "
            "without a dominant key: check the producers' partitioner (explicit partition "
            "numbers, a custom partitioner, or too few distinct keys hashing together)."
        )
    tips.append(
        "Adding partitions (kafka-topics --alter --partitions) spreads new keys and raises "
        "the topic's ceiling, but it remaps existing keys (hash mod n), so per-key ordering "
        "breaks across the change and a single hot key still lands on one partition."
    )
    return tips

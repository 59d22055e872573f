"""What every analytics job shares: its inputs, its output shape, and reading the topics.

A job is a function ``run(ctx: JobContext) -> AnalyticsOutput``. ``JobContext`` carries the
Spark session, where the cluster is, which topics and since when, lag samples (for
``lag-trends``) and a progress callback. ``AnalyticsOutput`` is plain JSON: ``summary`` is small
(headline figures, flagged partitions and keys, advice), ``data`` holds the series for charts,
including ``data["charts"]`` — a list of Plotly figure dicts (``{"data": [...], "layout": {...}}``)
the analytics page can hand straight to ``Plotly.newPlot``.

``load_records`` reads the topics with the ``weir`` source (``subscribe`` the topic list; with
``since_ms``, ``startingTimestamp`` and the ``latest`` strategy, so a partition with nothing
newer contributes nothing) and reports each topic's partition count from metadata — partitions
that received nothing still count towards fair shares.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka.admin import AdminClient
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

Progress = Callable[[float, str], None]


@dataclass(frozen=True, slots=True)
class JobContext:
    """The inputs of one analytics run."""

    spark: SparkSession
    bootstrap_servers: str
    topics: list[str] | None = None
    since_ms: int | None = None
    lag_samples: list[dict] | None = None
    progress: Progress | None = None
    # ``kafka.*`` source options for a secured cluster (``kafka.security.protocol``,
    # ``kafka.sasl.*``, ``kafka.ssl.*``): passed to the source and to the planner's AdminClient.
    kafka_options: Mapping[str, str] = field(default_factory=dict)

    def report(self, fraction: float, message: str) -> None:
        if self.progress is not None:
            self.progress(fraction, message)


@dataclass
class AnalyticsOutput:
    """A job's result, JSON-ready (ints, floats, strings, lists, dicts; no NaN)."""

    rows: int
    summary: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AnalyticsJob:
    """A named job the control plane can schedule."""

    name: str
    title: str
    description: str
    run: Callable[[JobContext], AnalyticsOutput]


def topic_partitions(
    bootstrap_servers: str,
    topics: list[str] | None,
    kafka_options: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Partition count per topic: the given ones that exist, else every non-internal topic."""
    config = {k.removeprefix("kafka."): v for k, v in (kafka_options or {}).items()}
    admin = AdminClient({**config, "bootstrap.servers": bootstrap_servers})
    metadata = admin.list_topics(timeout=30)
    names = topics if topics is not None else [t for t in metadata.topics if not t.startswith("__")]
    counts = {}
    for name in sorted(set(names)):
        topic = metadata.topics.get(name)
        if topic is not None and topic.error is None and topic.partitions:
            counts[name] = len(topic.partitions)
    return counts


def load_records(ctx: JobContext, topics: list[str]) -> DataFrame:
    """The topics' records as a DataFrame in the Kafka source schema."""
    reader = (
        ctx.spark.read.format("weir")
        .option("kafka.bootstrap.servers", ctx.bootstrap_servers)
        .option("subscribe", ",".join(topics))
        .options(**ctx.kafka_options)
    )
    if ctx.since_ms is not None:
        reader = reader.option("startingTimestamp", str(ctx.since_ms)).option(
            "startingOffsetsByTimestampStrategy", "latest"
        )
    return reader.load()


def record_bytes() -> Column:
    """Key plus value length in bytes (a null key or value counts 0)."""
    return F.coalesce(F.length("key"), F.lit(0)) + F.coalesce(F.length("value"), F.lit(0))


def timestamp_ms() -> Column:
    return F.unix_millis("timestamp")


def number(value: Any) -> int | float | None:
    """A JSON-safe number: ints stay ints, NaN/inf become None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return int(value)
    result = float(value)
    return result if math.isfinite(result) else None


def key_label(key: bytes | bytearray | None) -> str | None:
    """A printable label for a record key (UTF-8 text, else hex)."""
    if key is None:
        return None
    raw = bytes(key)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + raw[:32].hex() + ("…" if len(raw) > 32 else "")
    if text.isprintable():
        return text if len(text) <= 80 else text[:80] + "…"
    return "0x" + raw[:32].hex() + ("…" if len(raw) > 32 else "")


def bar_chart(
    title: str, x: list, y: list, *, name: str, y_title: str, colors: list[str] | None = None
) -> dict:
    """A Plotly bar figure as a dict."""
    trace: dict[str, Any] = {"type": "bar", "x": x, "y": y, "name": name}
    if colors is not None:
        trace["marker"] = {"color": colors}
    return {
        "data": [trace],
        "layout": {"title": {"text": title}, "yaxis": {"title": {"text": y_title}}},
    }


def line_chart(title: str, series: dict[str, tuple[list, list]], *, y_title: str) -> dict:
    """A Plotly line figure (x are epoch milliseconds, shown as dates) as a dict."""
    return {
        "data": [
            {"type": "scatter", "mode": "lines+markers", "name": name, "x": xs, "y": ys}
            for name, (xs, ys) in series.items()
        ],
        "layout": {
            "title": {"text": title},
            "xaxis": {"type": "date"},
            "yaxis": {"title": {"text": y_title}},
        },
    }


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC (for chart x values and summaries)."""
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")

"""Reads of live lag and its history (selectors for the ops API and the websocket consumers).

The monitor (``manage.py monitor``) keeps the latest snapshot of every group in Redis for
``SNAPSHOT_TTL_S`` seconds, under ``weir:{cluster}:lag:group:<group>``, the list of groups
under ``lag:groups`` and the cluster view under ``lag:cluster``. A reader takes the snapshot
when there is one and otherwise computes the group's lag on demand (one collector pass over
one group: the numbers are exact, but with no commit history its status is only ``OK``/
``complete: 0``).

Channels group names allow only ASCII letters, digits, ``-``, ``_`` and ``.`` and fewer than
100 characters, while a Kafka group id may hold anything: ``channel_group_name`` keeps the
allowed characters of the id (truncated) and appends a hash of the whole id, so distinct ids
never share a channel group.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime
from typing import Any, TypeVar

from django.db.models import Model, QuerySet

from controlplane.cluster import ClusterGateway, gateway
from groups.models import GroupStatusSample, LagSample

__all__ = [
    "channel_group_name",
    "cluster_snapshot",
    "group_lag",
    "group_list",
    "group_snapshot",
    "lag_chart",
    "lag_history",
    "status_history",
    "status_timeline",
    "store_snapshots",
]

# The dashboard draws at most this many stored lag samples (per-partition rows) per group:
# 50 partitions at one sample every 5 s is 30 minutes' worth.
CHART_MAX_SAMPLES = 20_000

# A stored sample model (LagSample, GroupStatusSample): both have an ``at`` timestamp.
S = TypeVar("S", bound=Model)

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def channel_group_name(group: str | None) -> str:
    """The Channels group of ``/ws/groups/<group>/`` (``None``: of ``/ws/cluster/``)."""
    if group is None:
        return "weir.cluster"
    digest = hashlib.sha1(group.encode("utf-8"), usedforsecurity=False).hexdigest()[:16]
    return f"weir.lag.{_UNSAFE.sub('_', group)[:60]}.{digest}"


def _group_key(gw: ClusterGateway, group: str) -> str:
    return gw.keys.key(f"lag:group:{group}")


def store_snapshots(
    gw: ClusterGateway,
    texts: dict[str, str],
    summaries: list[dict[str, Any]],
    cluster: str,
    *,
    ttl_s: int,
) -> None:
    """Keep the latest message of each group (JSON text), the group list and the cluster."""
    pipe = gw.redis.pipeline(transaction=False)
    for group, text in texts.items():
        pipe.set(_group_key(gw, group), text, ex=ttl_s)
    pipe.set(gw.keys.key("lag:groups"), json.dumps(summaries), ex=ttl_s)
    pipe.set(gw.keys.key("lag:cluster"), cluster, ex=ttl_s)
    pipe.execute()


def group_snapshot(*, group: str, gw: ClusterGateway | None = None) -> dict[str, Any] | None:
    """The monitor's latest message for ``group``, or None when the monitor has none."""
    gw = gw or gateway()
    raw = gw.redis.get(_group_key(gw, group))
    return json.loads(raw) if raw else None


def cluster_snapshot(*, gw: ClusterGateway | None = None) -> dict[str, Any] | None:
    gw = gw or gateway()
    raw = gw.redis.get(gw.keys.key("lag:cluster"))
    return json.loads(raw) if raw else None


def group_lag(*, group: str) -> dict[str, Any] | None:
    """Per-partition lag of ``group``: the monitor's snapshot or computed now; None if unknown."""
    snapshot = group_snapshot(group=group)
    if snapshot is not None:
        return snapshot
    from groups.monitor import LagCollector

    collector = LagCollector(gateway())
    try:
        found = collector.collect(only=group)
    finally:
        collector.close()
    return found[0].message() if found else None


def group_list() -> list[dict[str, Any]]:
    """Every group with state, members, total lag and status (computed if no monitor runs)."""
    gw = gateway()
    raw = gw.redis.get(gw.keys.key("lag:groups"))
    if raw:
        return json.loads(raw)
    from groups.monitor import LagCollector

    collector = LagCollector(gw)
    try:
        return [g.summary() for g in collector.collect()]
    finally:
        collector.close()


def lag_history(
    *,
    group: str,
    since: datetime | None = None,
    until: datetime | None = None,
    topic: str | None = None,
    partition: int | None = None,
    limit: int = 10_000,
) -> QuerySet[LagSample]:
    samples = _in_window(LagSample.objects.filter(group=group), since=since, until=until)
    if topic is not None:
        samples = samples.filter(topic=topic)
    if partition is not None:
        samples = samples.filter(partition=partition)
    return samples.order_by("at", "topic", "partition")[:limit]


def status_history(
    *,
    group: str,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 10_000,
) -> QuerySet[GroupStatusSample]:
    samples = _in_window(GroupStatusSample.objects.filter(group=group), since=since, until=until)
    return samples.order_by("at")[:limit]


def _in_window(
    samples: QuerySet[S], *, since: datetime | None, until: datetime | None
) -> QuerySet[S]:
    """The samples taken at or after ``since`` and at or before ``until`` (None: no bound)."""
    if since is not None:
        samples = samples.filter(at__gte=since)
    if until is not None:
        samples = samples.filter(at__lte=until)
    return samples


def _iso(moment: datetime) -> str:
    """The monitor's timestamp format (``groups.monitor.GroupLag.message``), so stored and
    pushed points land on the same axis."""
    return moment.isoformat().replace("+00:00", "Z")


def lag_chart(*, group: str, since: datetime) -> dict[str, Any]:
    """Stored lag since ``since`` as chart series, oldest first.

    ``total`` is the group's total lag per stored tick (from the status samples, one row per
    tick); ``partitions`` has one series per partition. Only the newest
    ``CHART_MAX_SAMPLES`` partition rows are read, so a huge group costs one bounded query.
    """
    totals = GroupStatusSample.objects.filter(group=group, at__gte=since).order_by("at")
    total_x: list[str] = []
    total_y: list[int] = []
    for at, total in totals.values_list("at", "total_lag"):
        total_x.append(_iso(at))
        total_y.append(total)
    rows = list(
        LagSample.objects.filter(group=group, at__gte=since)
        .order_by("-at")
        .values_list("topic", "partition", "at", "lag")[:CHART_MAX_SAMPLES]
    )
    series: dict[tuple[str, int], dict[str, Any]] = {}
    for topic, partition, at, value in reversed(rows):
        found = series.get((topic, partition))
        if found is None:
            found = series[(topic, partition)] = {
                "topic": topic,
                "partition": partition,
                "x": [],
                "y": [],
            }
        found["x"].append(_iso(at))
        found["y"].append(value)
    return {
        "total": {"x": total_x, "y": total_y},
        "partitions": [series[key] for key in sorted(series)],
    }


def status_timeline(*, group: str, since: datetime, limit: int = 200) -> list[dict[str, Any]]:
    """The group's Burrow status as spans of equal status, oldest first (the last ``limit``).

    Each span: ``status``, ``start`` and ``end`` (first and last sample), ``samples`` and
    ``peak_lag`` (the highest total lag seen in it). Samples come every few seconds, so a
    timeline of changes is what a reader wants, not the rows.
    """
    spans: list[dict[str, Any]] = []
    samples = GroupStatusSample.objects.filter(group=group, at__gte=since).order_by("at")
    for at, status, total in samples.values_list("at", "status", "total_lag").iterator():
        last = spans[-1] if spans else None
        if last is not None and last["status"] == status:
            last["end"] = _iso(at)
            last["samples"] += 1
            last["peak_lag"] = max(last["peak_lag"], total)
            continue
        if last is not None:
            # A span lasts until the next one starts: no gap between them on a timeline.
            last["end"] = _iso(at)
        spans.append(
            {"status": status, "start": _iso(at), "end": _iso(at), "samples": 1, "peak_lag": total}
        )
    return spans[-limit:]

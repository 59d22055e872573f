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
from typing import Any

from django.db.models import QuerySet

from controlplane.cluster import ClusterGateway, gateway
from groups.models import GroupStatusSample, LagSample

__all__ = [
    "channel_group_name",
    "cluster_snapshot",
    "group_lag",
    "group_list",
    "group_snapshot",
    "lag_history",
    "status_history",
    "store_snapshots",
]

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
    samples = LagSample.objects.filter(group=group)
    if since is not None:
        samples = samples.filter(at__gte=since)
    if until is not None:
        samples = samples.filter(at__lte=until)
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
    samples = GroupStatusSample.objects.filter(group=group)
    if since is not None:
        samples = samples.filter(at__gte=since)
    if until is not None:
        samples = samples.filter(at__lte=until)
    return samples.order_by("at")[:limit]

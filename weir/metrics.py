"""Broker request metrics: plain counters on the hot path, a JSON snapshot in Redis.

Theory of operation
-------------------
The listener calls :meth:`BrokerMetrics.observe` once per request it answered, with the API
key, the time from reading the frame to the response leaving, and the request and response
sizes. ``observe`` only bumps integers: per API key a small list ``[count, total_ns,
bucket_0, ..., bucket_n]`` (one dict lookup, one ``bisect``), plus byte totals — Produce
request bytes are *bytes in*, Fetch response bytes *bytes out* (consumers and followers; the
followers' share is also counted as replication bytes out). No metrics library objects and no
allocations per request on the broker.

About once a second, beside the partition state, the broker writes :meth:`snapshot` as JSON
to the hash ``broker_metrics`` (field = broker id) under the cluster's key prefix. The control
plane's ``/metrics`` turns every fresh snapshot into Prometheus series with a ``broker`` label
(Kafka JMX-exporter names). Counters start at zero when a broker starts, which Prometheus
treats as a counter reset.

``client_quotas`` in the snapshot lists, per quota type (``Produce``, ``Fetch``, ``Request``)
and metric tags (``user``, ``client_id``; "" where the quota does not split by it), the
quota, the measured rate (bytes/s, or percent of a thread for Request) and the throttling:
``weir.quotas.QuotaManager.snapshot``. Only clients under a quota appear.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from weir.metadata.keys import KeyLayout

__all__ = ["LATENCY_BUCKETS_MS", "BrokerMetrics", "broker_metrics_key", "read_broker_metrics"]

# Per-entity client quota figures (``weir.quotas.QuotaManager.snapshot``), given ``now_ms``.
QuotaFigures = Callable[[int], list[dict[str, Any]]]

# Upper bounds of the request latency histogram, in milliseconds (the last bucket is +Inf).
LATENCY_BUCKETS_MS = (1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
_BOUNDS_NS = tuple(ms * 1_000_000 for ms in LATENCY_BUCKETS_MS)
_SLOTS = 2 + len(_BOUNDS_NS) + 1

PRODUCE_KEY = 0
FETCH_KEY = 1


def broker_metrics_key(keys: KeyLayout) -> str:
    return keys.key("broker_metrics")


class BrokerMetrics:
    """Counters of one broker process (see the module docstring)."""

    __slots__ = (
        "_apis",
        "_client_quotas",
        "bytes_in",
        "bytes_out",
        "connections_closed_idle",
        "connections_refused",
        "network_bytes_in",
        "network_bytes_out",
        "replication_bytes_out",
    )

    def __init__(self, *, client_quotas: QuotaFigures | None = None) -> None:
        self._apis: dict[int, list[int]] = {}
        self._client_quotas = client_quotas
        self.bytes_in = 0
        self.bytes_out = 0
        self.replication_bytes_out = 0
        self.network_bytes_in = 0
        self.network_bytes_out = 0
        # weir.connection_limits: connections closed by reason (per_ip: over
        # max.connections.per.ip at accept; max_connections: shed for the inter-broker
        # listener) and connections closed after connections.max.idle.ms.
        self.connections_refused: dict[str, int] = {}
        self.connections_closed_idle = 0

    def connection_refused(self, reason: str) -> None:
        self.connections_refused[reason] = self.connections_refused.get(reason, 0) + 1

    def observe(
        self, api_key: int, elapsed_ns: int, size_in: int, size_out: int, body: Any
    ) -> None:
        """One answered request (hot path: integer arithmetic only)."""
        stats = self._apis.get(api_key)
        if stats is None:
            stats = self._apis[api_key] = [0] * _SLOTS
        stats[0] += 1
        stats[1] += elapsed_ns
        stats[2 + bisect_left(_BOUNDS_NS, elapsed_ns)] += 1
        self.network_bytes_in += size_in
        self.network_bytes_out += size_out
        if api_key == PRODUCE_KEY:
            self.bytes_in += size_in
        elif api_key == FETCH_KEY:
            self.bytes_out += size_out
            if getattr(body, "replica_id", -1) >= 0:
                self.replication_bytes_out += size_out

    def snapshot(
        self, *, broker_id: int, now_ms: int, extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A JSON-able copy of every counter (plus ``extra`` facts, e.g. config defaults)."""
        return {
            **(extra or {}),
            "broker_id": broker_id,
            "updated_ms": now_ms,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "replication_bytes_out": self.replication_bytes_out,
            "network_bytes_in": self.network_bytes_in,
            "network_bytes_out": self.network_bytes_out,
            "connections_refused": dict(self.connections_refused),
            "connections_closed_idle": self.connections_closed_idle,
            "latency_buckets_ms": list(LATENCY_BUCKETS_MS),
            "client_quotas": self._client_quotas(now_ms) if self._client_quotas else [],
            "apis": {
                str(key): {
                    "count": stats[0],
                    "time_ns": stats[1],
                    "buckets": stats[2:],
                }
                for key, stats in sorted(self._apis.items())
            },
        }

    async def publish(
        self,
        redis: Any,
        *,
        keys: KeyLayout,
        broker_id: int,
        now_ms: int,
        extra: dict[str, Any] | None = None,
    ) -> None:
        snapshot = self.snapshot(broker_id=broker_id, now_ms=now_ms, extra=extra)
        await redis.hset(
            broker_metrics_key(keys), str(broker_id), json.dumps(snapshot, separators=(",", ":"))
        )


def read_broker_metrics(raw: dict[str, str]) -> dict[int, dict[str, Any]]:
    """The ``broker_metrics`` hash (as read from Redis) → snapshot by broker id."""
    found = {}
    for field, value in raw.items():
        try:
            found[int(field)] = json.loads(value)
        except ValueError:
            continue
    return found

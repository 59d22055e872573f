"""Cluster traffic for the dashboard: bytes in/out per broker per second, and its recent past.

Brokers publish cumulative counters (``weir.metrics``) to Redis every second. The monitor
turns two successive readings into rates (:class:`TrafficMeter`) on each tick, puts them in the
``/ws/cluster/`` message and appends one point to a capped Redis list (``traffic:history``, the
last ``HISTORY_POINTS`` ticks) so a page opened now can draw the last minutes at once. A
counter that went down (a restarted broker) starts over instead of giving a negative rate.

The same tick also reports what the brokers page needs per broker: leaders, replicas and the
bytes its replicas hold on disk (from the replica states brokers publish).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from brokers.ops.selectors import broker_layout
from controlplane.cluster import ClusterGateway
from weir.metadata.image import ClusterImage
from weir.metadata.partition_state import ReplicaStatus
from weir.metrics import broker_metrics_key, read_broker_metrics

__all__ = ["HISTORY_POINTS", "TrafficMeter", "broker_facts", "traffic_history"]

HISTORY_POINTS = 600
_IDLE = {"bytes_in_per_s": 0.0, "bytes_out_per_s": 0.0}


def _history_key(gw: ClusterGateway) -> str:
    return gw.keys.key("traffic:history")


class TrafficMeter:
    """Rates from successive counter readings, per broker."""

    def __init__(self) -> None:
        self._last: dict[int, tuple[int, int, int]] = {}  # broker → (ms, bytes in, bytes out)
        self._rates: dict[int, dict[str, float]] = {}

    def rates(self, counters: dict[int, dict[str, Any]]) -> dict[int, dict[str, float]]:
        found: dict[int, dict[str, float]] = {}
        for broker_id, snapshot in counters.items():
            now = (
                int(snapshot.get("updated_ms", 0)),
                int(snapshot.get("bytes_in", 0)),
                int(snapshot.get("bytes_out", 0)),
            )
            before = self._last.get(broker_id)
            if before is not None and now[0] == before[0]:
                # Brokers publish once a second; a monitor ticking faster sees the same
                # reading again: repeat the last rate rather than report a false zero.
                found[broker_id] = self._rates.get(broker_id, _IDLE)
                continue
            self._last[broker_id] = now
            if before is None or now[0] < before[0] or now[1] < before[1] or now[2] < before[2]:
                rate = _IDLE
            else:
                seconds = (now[0] - before[0]) / 1000
                rate = {
                    "bytes_in_per_s": round((now[1] - before[1]) / seconds, 1),
                    "bytes_out_per_s": round((now[2] - before[2]) / seconds, 1),
                }
            found[broker_id] = self._rates[broker_id] = rate
        return found

    def tick(self, gw: ClusterGateway, *, at: str) -> dict[int, dict[str, float]]:
        """Read the counters, compute rates, append a history point; the rates by broker."""
        counters = read_broker_metrics(gw.redis.hgetall(broker_metrics_key(gw.keys)))
        rates = self.rates(counters)
        point = {"at": at, "brokers": {str(b): r for b, r in sorted(rates.items())}}
        pipe = gw.redis.pipeline(transaction=False)
        pipe.rpush(_history_key(gw), json.dumps(point, separators=(",", ":")))
        pipe.ltrim(_history_key(gw), -HISTORY_POINTS, -1)
        pipe.execute()
        return rates


def traffic_history(*, gw: ClusterGateway, points: int = HISTORY_POINTS) -> list[dict[str, Any]]:
    """The last ``points`` traffic points, oldest first."""
    return [json.loads(raw) for raw in gw.redis.lrange(_history_key(gw), -points, -1)]


def broker_facts(
    image: ClusterImage, replica_states: Iterable[ReplicaStatus]
) -> dict[int, dict[str, int]]:
    """Leaders, replicas and bytes on disk per broker (counts from the brokers page's layout,
    disk from the replica states brokers publish)."""
    counts = broker_layout(image=image, limit=0)["brokers"]
    disk: Counter[int] = Counter()
    for state in replica_states:
        disk[state.broker_id] += state.size_bytes
    return {
        broker_id: {
            "leaders": counts[str(broker_id)]["leaders"],
            "replicas": counts[str(broker_id)]["replicas"],
            "disk_bytes": disk[broker_id],
        }
        for broker_id in image.registrations
    }

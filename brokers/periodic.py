"""Periodic work of the brokers app, run by ``manage.py monitor``.

* the rebalance executor's tick (every second): submits the next partitions of a running
  plan and finishes it (:mod:`brokers.ops.executor`);
* throttle cleanup (every 10 s): once no partition is moving, removes the replication
  throttles the operations API set, and forgets reassignments older than an hour — what
  ``reassign-partitions --verify`` does by hand;
* coordination watch (every 5 s): describes the coordination store, which records a
  failover of its primary when there was one (:mod:`weir.metadata.deployment`).
"""

from __future__ import annotations

from brokers.coordination import coordination_view
from brokers.ops import executor, services, store
from controlplane.cluster import gateway
from controlplane.periodic import every

__all__ = ["clean_reassignment_state", "rebalance_tick", "watch_coordination"]


@every(1.0, name="brokers.rebalance_tick")
def rebalance_tick() -> None:
    executor.tick()


@every(10.0, name="brokers.clean_reassignment_state")
def clean_reassignment_state() -> None:
    gw = gateway()
    services.throttles_clear_if_idle(gw=gw)
    cutoff = store.now_ms() - store.TRACK_RETENTION_MS
    stale = [k for k, e in store.tracked_reassignments(gw).items() if e["submitted_ms"] < cutoff]
    store.untrack_reassignments(gw, stale)


@every(5.0, name="brokers.watch_coordination")
def watch_coordination() -> None:
    coordination_view()

"""The operations API's own bookkeeping in Redis (never cluster metadata).

The controller owns metadata; everything here is what the control plane remembers about the
operations it started, under ``weir:{cluster_id}:ops:*``:

* ``ops:reassignments`` (hash ``<topic>/<partition>`` → JSON) — reassignments submitted
  through the API with their target and submit time, so ``GET /api/reassignments/`` can show
  a move as completed (100 %) after the controller has finished and forgotten it. Entries
  older than :data:`TRACK_RETENTION_MS` are pruned by the periodic cleanup.
* ``ops:throttled_brokers`` / ``ops:throttled_topics`` (sets) — where the API set
  replication throttles, so they are removed (and only they) once nothing is moving.
* ``ops:rebalance`` (JSON) — the rebalance plan being executed and its per-partition status;
  ``ops:rebalance_lock`` serialises executor ticks and cancels.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from redis.exceptions import LockError

from controlplane.cluster import ClusterGateway

__all__ = [
    "TRACK_RETENTION_MS",
    "now_ms",
    "rebalance_load",
    "rebalance_lock",
    "rebalance_save",
    "throttle_mark",
    "throttle_marks",
    "throttle_unmark",
    "track_reassignments",
    "tracked_reassignments",
    "untrack_reassignments",
]

TRACK_RETENTION_MS = 3_600_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _key(gw: ClusterGateway, name: str) -> str:
    return gw.keys.key(f"ops:{name}")


def track_reassignments(gw: ClusterGateway, entries: Iterable[dict[str, Any]]) -> None:
    mapping = {
        f"{e['topic']}/{e['partition']}": json.dumps(e, separators=(",", ":")) for e in entries
    }
    if mapping:
        gw.redis.hset(_key(gw, "reassignments"), mapping=mapping)


def tracked_reassignments(gw: ClusterGateway) -> dict[tuple[str, int], dict[str, Any]]:
    found = {}
    for value in gw.redis.hgetall(_key(gw, "reassignments")).values():
        entry = json.loads(value)
        found[(entry["topic"], int(entry["partition"]))] = entry
    return found


def untrack_reassignments(gw: ClusterGateway, keys: Iterable[tuple[str, int]]) -> None:
    fields = [f"{t}/{p}" for t, p in keys]
    if fields:
        gw.redis.hdel(_key(gw, "reassignments"), *fields)


def _throttle_sets(
    gw: ClusterGateway, command: str, brokers: Iterable[int], topics: Iterable[str]
) -> None:
    """``SADD``/``SREM`` the brokers and topics in the throttle marks, in one round trip."""
    pipe = gw.redis.pipeline(transaction=False)
    for key, members in (
        ("throttled_brokers", [str(b) for b in brokers]),
        ("throttled_topics", list(topics)),
    ):
        if members:
            getattr(pipe, command)(_key(gw, key), *members)
    pipe.execute()


def throttle_mark(gw: ClusterGateway, *, brokers: Iterable[int], topics: Iterable[str]) -> None:
    _throttle_sets(gw, "sadd", brokers, topics)


def throttle_marks(gw: ClusterGateway) -> tuple[set[int], set[str]]:
    brokers = {int(b) for b in gw.redis.smembers(_key(gw, "throttled_brokers"))}
    return brokers, set(gw.redis.smembers(_key(gw, "throttled_topics")))


def throttle_unmark(gw: ClusterGateway, *, brokers: Iterable[int], topics: Iterable[str]) -> None:
    _throttle_sets(gw, "srem", brokers, topics)


def rebalance_load(gw: ClusterGateway) -> dict[str, Any] | None:
    raw = gw.redis.get(_key(gw, "rebalance"))
    return None if raw is None else json.loads(raw)


def rebalance_save(gw: ClusterGateway, plan: dict[str, Any]) -> None:
    plan["updated_ms"] = now_ms()
    gw.redis.set(_key(gw, "rebalance"), json.dumps(plan, separators=(",", ":")))


@contextmanager
def rebalance_lock(gw: ClusterGateway, *, blocking: bool) -> Iterator[bool]:
    """Hold the Redis lock around reading-modifying-writing the plan (ticks and cancels).

    Yields whether the lock was acquired (a non-blocking tick skips when another holds it).
    """
    lock = gw.redis.lock(
        _key(gw, "rebalance_lock"), timeout=60, blocking=blocking, blocking_timeout=30
    )
    acquired = bool(lock.acquire())
    try:
        yield acquired
    finally:
        if acquired:
            with suppress(LockError):  # expired meanwhile: nothing to release
                lock.release()

"""Replication throttle: a byte-rate budget for the catch-up traffic of moving replicas.

Kafka's ``leader.replication.throttled.rate`` (broker, bytes/s) applies to the partitions
and replicas a topic lists in ``leader.replication.throttled.replicas`` (``partition:broker``
entries, or ``*``); ``kafka-reassign-partitions --throttle`` sets both. A leader listed there
spends the budget on fetches of followers that are not in the ISR (replicas catching up): a
throttled partition gets at most the bytes left in the bucket (at least one whole batch) and
is left out of a response while the bucket is empty, so in-sync replication is never slowed.
Only bytes actually sent are charged, not the re-reads of a parked fetch.
"""

from __future__ import annotations

__all__ = ["ReplicationQuota", "is_throttled"]

UNLIMITED = 2**63 - 1


def is_throttled(throttled_replicas: tuple[str, ...], partition: int, broker_id: int) -> bool:
    """Does a throttled-replicas list (``partition:broker`` or ``*``) cover this replica?"""
    if not throttled_replicas:
        return False
    if "*" in throttled_replicas:
        return True
    return f"{partition}:{broker_id}" in throttled_replicas


class ReplicationQuota:
    """A token bucket of ``rate`` bytes per second, allowing up to one second of burst."""

    def __init__(self) -> None:
        self._tokens = 0.0
        self._last_s: float | None = None

    def available(self, *, rate: int, now_s: float) -> bool:
        """True while the bucket has bytes left at ``rate``."""
        return self.remaining(rate=rate, now_s=now_s) > 0

    def remaining(self, *, rate: int, now_s: float) -> int:
        """Bytes that may be sent now (``UNLIMITED`` without a rate); negative when in debt."""
        if rate >= UNLIMITED:
            return UNLIMITED
        self._refill(rate, now_s)
        return int(self._tokens)

    def record(self, size: int, *, rate: int, now_s: float) -> None:
        if rate >= UNLIMITED:
            return
        self._refill(rate, now_s)
        self._tokens -= size

    def _refill(self, rate: int, now_s: float) -> None:
        if self._last_s is None:
            self._tokens = float(rate)
        else:
            self._tokens = min(float(rate), self._tokens + (now_s - self._last_s) * rate)
        self._last_s = now_s

"""Periodic checkpoints of the local logs, as Kafka's ReplicaManager and LogManager schedule them.

Theory of operation
-------------------
Two schedules on one clock (monotonic ms, passed in):

* every ``replica.high.watermark.checkpoint.interval.ms`` (Kafka's default 5 s) the high
  watermarks are written (``replication-offset-checkpoint``). Kafka schedules the task with
  that period and runs it only once when the period is not positive; here a non-positive
  interval means no periodic HW checkpoint (they are still written with the recovery
  checkpoint below and at shutdown).
* every ``RECOVERY_CHECKPOINT_INTERVAL_MS`` (60 s, the default of Kafka's
  ``log.flush.offset.checkpoint.interval.ms``, which Weir does not read yet) the logs are
  flushed and the recovery points, log starts and high watermarks written, so a restart
  recovers only what was appended since.

``tick(now_ms)`` does what is due and ``next_due_ms()`` says when to call it again; tests drive
both with a fake clock, ``run`` only sleeps between them. A failed write (disk full, ...) is
logged and retried at the next due time: checkpoints only shorten recovery, they never decide
what is committed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from weir.replica_manager import ReplicaManager

__all__ = ["HW_CHECKPOINT_INTERVAL_MS", "RECOVERY_CHECKPOINT_INTERVAL_MS", "Checkpointer"]

log = logging.getLogger("weir.broker")

RECOVERY_CHECKPOINT_INTERVAL_MS = 60_000
HW_CHECKPOINT_INTERVAL_MS = 5_000  # replica.high.watermark.checkpoint.interval.ms default


class Checkpointer:
    """HW checkpoint every ``high_watermark_interval_ms``; flush and recovery-point
    checkpoint every ``recovery_interval_ms``."""

    def __init__(
        self,
        replicas: ReplicaManager,
        *,
        time_ms: Callable[[], int],
        high_watermark_interval_ms: int = HW_CHECKPOINT_INTERVAL_MS,
        recovery_interval_ms: int = RECOVERY_CHECKPOINT_INTERVAL_MS,
    ) -> None:
        self._replicas = replicas
        self._time_ms = time_ms
        self._hw_interval_ms = high_watermark_interval_ms
        self._recovery_interval_ms = recovery_interval_ms
        now = time_ms()
        self._next_hw_ms: int | None = (
            now + high_watermark_interval_ms if high_watermark_interval_ms > 0 else None
        )
        self._next_recovery_ms = now + recovery_interval_ms

    def next_due_ms(self) -> int:
        """When the next checkpoint is due, on the checkpointer's clock."""
        if self._next_hw_ms is None:
            return self._next_recovery_ms
        return min(self._next_hw_ms, self._next_recovery_ms)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(max(0, self.next_due_ms() - self._time_ms()) / 1000)
            self.tick(self._time_ms())

    def tick(self, now_ms: int) -> None:
        """Write what is due at ``now_ms``; the next times count from now, so a stalled loop
        does not catch up with a burst of writes."""
        full = now_ms >= self._next_recovery_ms
        hw = self._next_hw_ms is not None and now_ms >= self._next_hw_ms
        if full:
            self._next_recovery_ms = now_ms + self._recovery_interval_ms
        if (full or hw) and self._next_hw_ms is not None:
            self._next_hw_ms = now_ms + self._hw_interval_ms
        try:
            if full:  # writes the high watermarks too
                self._replicas.checkpoint(flush=True)
            elif hw:
                self._replicas.checkpoint_high_watermarks()
        except OSError as exc:
            log.error("checkpoint failed: %s", exc)

"""Periodic checkpoints and flushes of the local logs, as Kafka's ReplicaManager and
LogManager schedule them.

Theory of operation
-------------------
Five schedules on one clock (monotonic ms, passed in), each period a Kafka config read once
at start (all four are read-only in Kafka):

* ``replica.high.watermark.checkpoint.interval.ms`` (5 s): the high watermarks are written
  (``replication-offset-checkpoint``).
* ``log.flush.offset.checkpoint.interval.ms`` (60 s): the logs are flushed and the recovery
  points and high watermarks written, so a restart recovers only what was appended since (the
  recovery point is "the persistent record of the last flush").
* ``log.flush.start.offset.checkpoint.interval.ms`` (60 s): the log start offsets are written
  (``log-start-offset-checkpoint``), Kafka's separate ``kafka-log-start-offset-checkpoint``
  task. The retention job also writes it at once when it moves a log start.
* ``log.flush.scheduler.interval.ms`` (Long.MAX_VALUE: never): Kafka's log flusher; each
  log not flushed for its topic's ``flush.ms`` is fsynced (``Log.flush_if_due``).
* ``producer.id.expiration.check.interval.ms`` (10 min): each log forgets the idempotent
  producers whose last batch is older than ``producer.id.expiration.ms`` (dynamic: read at
  each check), as Kafka's ``PeriodicProducerExpirationCheck`` does, so a broker that sees many
  short-lived producers does not keep their state forever. Record timestamps are wall-clock
  times: the check compares them with the log's own (wall) clock.

Kafka runs a task once when its period is not positive; here a non-positive period means the
task does not run periodically (the broker still writes every checkpoint at shutdown).

``tick(now_ms)`` does what is due and ``next_due_ms()`` says when to call it again; tests drive
both with a fake clock, ``run`` only sleeps between them. The next due time counts from the
tick, so a stalled loop does not catch up with a burst of writes. A failed write (disk full,
...) is logged and retried at the next due time: checkpoints only shorten recovery, they
never decide what is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from weir.log.errors import KafkaStorageError

if TYPE_CHECKING:
    from weir.replica_manager import ReplicaManager

__all__ = [
    "FLUSH_CHECK_INTERVAL_MS",
    "HW_CHECKPOINT_INTERVAL_MS",
    "LOG_START_CHECKPOINT_INTERVAL_MS",
    "PRODUCER_EXPIRATION_CHECK_INTERVAL_MS",
    "PRODUCER_EXPIRATION_MS",
    "RECOVERY_CHECKPOINT_INTERVAL_MS",
    "Checkpointer",
]

log = logging.getLogger("weir.broker")

# Kafka's defaults of the periods.
HW_CHECKPOINT_INTERVAL_MS = 5_000  # replica.high.watermark.checkpoint.interval.ms
RECOVERY_CHECKPOINT_INTERVAL_MS = 60_000  # log.flush.offset.checkpoint.interval.ms
LOG_START_CHECKPOINT_INTERVAL_MS = 60_000  # log.flush.start.offset.checkpoint.interval.ms
FLUSH_CHECK_INTERVAL_MS = 2**63 - 1  # log.flush.scheduler.interval.ms
PRODUCER_EXPIRATION_CHECK_INTERVAL_MS = 600_000  # producer.id.expiration.check.interval.ms
PRODUCER_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms


@dataclass(slots=True)
class _Schedule:
    """A period and the next time it is due (None: not periodic)."""

    interval_ms: int
    next_ms: int | None

    @classmethod
    def starting(cls, now_ms: int, interval_ms: int) -> _Schedule:
        return cls(interval_ms, now_ms + interval_ms if interval_ms > 0 else None)

    def due(self, now_ms: int) -> bool:
        return self.next_ms is not None and now_ms >= self.next_ms

    def restart(self, now_ms: int) -> None:
        if self.next_ms is not None:
            self.next_ms = now_ms + self.interval_ms


class Checkpointer:
    """HW checkpoints, flush with recovery-point checkpoints, log-start checkpoints, the
    flush.ms flusher and the producer expiration check."""

    def __init__(
        self,
        replicas: ReplicaManager,
        *,
        time_ms: Callable[[], int],
        high_watermark_interval_ms: int = HW_CHECKPOINT_INTERVAL_MS,
        recovery_interval_ms: int = RECOVERY_CHECKPOINT_INTERVAL_MS,
        log_start_interval_ms: int = LOG_START_CHECKPOINT_INTERVAL_MS,
        flush_check_interval_ms: int = FLUSH_CHECK_INTERVAL_MS,
        producer_expiration_check_interval_ms: int = PRODUCER_EXPIRATION_CHECK_INTERVAL_MS,
        producer_expiration_ms: Callable[[], int] = lambda: PRODUCER_EXPIRATION_MS,
    ) -> None:
        self._replicas = replicas
        self._time_ms = time_ms
        self._producer_expiration_ms = producer_expiration_ms
        now = time_ms()
        self._hw = _Schedule.starting(now, high_watermark_interval_ms)
        self._recovery = _Schedule.starting(now, recovery_interval_ms)
        self._log_starts = _Schedule.starting(now, log_start_interval_ms)
        self._flusher = _Schedule.starting(now, flush_check_interval_ms)
        self._producers = _Schedule.starting(now, producer_expiration_check_interval_ms)

    def next_due_ms(self) -> int | None:
        """When the next task is due, on the checkpointer's clock (None: nothing periodic)."""
        schedules = (self._hw, self._recovery, self._log_starts, self._flusher, self._producers)
        return min((s.next_ms for s in schedules if s.next_ms is not None), default=None)

    async def run(self) -> None:
        while (due := self.next_due_ms()) is not None:
            await asyncio.sleep(max(0, due - self._time_ms()) / 1000)
            self.tick(self._time_ms())

    def tick(self, now_ms: int) -> None:
        """Run what is due at ``now_ms``."""
        if self._producers.due(now_ms):
            self._producers.restart(now_ms)
            self._expire_producers()
        if self._flusher.due(now_ms):
            self._flusher.restart(now_ms)
            self._flush_due_logs()
        if self._recovery.due(now_ms):
            self._recovery.restart(now_ms)
            self._hw.restart(now_ms)  # the full checkpoint writes the HWs too
            self._guarded(lambda: self._replicas.checkpoint(flush=True, log_starts=False))
        elif self._hw.due(now_ms):
            self._hw.restart(now_ms)
            self._guarded(self._replicas.checkpoint_high_watermarks)
        if self._log_starts.due(now_ms):
            self._log_starts.restart(now_ms)
            self._guarded(self._replicas.checkpoint_log_starts)

    def _expire_producers(self) -> None:
        max_age_ms = self._producer_expiration_ms()
        for partition in self._replicas.partitions():
            log_ = partition.log
            log_.producer_state.remove_expired_producers(log_.time_ms(), max_age_ms)

    def _flush_due_logs(self) -> None:
        for partition in list(self._replicas.partitions()):
            # One failing disk must not keep the other logs unflushed; the failed
            # partition is offline now and the replica manager logged why.
            with contextlib.suppress(KafkaStorageError):
                partition.flush(only_if_due=True)

    @staticmethod
    def _guarded(task: Callable[[], None]) -> None:
        try:
            task()
        except OSError as exc:
            log.error("checkpoint failed: %s", exc)

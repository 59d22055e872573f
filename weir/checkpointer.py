"""Periodic checkpoints of the local logs, as Kafka's ReplicaManager schedules them.

Every 5 s the high watermarks are written (``replication-offset-checkpoint``); every 60 s
the logs are flushed and the recovery points written too, so a restart recovers only what
was appended since. A failed write (disk full, ...) is logged and retried at the next tick:
checkpoints only shorten recovery, they never decide what is committed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from weir.replica_manager import ReplicaManager

__all__ = ["CHECKPOINT_INTERVAL_S", "HW_CHECKPOINT_INTERVAL_S", "Checkpointer"]

log = logging.getLogger("weir.broker")

CHECKPOINT_INTERVAL_S = 60.0
HW_CHECKPOINT_INTERVAL_S = 5.0


class Checkpointer:
    """HW checkpoint every 5 s; flush and recovery-point checkpoint every 60 s."""

    def __init__(self, replicas: ReplicaManager) -> None:
        self._replicas = replicas
        self._elapsed = 0.0

    async def run(self) -> None:
        while True:
            await asyncio.sleep(HW_CHECKPOINT_INTERVAL_S)
            self.tick(HW_CHECKPOINT_INTERVAL_S)

    def tick(self, elapsed_s: float) -> None:
        """``elapsed_s`` more seconds passed: write what is due."""
        self._elapsed += elapsed_s
        try:
            if self._elapsed >= CHECKPOINT_INTERVAL_S:
                self._elapsed = 0.0
                self._replicas.checkpoint(flush=True)
            else:
                self._replicas.checkpoint_high_watermarks()
        except OSError as exc:
            log.error("checkpoint failed: %s", exc)

"""A partition replica hosted by this broker: its log plus the leader-side offsets.

Theory of operation
-------------------
The ``Log`` knows offsets and files; ``Partition`` adds what replication gives meaning to:
the leader epoch, the replica set, the ISR and the high watermark (HW). Consumers never read
at or above the HW. With a single in-sync replica the HW follows the log end offset (LEO) on
every append; the cluster issue feeds follower LEOs in and computes HW = min LEO over the ISR.

The log checks appends against the producer state (idempotent producers): a duplicate
batch is answered with its original offsets and not written again.

Waiters (parked Fetch requests) register a callback; every append calls them with the number
of bytes added, so a Fetch completes as soon as ``min_bytes`` is reached.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from brokers.log.log import AppendResult, FileSlice, Log, LogConfig
from brokers.protocol.records import BatchHeader

__all__ = ["AppendOutcome", "Partition"]


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """Offsets of an append; ``duplicate`` when an idempotent retry was recognised."""

    base_offset: int
    last_offset: int
    log_append_time: int
    duplicate: bool = False


class Partition:
    """One local replica of ``topic``-``index``."""

    def __init__(
        self,
        *,
        topic: str,
        index: int,
        topic_id: str,
        log: Log,
        leader_epoch: int,
        is_leader: bool,
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.leader_epoch = leader_epoch
        self.is_leader = is_leader
        self.high_watermark = log.log_end_offset
        self._waiters: set[Callable[[int], None]] = set()

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch})"

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def update_config(self, config: LogConfig) -> None:
        self.log.update_config(config)

    def append(self, payload: bytearray, batches: list[tuple[int, BatchHeader]]) -> AppendOutcome:
        """Append a produce payload as leader; raises the log's producer-state errors."""
        result: AppendResult = self.log.append(payload, batches, leader_epoch=self.leader_epoch)
        if result.duplicate:
            return AppendOutcome(
                base_offset=result.base_offset,
                last_offset=result.last_offset,
                log_append_time=result.log_append_time,
                duplicate=True,
            )
        # Single-replica ISR: everything appended is committed at once.
        self.high_watermark = self.log.log_end_offset
        added = len(payload)
        for waiter in list(self._waiters):
            waiter(added)
        return AppendOutcome(
            base_offset=result.base_offset,
            last_offset=result.last_offset,
            log_append_time=result.log_append_time,
        )

    def read(self, offset: int, max_bytes: int, *, committed_only: bool = True) -> list[FileSlice]:
        max_offset = self.high_watermark if committed_only else None
        return self.log.read(offset, max_bytes, max_offset=max_offset)

    def add_waiter(self, waiter: Callable[[int], None]) -> None:
        self._waiters.add(waiter)

    def remove_waiter(self, waiter: Callable[[int], None]) -> None:
        self._waiters.discard(waiter)

    def delete_records_before(self, offset: int) -> int:
        return self.log.delete_records_before(offset)

    def close(self) -> None:
        self.log.close()

    def delete(self) -> None:
        self.log.delete()

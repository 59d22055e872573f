"""The leader-epoch cache of a partition: which leader epoch starts at which offset.

Disk format
-----------
``leader-epoch-checkpoint`` in the partition directory, a Kafka checkpoint file (see
``checkpoint``) of ``epoch startOffset`` lines, rewritten atomically on every change::

    0
    2
    0 0
    3 1500

Invariants
----------
* Entries strictly increase in both epoch and start offset. Assigning an entry that breaks
  that removes the entries at its end that conflict, as Kafka does, so the cache always
  describes one linear history.
* Start offsets never exceed the log end offset: the log truncates the cache when it
  truncates itself, and from the start when the log start offset moves.

``end_offset_for`` implements KIP-101/KIP-279 OffsetForLeaderEpoch: a follower that was
led through ``epoch`` learns where that epoch ended on the leader and truncates there.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from weir.log.checkpoint import read_checkpoint, write_checkpoint
from weir.log.errors import CheckpointError

__all__ = [
    "LEADER_EPOCH_CHECKPOINT_FILE",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochEntry",
    "LeaderEpochCache",
]

LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """Epoch -> start offset for one partition, persisted on every change."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / LEADER_EPOCH_CHECKPOINT_FILE
        self._entries: list[EpochEntry] = []
        for epoch_text, offset_text in read_checkpoint(self.path, fields=2):
            try:
                entry = EpochEntry(int(epoch_text), int(offset_text))
            except ValueError:
                raise CheckpointError(
                    f"checkpoint file {self.path}: bad entry {epoch_text} {offset_text}"
                ) from None
            if self._entries and (
                entry.epoch <= self._entries[-1].epoch
                or entry.start_offset < self._entries[-1].start_offset
            ):
                raise CheckpointError(
                    f"checkpoint file {self.path}: entry {entry.epoch} {entry.start_offset} "
                    f"is not above {self._entries[-1].epoch} {self._entries[-1].start_offset}"
                )
            self._entries.append(entry)

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self._entries})"

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return tuple(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def _flush(self) -> None:
        write_checkpoint(self.path, [f"{e.epoch} {e.start_offset}" for e in self._entries])

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op if already known)."""
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {epoch} {start_offset}")
        latest = self.latest_entry
        if latest is not None and latest.epoch == epoch and latest.start_offset <= start_offset:
            return
        while self._entries and (
            self._entries[-1].epoch >= epoch or self._entries[-1].start_offset >= start_offset
        ):
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` for OffsetForLeaderEpoch, with Kafka's semantics.

        * ``epoch`` is the latest epoch: ``(epoch, log_end_offset)``.
        * otherwise the largest known epoch <= ``epoch`` and the start offset of the first
          epoch after it; if ``epoch`` is below every known epoch, ``(epoch, start offset of
          the first known epoch)``.
        * ``(-1, -1)`` for an undefined epoch or one above every known epoch.
        """
        if epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._entries[-1].epoch:
            return epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, epoch)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return epoch, self._entries[0].start_offset
        return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in, if known."""
        starts = [e.start_offset for e in self._entries]
        index = bisect.bisect_right(starts, offset)
        return self._entries[index - 1].epoch if index else None

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated there)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
        self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Forget history below ``start_offset``; the epoch in force there now starts there."""
        removed: EpochEntry | None = None
        while self._entries and self._entries[0].start_offset <= start_offset:
            removed = self._entries.pop(0)
        if removed is None:
            return
        self._entries.insert(0, EpochEntry(removed.epoch, start_offset))
        self._flush()

    def clear(self) -> None:
        """Forget every entry (the log was emptied)."""
        self._entries.clear()
        self._flush()

"""Exact translation of a source group offset to the target, from the offset-syncs topic.

Pure: ``OffsetSync`` records in, ``Translation`` values out; no clients, no clock. The
checkpoint task feeds a ``SyncHistory`` with the records of ``mm2-offset-syncs.<...>.internal``
in the order it reads them and asks it for each committed group offset.

What the writer guarantees (``replicate.OffsetSyncPolicy``)
-----------------------------------------------------------
Besides MM2's syncs, the replicator writes both ends of every *break*: every step between two
consecutive acknowledged records that is not (+1 source, +1 target). So, within one
replicator lifetime, two consecutive syncs ``a`` and ``b`` of a partition are either the two
ends of a linear run -- every source offset from ``a.up`` to ``b.up`` was copied, to
``a.down + (offset - a.up)`` -- or the two ends of a break, with no record between them. The
first tells itself by its distances (``b.up - a.up == b.down - a.down``); a break whose two
distances happen to be equal is indistinguishable and is read as a run, see below.

The rule
--------
A committed offset ``c`` is the next record the group reads. Its exact translation is the
target offset of the first mirrored record with a source offset ``>= c``: a consumer that
starts there on the target reads exactly what the group had not read yet. With ``lo`` the sync
with the greatest ``up < c`` and ``hi`` the one with the least ``up >= c``:

- ``hi.up == c``: ``hi.down``;
- ``lo``..``hi`` a linear run: ``lo.down + (c - lo.up)``;
- ``lo``..``hi`` a break: ``hi.down`` (nothing was copied between them);
- ``c == last.up + 1``: ``last.down + 1``, exact (the next copy lands there);
- ``c > last.up + 1``: ``last.down + 1`` with ``exact=False``: the mirror has not passed ``c``
  (as far as the syncs say), and a translation never points past what was copied;
- ``c`` below the oldest sync kept: ``None``. What came before is unknown (the offset-syncs
  topic is compacted, or the mirror started later); the caller says so instead of guessing.

``end_offset`` (the target partition's log end) caps every answer: a translation is never
beyond the target's end (MM2's KAFKA-12468), and a capped one is not exact.

Restarts and rewinds
--------------------
A sync whose source offset is lower than or equal to one already seen means a new lifetime
re-copied from there (a mirror restarted from an older commit, or its group was reset): the
history from that source offset on is replaced, since the newer copies are what a failed-over
consumer should read. The end of the old run just below it is kept (a synthesised, true pair
when the old syncs around it were a linear run), and the step into the new lifetime is always
a break. A sync equal to the last one is a re-send (a break's first end can repeat the delayed
sync of the previous commit) and changes nothing.

Where exactness ends
--------------------
Two cases are ambiguous to any reader of MM2-format syncs, because a sync carries no lifetime:
a break with equal distances (a source gap of k records next to k foreign records on the
target, or a restart where the previous lifetime's uncommitted copies number exactly as many
as the source offsets skipped at the restart point). The rule then reads a run and points into
the foreign or duplicate records between the two syncs; a consumer starting there still
reads no record before ``c`` and skips none after it -- it only sees those foreign records, or
the mirror's own crash duplicates, which every target consumer sees anyway. The property tests
check exactly this on random mirror histories, and strict equality with the brute-force answer
when no foreign writes or uncommitted copies exist.

Memory
------
Interior syncs of a linear run carry no information (the run's ends give the same answers), so
``PartitionHistory`` drops them as it goes: it keeps the ends of runs and breaks, at most
``max_syncs`` per partition (the oldest go first; offsets before them then translate to
``None``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass

from weir.mirror.formats import OffsetSync

__all__ = ["MAX_SYNCS", "PartitionHistory", "SyncHistory", "Translation"]

MAX_SYNCS = 10_000


@dataclass(frozen=True, slots=True)
class Translation:
    """A committed source offset as a target offset; ``exact`` False when the mirror has not
    copied up to it yet (or the target is shorter than the syncs say)."""

    downstream_offset: int
    exact: bool


class PartitionHistory:
    """The syncs of one source partition, source offsets strictly increasing."""

    __slots__ = ("_down", "_linear", "_up", "max_syncs")

    def __init__(self, max_syncs: int = MAX_SYNCS) -> None:
        if max_syncs < 2:
            raise ValueError(f"max_syncs must be at least 2, got {max_syncs}")
        self.max_syncs = max_syncs
        self._up: list[int] = []
        self._down: list[int] = []
        # _linear[i]: syncs i-1 and i are the two ends of a linear run (False for i == 0).
        self._linear: list[bool] = []

    def __len__(self) -> int:
        return len(self._up)

    def pairs(self) -> list[tuple[int, int]]:
        """The (source, target) pairs kept, oldest first."""
        return list(zip(self._up, self._down, strict=True))

    def add(self, upstream: int, downstream: int) -> None:
        """Take the next sync read from the offset-syncs topic."""
        if upstream < 0 or downstream < 0:
            raise ValueError(
                f"an offset sync has non-negative offsets, got {upstream}:{downstream}"
            )
        if self._up and upstream <= self._up[-1]:
            if (upstream, downstream) == (self._up[-1], self._down[-1]):
                return  # a re-send
            self._rewind(upstream, downstream)
            return
        linear = bool(self._up) and upstream - self._up[-1] == downstream - self._down[-1]
        if linear and len(self._up) >= 2 and self._linear[-1]:
            # The last sync is inside a run that goes on: its end moves, nothing is lost.
            self._up[-1], self._down[-1] = upstream, downstream
            return
        self._append(upstream, downstream, linear)

    def _rewind(self, upstream: int, downstream: int) -> None:
        i = bisect_left(self._up, upstream)  # the first sync at or after the new lifetime
        if self._up[i] == upstream and self._down[i] == downstream:
            del self._up[i + 1 :], self._down[i + 1 :], self._linear[i + 1 :]
            return  # the same copy again: forget what came after it
        end_of_old: tuple[int, int] | None = None
        if i > 0 and self._linear[i] and upstream - 1 > self._up[i - 1]:
            lo = i - 1
            end_of_old = (upstream - 1, self._down[lo] + (upstream - 1 - self._up[lo]))
        del self._up[i:], self._down[i:], self._linear[i:]
        if end_of_old is not None:
            self._append(*end_of_old, linear=True)
        self._append(upstream, downstream, linear=False)

    def _append(self, upstream: int, downstream: int, linear: bool) -> None:
        self._up.append(upstream)
        self._down.append(downstream)
        self._linear.append(linear)
        if len(self._up) > self.max_syncs:
            del self._up[0], self._down[0], self._linear[0]
            self._linear[0] = False

    def translate(
        self, committed_offset: int, *, end_offset: int | None = None
    ) -> Translation | None:
        """The target offset for ``committed_offset`` (see module docstring), or None when it
        lies before the oldest sync kept."""
        c = committed_offset
        if not self._up or c < self._up[0]:
            return None
        if c > self._up[-1]:
            result = Translation(self._down[-1] + 1, exact=c == self._up[-1] + 1)
        else:
            i = bisect_left(self._up, c)
            if self._up[i] == c or not self._linear[i]:
                result = Translation(self._down[i], exact=True)
            else:
                result = Translation(self._down[i - 1] + (c - self._up[i - 1]), exact=True)
        if end_offset is not None and result.downstream_offset > end_offset:
            return Translation(max(end_offset, 0), exact=False)
        return result


class SyncHistory:
    """``PartitionHistory`` per source (topic, partition), fed in offset-syncs topic order."""

    __slots__ = ("_partitions", "max_syncs")

    def __init__(self, max_syncs: int = MAX_SYNCS) -> None:
        self.max_syncs = max_syncs
        self._partitions: dict[tuple[str, int], PartitionHistory] = {}

    def __len__(self) -> int:
        return len(self._partitions)

    def add(self, sync: OffsetSync) -> None:
        """Take the next sync read from the offset-syncs topic."""
        key = (sync.topic, sync.partition)
        history = self._partitions.get(key)
        if history is None:
            history = self._partitions[key] = PartitionHistory(self.max_syncs)
        history.add(sync.upstream_offset, sync.downstream_offset)

    def add_all(self, syncs: Iterable[OffsetSync]) -> None:
        for sync in syncs:
            self.add(sync)

    def clear(self) -> None:
        """Forget everything (the reader starts again from the beginning of the topic)."""
        self._partitions.clear()

    def partition(self, topic: str, partition: int) -> PartitionHistory | None:
        return self._partitions.get((topic, partition))

    def translate(
        self, topic: str, partition: int, committed_offset: int, *, end_offset: int | None = None
    ) -> Translation | None:
        """The target offset of a group's committed offset on source ``topic``/``partition``;
        None when no sync covers it."""
        history = self._partitions.get((topic, partition))
        if history is None:
            return None
        return history.translate(committed_offset, end_offset=end_offset)

"""Burrow-style consumer status: pure evaluation of a partition's recent commits.

Theory of operation
-------------------
LinkedIn's Burrow judges a consumer without lag thresholds. For every partition a group
consumes it keeps a sliding window of the last N offset commits (default 10), each with the
committed offset, the lag at that moment (high watermark - committed offset) and the commit's
time. The partition's status comes from the shape of that window plus the lag right now:

1. **OK** when the current lag is 0: a consumer that is caught up is never in trouble.
2. **STOP** when the current lag is > 0 and the time since the window's newest commit is
   longer than the window's own span (newest - oldest commit time): the consumer stopped
   committing altogether. This is checked before rule 3 because the window may be old.
3. **OK** when any commit in the window had zero lag: the consumer caught up recently, so lag
   now is a burst it is working through.
4. **REWIND** when a commit in the window is lower than the commit before it: the offsets
   went backwards (a reset, or a consumer replaying).
5. **STALL** when every commit in the window has the same offset: commits keep arriving but
   the consumer does not move (stuck on a message, or committing without consuming).
6. **WARN** when the offsets advance but the lag never drops from one commit to the next:
   the consumer is alive but slower than the producers, falling behind.
7. otherwise **OK**.

A window is *complete* once it holds N commits; before that the status is still computed
(Burrow does the same) but callers may choose to trust it less. The group's status is the
worst of its partitions, where STOP, STALL and REWIND make the group **ERR** and WARN makes it
WARN — Burrow's mapping. Commits closer together than ``min_distance_ms`` replace the
window's newest entry instead of pushing a new one, so a consumer committing many times a
second does not shrink the window's span to nothing (Burrow's ``min-distance``).

Everything here takes ``now`` (milliseconds) from the caller; nothing reads a clock, so tests
drive the rules with a fake one.
"""

from __future__ import annotations

import enum
import itertools
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MIN_DISTANCE_MS",
    "DEFAULT_WINDOW",
    "Commit",
    "GroupStatus",
    "PartitionEvaluation",
    "PartitionStatus",
    "Window",
    "evaluate_group",
    "evaluate_partition",
]

DEFAULT_WINDOW = 10
DEFAULT_MIN_DISTANCE_MS = 1_000


class _Status(enum.IntEnum):
    """A status ordered by severity (higher is worse) that prints as its name, as Burrow's
    JSON and the dashboard show it."""

    def __str__(self) -> str:
        return self.name


class PartitionStatus(_Status):
    """A partition's status; higher is worse (the order Burrow uses)."""

    OK = 1
    WARN = 2
    STOP = 4
    STALL = 5
    REWIND = 6


class GroupStatus(_Status):
    """A group's status: the worst partition, STOP/STALL/REWIND counting as ERR."""

    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3


@dataclass(frozen=True, slots=True)
class Commit:
    """One observed commit: the offset, the lag at that moment, and when (ms)."""

    offset: int
    lag: int
    timestamp_ms: int


class Window:
    """The last ``size`` commits of one partition, oldest first."""

    __slots__ = ("_commits", "min_distance_ms", "size")

    def __init__(
        self, size: int = DEFAULT_WINDOW, *, min_distance_ms: int = DEFAULT_MIN_DISTANCE_MS
    ) -> None:
        if size < 2:
            raise ValueError(f"a window needs at least 2 commits, got {size}")
        self.size = size
        self.min_distance_ms = min_distance_ms
        self._commits: deque[Commit] = deque(maxlen=size)

    @property
    def commits(self) -> tuple[Commit, ...]:
        return tuple(self._commits)

    @property
    def complete(self) -> bool:
        return len(self._commits) == self.size

    @property
    def last(self) -> Commit | None:
        return self._commits[-1] if self._commits else None

    def add(self, commit: Commit) -> None:
        """Record a commit; one older than the newest is ignored (it arrived late)."""
        last = self.last
        if last is not None:
            if commit.timestamp_ms < last.timestamp_ms:
                return
            if commit.timestamp_ms - last.timestamp_ms < self.min_distance_ms:
                self._commits[-1] = commit
                return
        self._commits.append(commit)


@dataclass(frozen=True, slots=True)
class PartitionEvaluation:
    status: PartitionStatus
    complete: bool


def evaluate_partition(
    commits: Iterable[Commit], *, current_lag: int, now_ms: int, window_size: int = DEFAULT_WINDOW
) -> PartitionEvaluation:
    """The status of a partition from its window (oldest first) and its lag at ``now_ms``."""
    window = list(commits)
    complete = len(window) >= window_size
    if not window or current_lag <= 0:
        return PartitionEvaluation(PartitionStatus.OK, complete)
    if _stopped(window, now_ms):
        return PartitionEvaluation(PartitionStatus.STOP, complete)
    if all(c.lag > 0 for c in window):
        if _rewound(window):
            return PartitionEvaluation(PartitionStatus.REWIND, complete)
        if len(window) > 1 and _stalled(window):
            return PartitionEvaluation(PartitionStatus.STALL, complete)
        if len(window) > 1 and _lag_increasing(window):
            return PartitionEvaluation(PartitionStatus.WARN, complete)
    return PartitionEvaluation(PartitionStatus.OK, complete)


def evaluate_group(statuses: Iterable[PartitionStatus]) -> GroupStatus:
    """Burrow's group status: ERR if any partition is STOP/STALL/REWIND, else the worst."""
    worst = GroupStatus.OK
    for status in statuses:
        if status >= PartitionStatus.STOP:
            return GroupStatus.ERR
        if status == PartitionStatus.WARN:
            worst = GroupStatus.WARN
    return worst


def _stopped(window: list[Commit], now_ms: int) -> bool:
    first, last = window[0], window[-1]
    return now_ms - last.timestamp_ms > last.timestamp_ms - first.timestamp_ms


def _rewound(window: list[Commit]) -> bool:
    return any(b.offset < a.offset for a, b in itertools.pairwise(window))


def _stalled(window: list[Commit]) -> bool:
    return all(c.offset == window[0].offset for c in window)


def _lag_increasing(window: list[Commit]) -> bool:
    # Burrow's rule: offsets move (not stalled) and the lag never decreases between commits.
    return all(b.lag >= a.lag for a, b in itertools.pairwise(window))

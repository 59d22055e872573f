"""A tiny keyed timer table: Kafka's coordinator ``timer.schedule(key, ...)`` without threads.

Theory of operation
-------------------
Each timer has a key (scheduling the same key again replaces it, as Kafka's timer does), an
absolute deadline in the caller's clock and a payload saying what to do. Nothing fires on its
own: ``pop_due(now_ms)`` hands back the earliest due timer (ties in scheduling order) and the
owner acts on it, so tests drive time with a fake clock and the asyncio layer sleeps until
``next_deadline()``.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["Timers"]

P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class _Entry(Generic[P]):
    deadline_ms: int
    seq: int
    payload: P


class Timers(Generic[P]):
    """Deadlines by key."""

    __slots__ = ("_entries", "_seq")

    def __init__(self) -> None:
        self._entries: dict[Hashable, _Entry[P]] = {}
        self._seq = 0

    def schedule(self, key: Hashable, deadline_ms: int, payload: P) -> None:
        self._seq += 1
        self._entries[key] = _Entry(deadline_ms, self._seq, payload)

    def cancel(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._entries.get(key)
        return None if entry is None else entry.deadline_ms

    def next_deadline(self) -> int | None:
        if not self._entries:
            return None
        return min(entry.deadline_ms for entry in self._entries.values())

    def pop_due(self, now_ms: int) -> tuple[Hashable, P] | None:
        due = [
            (e.deadline_ms, e.seq, k) for k, e in self._entries.items() if e.deadline_ms <= now_ms
        ]
        if not due:
            return None
        _, _, key = min(due, key=lambda item: (item[0], item[1]))
        return key, self._entries.pop(key).payload

    def clear(self) -> None:
        self._entries.clear()

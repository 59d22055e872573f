"""What one broker process holds right now: memory, descriptors, tasks, producer ids.

These are the figures that must stay flat while a broker runs for days (issue 16's soak):
resident memory, open file descriptors, live asyncio tasks and the idempotent producer ids
remembered across its partitions (bounded by ``producer.id.expiration.ms``). They are read
from ``/proc/self`` (Linux) once a second by the state publisher and travel in the broker's
metrics snapshot, so ``/metrics`` and ``benchmarks/soak.py`` read them without touching the
broker process. Off Linux the ``/proc`` figures are absent rather than wrong.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from typing import Any

__all__ = ["process_stats"]

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return None


def _open_fds() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return None


def process_stats(partitions: Iterable[Any]) -> dict[str, int]:
    """RSS, open fds, asyncio tasks and remembered producer ids (``partitions``: the local
    replicas, each with a ``log.producer_state``). Call from the event loop."""
    stats = {
        "asyncio_tasks": len(asyncio.all_tasks()),
        "producer_ids": sum(len(p.log.producer_state.producers) for p in partitions),
    }
    for name, value in (("rss_bytes", _rss_bytes()), ("open_fds", _open_fds())):
        if value is not None:
            stats[name] = value
    return stats

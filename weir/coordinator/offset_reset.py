"""Where ``--reset-offsets`` moves a partition, as Kafka's ConsumerGroupCommand decides it.

Pure: the caller looks up the partition's earliest and latest offsets (and, for a time-based
reset, the offset ListOffsets found for the timestamp). Shared by ``manage.py
consumer-groups --reset-offsets`` and the ``/api/groups/<group>/reset-offsets/`` service.
"""

from __future__ import annotations

__all__ = ["STRATEGIES", "reset_target"]

STRATEGIES = ("earliest", "latest", "datetime", "offset", "shift", "by-duration")


def reset_target(
    strategy: str,
    *,
    low: int,
    high: int,
    current: int | None = None,
    amount: int = 0,
    found: int | None = None,
) -> int:
    """The new committed offset, clamped to the log's ``[low, high]``.

    ``current`` is the group's committed offset (None if it has none; ``shift`` then starts
    from ``low``), ``amount`` the ``offset``/``shift`` value, ``found`` the offset ListOffsets
    gave for a ``datetime``/``by-duration`` timestamp (negative or None: past the end, so
    ``high``).
    """
    if strategy == "earliest":
        offset = low
    elif strategy == "latest":
        offset = high
    elif strategy == "offset":
        offset = amount
    elif strategy == "shift":
        offset = (current if current is not None else low) + amount
    elif strategy in ("datetime", "by-duration"):
        offset = found if found is not None and found >= 0 else high
    else:
        raise ValueError(f"unknown reset strategy {strategy!r}")
    return min(max(offset, low), high)

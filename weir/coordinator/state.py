"""The classic group's five states and the transitions between them, as a table.

Theory of operation
-------------------
Kafka's ``ClassicGroupState``: each state lists the states it may be entered from, and
``Group`` refuses any other move (a bug, never a client's fault). ``value`` is the name
Kafka prints in DescribeGroups and ListGroups.

::

    Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
      ▲                   ▲    │                                      │ leader's assignment
      │                   │    └──no member left──▶ Empty             ▼ persisted
      │                   └────── member joins, leaves, expires ── Stable
    (any) ──unload / delete──▶ Dead
"""

from __future__ import annotations

import enum
from types import MappingProxyType

__all__ = ["VALID_PREVIOUS_STATES", "GroupState"]


class GroupState(enum.Enum):
    """A classic group's state; the value is Kafka's spelling."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_S = GroupState

VALID_PREVIOUS_STATES: MappingProxyType[GroupState, frozenset[GroupState]] = MappingProxyType(
    {
        _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
        _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
        _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
        _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
        _S.DEAD: frozenset(GroupState),
    }
)

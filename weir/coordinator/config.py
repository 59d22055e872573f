"""The coordinator's settings, with Kafka's names and defaults.

Theory of operation
-------------------
The pure coordinator never reads the broker config itself: the asyncio layer builds a
``GroupConfig`` and an ``OffsetConfig`` once (``from_broker_config``) and passes them in, so
tests can shrink every timeout without touching a broker. Each field names the Kafka setting
it mirrors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["GroupConfig", "OffsetConfig"]

_MS_PER_MINUTE = 60_000


class _ConfigSource(Protocol):
    def get(self, name: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """Group membership limits and timings."""

    min_session_timeout_ms: int = 6_000
    """``group.min.session.timeout.ms``"""
    max_session_timeout_ms: int = 1_800_000
    """``group.max.session.timeout.ms``"""
    initial_rebalance_delay_ms: int = 3_000
    """``group.initial.rebalance.delay.ms``"""
    max_size: int = 2**31 - 1
    """``group.max.size``"""
    new_member_join_timeout_ms: int = 300_000
    """Kafka's ``NewMemberJoinTimeoutMs``: how long a brand-new member's parked JoinGroup may
    wait before the member is dropped (it has no member id yet, so it cannot heartbeat)."""

    @classmethod
    def from_broker_config(cls, config: _ConfigSource) -> GroupConfig:
        """Read the ``group.*`` settings of a ``weir.config.BrokerConfig``."""
        return cls(
            min_session_timeout_ms=int(config.get("group.min.session.timeout.ms")),
            max_session_timeout_ms=int(config.get("group.max.session.timeout.ms")),
            initial_rebalance_delay_ms=int(config.get("group.initial.rebalance.delay.ms")),
            max_size=int(config.get("group.max.size")),
        )


@dataclass(frozen=True, slots=True)
class OffsetConfig:
    """Committed-offset limits and retention."""

    retention_ms: int = 10_080 * _MS_PER_MINUTE
    """``offsets.retention.minutes`` (7 days), in milliseconds."""
    metadata_max_bytes: int = 4_096
    """``offset.metadata.max.bytes``"""

    @classmethod
    def from_broker_config(cls, config: _ConfigSource) -> OffsetConfig:
        """Read the ``offsets.*`` settings of a ``weir.config.BrokerConfig``."""
        return cls(
            retention_ms=int(config.get("offsets.retention.minutes")) * _MS_PER_MINUTE,
            metadata_max_bytes=int(config.get("offset.metadata.max.bytes")),
        )

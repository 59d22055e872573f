"""The leader's replication throttle for reassignments (Kafka's leader throttle).

A follower fetch of a partition listed in the topic's
``leader.replication.throttled.replicas`` (for this leader) is throttled while that follower
is outside the ISR, i.e. still catching up; all throttled catch-up traffic of this broker
shares ``leader.replication.throttled.rate`` bytes per second (``ReplicationQuota``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from weir.replication.quota import ReplicationQuota, is_throttled

if TYPE_CHECKING:
    from weir.config import BrokerConfig, TopicConfig
    from weir.replica_manager import ReplicaManager

__all__ = ["ReplicationThrottle"]


@dataclass(eq=False, repr=False, kw_only=True)
class ReplicationThrottle:
    """Which follower fetches are throttled, and how many bytes they may take now."""

    broker_id: int
    replicas: ReplicaManager
    topic_config: Callable[[str], TopicConfig]
    config: Callable[[], BrokerConfig]
    now_s: Callable[[], float]
    _quota: ReplicationQuota = field(init=False, default_factory=ReplicationQuota)

    def throttled(self, topic: str, index: int, replica_id: int) -> bool:
        """Kafka's leader throttle: listed leader replica, follower not (yet) in sync."""
        local = self.replicas.get(topic, index)
        if local is None or replica_id in local.isr:
            return False
        config = self.topic_config(topic)
        return is_throttled(config.leader_replication_throttled_replicas, index, self.broker_id)

    def _rate(self) -> int:
        return int(self.config().get("leader.replication.throttled.rate"))

    def remaining(self) -> int:
        """Throttled catch-up bytes this leader may send now (negative: none)."""
        return self._quota.remaining(rate=self._rate(), now_s=self.now_s())

    def record(self, size: int) -> None:
        """Count ``size`` throttled bytes just sent."""
        self._quota.record(size, rate=self._rate(), now_s=self.now_s())

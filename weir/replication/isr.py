"""Leader-side replica tracking: follower LEOs, the ISR and the high watermark.

Theory of operation
-------------------
Pure logic, driven by the asyncio layer with ``now_ms``; tests drive it with a fake clock.

* Every follower Fetch carries the follower's log end offset (its ``fetch_offset``). The
  leader records it, and Kafka's caught-up rule decides ``last_caught_up_ms``: a follower is
  caught up at a fetch when its fetch offset reaches the leader's LEO *now*, or the LEO the
  leader had at the follower's *previous* fetch (so a steady stream of appends does not make
  a keeping-up follower look behind).
* HW = min LEO over the ISR (the leader's own LEO included). It never moves backwards while
  this broker leads.
* A follower whose ``last_caught_up_ms`` is older than ``replica.lag.time.max.ms`` is proposed
  for removal from the ISR; an out-of-sync follower whose LEO reached the HW (and the start
  of the leader's epoch, so it truncated its divergent tail first) is proposed for return.
  Proposals go to the controller (AlterPartition); the ISR here only changes when the
  controller's answer comes back through metadata, so leader and controller never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["FollowerState", "LeaderState"]


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower replica."""

    broker_id: int
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    leader_leo_at_last_fetch: int = -1


class LeaderState:
    """Replica bookkeeping of one partition while this broker leads it."""

    def __init__(
        self,
        *,
        broker_id: int,
        replicas: Iterable[int],
        isr: Iterable[int],
        leader_epoch: int,
        epoch_start_offset: int,
        high_watermark: int,
        now_ms: int,
    ) -> None:
        self.broker_id = broker_id
        self.leader_epoch = leader_epoch
        self.epoch_start_offset = epoch_start_offset
        self.isr: frozenset[int] = frozenset(isr) | {broker_id}
        self.high_watermark = high_watermark
        self.followers: dict[int, FollowerState] = {}
        self.update_replicas(replicas, now_ms=now_ms)

    def update_replicas(self, replicas: Iterable[int], *, now_ms: int) -> None:
        """Track exactly ``replicas`` (minus the leader); new ones start out of sync.

        Followers already in the ISR get the benefit of the doubt for one lag period.
        """
        wanted = set(replicas) - {self.broker_id}
        for broker_id in list(self.followers):
            if broker_id not in wanted:
                del self.followers[broker_id]
        for broker_id in wanted:
            if broker_id not in self.followers:
                self.followers[broker_id] = FollowerState(
                    broker_id=broker_id,
                    last_caught_up_ms=now_ms if broker_id in self.isr else 0,
                )

    def update_isr(self, isr: Iterable[int]) -> None:
        self.isr = frozenset(isr) | {self.broker_id}

    def on_follower_fetch(
        self, broker_id: int, *, fetch_offset: int, leader_leo: int, now_ms: int
    ) -> bool:
        """Record a follower's fetch; True when the HW moved (waiters should wake)."""
        follower = self.followers.get(broker_id)
        if follower is None:
            return False
        if fetch_offset >= leader_leo:
            follower.last_caught_up_ms = now_ms
        elif fetch_offset >= follower.leader_leo_at_last_fetch >= 0:
            # Caught up to what the leader had at the previous fetch: caught up *then*
            # (Kafka's Replica.updateFetchState), so a follower one slow round trip behind
            # forever still ages out of the ISR.
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch_offset
        follower.last_fetch_ms = now_ms
        follower.leader_leo_at_last_fetch = leader_leo
        return self.maybe_advance_hw(leader_leo)

    def maybe_advance_hw(self, leader_leo: int) -> bool:
        """HW = min LEO over the ISR; True when it advanced."""
        candidate = leader_leo
        for broker_id in self.isr:
            if broker_id == self.broker_id:
                continue
            follower = self.followers.get(broker_id)
            if follower is None or follower.log_end_offset < 0:
                # No fetch yet from an ISR member: the HW cannot pass what it may lack.
                return False
            candidate = min(candidate, follower.log_end_offset)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def out_of_sync(self, *, now_ms: int, lag_max_ms: int) -> set[int]:
        """ISR members that have not caught up within ``lag_max_ms``."""
        return {
            broker_id
            for broker_id in self.isr
            if broker_id != self.broker_id
            and (follower := self.followers.get(broker_id)) is not None
            and now_ms - follower.last_caught_up_ms > lag_max_ms
        }

    def caught_up_outside_isr(self, *, now_ms: int, lag_max_ms: int) -> set[int]:
        """Followers outside the ISR that may rejoin it: at the HW and past the start of this
        leader's epoch (KIP-101), and still fetching.

        A follower that stopped fetching (paused, partitioned) keeps the LEO of its last
        fetch, which still equals the HW when nothing new was written; it must not be let
        back in (by the periodic check, or after another follower's fetch) only to be shrunk
        out again, so it must have fetched within ``lag_max_ms``.
        """
        threshold = max(self.high_watermark, self.epoch_start_offset)
        return {
            broker_id
            for broker_id, follower in self.followers.items()
            if broker_id not in self.isr
            and follower.log_end_offset >= threshold
            and now_ms - follower.last_fetch_ms <= lag_max_ms
        }

    def proposed_isr(self, *, now_ms: int, lag_max_ms: int) -> frozenset[int]:
        """The ISR this leader would like: shrink the laggards, expand the caught-up that
        are still fetching."""
        shrink = self.out_of_sync(now_ms=now_ms, lag_max_ms=lag_max_ms)
        expand = self.caught_up_outside_isr(now_ms=now_ms, lag_max_ms=lag_max_ms)
        return (self.isr - shrink) | expand

"""ISR maintenance on the leader side: propose shrinks for laggards and expansions for
followers that caught up, as Kafka's ``Partition.maybeShrinkIsr``/``maybeExpandIsr`` do.

Theory of operation
-------------------
The leader never changes its ISR by itself; it proposes the new ISR to the controller and
waits for the new partition state to come back through metadata. While a proposal is in
flight (``Partition.isr_change_pending``) no other is made for that partition.

* Shrink: a loop every ``replica.lag.time.max.ms / 2`` (between 50 ms and 1 s) asks each led
  partition's ``LeaderState`` which replicas are still in sync.
* Expand: after each follower fetch the Fetch handler calls ``maybe_expand``; a follower
  outside the ISR that reached the high watermark may rejoin.

A proposal goes straight to the local controller when this broker holds the controller
lease, otherwise as AlterPartition over the controller channel. A rejected proposal clears
the pending flag after 0.5 s (the next check retries); an accepted one after 5 s, a timeout
that only matters when the metadata update carrying the new ISR is lost.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from weir.controller import IsrChangeRequest
from weir.loop_task import stop_tasks

if TYPE_CHECKING:
    from weir.config import BrokerConfig
    from weir.controller import Controller
    from weir.controller_channel import ControllerChannel
    from weir.controller_lease import ControllerLease
    from weir.partition import Partition
    from weir.replica_manager import ReplicaManager

__all__ = ["IsrManager"]

log = logging.getLogger("weir.broker")

# How long a proposal stays pending after the controller answered (see the docstring).
REJECTED_RETRY_S = 0.5
ACCEPTED_TIMEOUT_S = 5.0
# How long stop() waits for the proposals in flight to end.
STOP_TIMEOUT_S = 5.0


@dataclass(eq=False, repr=False, kw_only=True)
class IsrManager:
    """Proposes ISR changes for the partitions this broker leads."""

    broker_id: int
    replicas: ReplicaManager
    config: Callable[[], BrokerConfig]
    time_ms: Callable[[], int]
    lease: ControllerLease
    controller: Controller
    channel: ControllerChannel
    # AlterPartition proposals in flight (each waits for its answer, then a while).
    _sends: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    async def run(self) -> None:
        """Propose ISR shrinks for laggards, like Kafka's isr-expiration task."""
        while True:
            lag_max = int(self.config().get("replica.lag.time.max.ms"))
            await asyncio.sleep(min(max(lag_max / 2000, 0.05), 1.0))
            self.check_shrink(lag_max_ms=lag_max)

    def check_shrink(self, *, lag_max_ms: int) -> None:
        """One pass of the shrink check over every partition led here."""
        now = self.time_ms()
        for partition in list(self.replicas.partitions()):
            state = partition.leader_state
            if state is None or partition.isr_change_pending:
                continue
            proposed = state.proposed_isr(now_ms=now, lag_max_ms=lag_max_ms)
            if proposed != frozenset(partition.isr) | {self.broker_id}:
                self._propose(partition, proposed)

    def maybe_expand(self, partition: Partition) -> None:
        """After a follower fetch: a caught-up follower outside the ISR may rejoin."""
        state = partition.leader_state
        if state is None or partition.isr_change_pending:
            return
        joining = state.caught_up_outside_isr(
            now_ms=self.time_ms(), lag_max_ms=int(self.config().get("replica.lag.time.max.ms"))
        )
        if joining:
            self._propose(partition, frozenset(partition.isr) | joining)

    def _propose(self, partition: Partition, new_isr: frozenset[int]) -> None:
        partition.isr_change_pending = True
        ordered = tuple(r for r in partition.replicas if r in new_isr)
        task = asyncio.get_running_loop().create_task(self._send(partition, ordered))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def stop(self) -> None:
        """End the proposals in flight (shutdown); ``run`` is its owner's task to stop."""
        await stop_tasks(list(self._sends), STOP_TIMEOUT_S)

    async def _send(self, partition: Partition, new_isr: tuple[int, ...]) -> None:
        """AlterPartition to the controller (or straight to it when we are the controller)."""
        request = IsrChangeRequest(
            broker_id=self.broker_id,
            leader_epoch=partition.leader_epoch,
            partition_epoch=partition.partition_epoch,
            new_isr=new_isr,
        )
        log.info(
            "%s-%d: proposing ISR %s (was %s)",
            partition.topic,
            partition.index,
            list(new_isr),
            list(partition.isr),
        )
        error = ErrorCode.unknown_server_error
        try:
            epoch = self.lease.epoch
            if epoch is not None:
                error, _ = await self.controller.alter_isr(
                    epoch, partition.topic, partition.index, request
                )
            else:
                error = await self.channel.alter_partition(partition, request)
        except Exception as exc:
            log.warning("ISR change of %s-%d failed: %s", partition.topic, partition.index, exc)
        if error is not ErrorCode.none:
            log.info(
                "ISR change of %s-%d not applied: %s", partition.topic, partition.index, error.name
            )
            await asyncio.sleep(REJECTED_RETRY_S)
            partition.isr_change_pending = False
        else:
            # Cleared when the new partition state arrives through metadata; the timeout
            # covers a lost update.
            await asyncio.sleep(ACCEPTED_TIMEOUT_S)
            partition.isr_change_pending = False

"""The purgatory for writes that must be replicated: wait until the high watermark passes.

Produce requests with ``acks=all`` and the group coordinator's own appends both park here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

if TYPE_CHECKING:
    from weir.config import TopicConfig
    from weir.partition import Partition

__all__ = ["await_commit"]


async def await_commit(
    partition: Partition,
    epoch: int,
    required: int,
    timeout_s: float,
    *,
    topic_config: Callable[[str], TopicConfig],
) -> ErrorCode:
    """Park until the HW reaches ``required``, leadership is lost, or ``timeout_s`` passes.

    Each LEO/HW movement of the partition re-checks. Also used by the group coordinator,
    whose own appends are acks=all. ``topic_config`` gives ``min.insync.replicas`` as it is
    when the HW gets there (it may change while the write waits).
    """
    loop = asyncio.get_running_loop()
    done = loop.create_future()

    def check() -> None:
        if done.done():
            return
        if not partition.is_leader or partition.leader_epoch != epoch:
            done.set_result(ErrorCode.not_leader_or_follower)
        elif partition.high_watermark >= required:
            min_isr = topic_config(partition.topic).min_insync_replicas
            enough = len(partition.isr) >= min_isr
            done.set_result(
                ErrorCode.none if enough else ErrorCode.not_enough_replicas_after_append
            )

    partition.add_waiter(check)
    try:
        check()
        try:
            async with asyncio.timeout(timeout_s if timeout_s > 0 else 0.001):
                return await done
        except TimeoutError:
            return ErrorCode.request_timed_out
    finally:
        partition.remove_waiter(check)

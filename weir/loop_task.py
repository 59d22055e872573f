"""Background tasks that stop for sure: the one place for the rule of how to end them.

Why cancelling once is not enough
---------------------------------
On Python 3.11 ``asyncio.wait_for`` can swallow a cancellation: when the cancel lands just as
the awaited call completes, ``wait_for`` returns the result and the task goes on as if nothing
happened. redis-py 8 wraps every command in it (``socket_timeout``), so a loop that talks to
Redis, cancelled once, may carry on -- into its next sleep, its next command, and a reconnect
after the client was closed. Its owner then waits for it until its shutdown step times out.

The rule
--------
A loop checks a stop flag (``StopFlag``) at every iteration, and its owner stops it with
:func:`stop_tasks`: set the flag, cancel, and cancel again every few milliseconds until the
task has ended (each new cancel meets the task's next ``await``: a sleep or a read that is
still pending, where nothing can swallow it) or the time given is up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

__all__ = ["RECANCEL_INTERVAL_S", "StopFlag", "stop_tasks"]

# How long a cancelled task gets to end before it is cancelled again.
RECANCEL_INTERVAL_S = 0.01


class StopFlag:
    """A loop's ``while flag.running`` guard; ``stop()`` is set before the task is cancelled."""

    __slots__ = ("running",)

    def __init__(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False


async def stop_tasks(
    tasks: Iterable[asyncio.Task[Any]],
    timeout: float,
    *,
    flag: StopFlag | None = None,
) -> set[asyncio.Task[Any]]:
    """Cancel ``tasks`` until each has ended or ``timeout`` seconds passed; those still running.

    The calling task is never cancelled, even if it is among ``tasks``. What a task ended
    with (an exception) is left to its owner.
    """
    if flag is not None:
        flag.stop()
    current = asyncio.current_task()
    left = {task for task in tasks if task is not current and not task.done()}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while left:
        for task in left:
            task.cancel()
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        _, pending = await asyncio.wait(left, timeout=min(RECANCEL_INTERVAL_S, remaining))
        left = pending
    return left

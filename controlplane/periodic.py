"""Periodic control-plane work driven by ``manage.py monitor`` (one tick a second).

Apps register functions in their ``periodic`` module with :func:`every`; the monitor imports
every app's ``periodic`` module (``autodiscover``) and calls :func:`run_due` once a second.
A failing task is logged and retried at its next due time; it never stops the others.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.module_loading import autodiscover_modules

__all__ = ["PeriodicTask", "autodiscover", "every", "run_due", "tasks"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PeriodicTask:
    name: str
    interval_s: float
    function: Callable[[], None]
    next_due: float = field(default=0.0)


_TASKS: dict[str, PeriodicTask] = {}


def every(
    seconds: float, *, name: str | None = None
) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Decorator: run the function every ``seconds`` while the monitor runs."""

    def register(function: Callable[[], None]) -> Callable[[], None]:
        task_name = name or f"{function.__module__}.{function.__qualname__}"
        _TASKS[task_name] = PeriodicTask(task_name, seconds, function)
        return function

    return register


def tasks() -> list[PeriodicTask]:
    return list(_TASKS.values())


def autodiscover() -> None:
    """Import ``<app>.periodic`` for every installed app that has one."""
    autodiscover_modules("periodic")


def run_due(now: float | None = None) -> list[str]:
    """Run every task that is due at ``now`` (monotonic seconds); the names that ran."""
    current = time.monotonic() if now is None else now
    ran = []
    for task in list(_TASKS.values()):
        if current < task.next_due:
            continue
        task.next_due = current + task.interval_s
        try:
            task.function()
        except Exception:
            logger.exception("periodic task %s failed", task.name)
        ran.append(task.name)
    return ran

"""The one registry of the control plane's periodic work, and the two loops that run it.

Every periodic task is declared once, with :func:`every`, and says where it runs:

* ``RunsIn.MONITOR``: second-scale ticks that need a warm process (the rebalance executor's
  1 s tick, reassignment throttle cleanup, lag history upkeep). ``manage.py monitor`` imports
  every app's ``periodic`` module (:func:`autodiscover`) and calls :func:`run_due` once a
  second, after its lag tick (the lag monitor keeps Burrow windows in memory, so it is the
  loop itself, not a task). A failing task is logged and retried at its next due time; it
  never stops the others.
* ``RunsIn.BEAT``: the jobs Celery beat sends (retention, compaction, analytics). Their
  interval here is the default: :func:`controlplane.jobs.ensure_default_schedules` turns
  each into a django-celery-beat row for the task ``weir.job`` after ``migrate``, and from
  then on the operator edits the row (API, dashboard, admin); beat picks the change up
  without a restart. Their work is the job of that name (``controlplane.jobs``), so they
  declare no function.

Nothing else schedules work: a new periodic task is one ``every`` line in its app.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.module_loading import autodiscover_modules

__all__ = ["PeriodicTask", "RunsIn", "autodiscover", "every", "run_due", "tasks"]

logger = logging.getLogger(__name__)


class RunsIn(enum.StrEnum):
    """Which loop runs a periodic task."""

    MONITOR = "monitor"
    BEAT = "beat"


@dataclass(slots=True)
class PeriodicTask:
    """One declared task; ``next_due`` is the monitor loop's bookkeeping."""

    name: str
    interval_s: float
    runs_in: RunsIn
    function: Callable[[], None] | None = None
    next_due: float = field(default=0.0)


_TASKS: dict[str, PeriodicTask] = {}


def every(
    seconds: float, *, name: str | None = None, runs_in: RunsIn = RunsIn.MONITOR
) -> Callable[[Callable[[], None] | None], Callable[[], None] | None]:
    """Declare a periodic task: decorate the function the monitor runs every ``seconds``,
    or, for ``RunsIn.BEAT``, call the result with None (beat runs the job ``name``)."""

    def register(function: Callable[[], None] | None) -> Callable[[], None] | None:
        if function is None and (name is None or runs_in is RunsIn.MONITOR):
            raise ValueError("a monitor task needs a function, a beat job a name")
        task_name = name or f"{function.__module__}.{function.__qualname__}"  # type: ignore[union-attr]
        _TASKS[task_name] = PeriodicTask(task_name, seconds, runs_in, function)
        return function

    return register


def tasks(runs_in: RunsIn | None = None) -> list[PeriodicTask]:
    """Declared tasks (of one loop), in declaration order."""
    return [t for t in _TASKS.values() if runs_in is None or t.runs_in is runs_in]


def autodiscover() -> None:
    """Import ``<app>.periodic`` for every installed app that has one."""
    autodiscover_modules("periodic")


def run_due(now: float | None = None) -> list[str]:
    """Run every monitor task that is due at ``now`` (monotonic seconds); the names that ran."""
    current = time.monotonic() if now is None else now
    ran = []
    for task in tasks(RunsIn.MONITOR):
        if current < task.next_due or task.function is None:
            continue
        task.next_due = current + task.interval_s
        try:
            task.function()
        except Exception:
            logger.exception("periodic task %s failed", task.name)
        ran.append(task.name)
    return ran

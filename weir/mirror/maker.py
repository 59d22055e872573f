"""A ``mirror-maker`` process: every flow of one MM2 properties file, until told to stop.

``MirrorMaker(config)`` makes one ``worker.FlowWorker`` per flow the configuration gives this
process (``MirrorConfig.flows``: the enabled flows, and the heartbeat-only pairs MM2 also
runs; ``--clusters`` keeps those whose target it names) and runs each on its own thread.
Processes started with the same properties find each other through the clusters themselves,
as MM2's workers do through Connect: the replicators of a flow share the source consumer
group ``mirror-<src>-><dst>`` (partitions are split and a dead process's are taken over after
the group's session timeout), and one of them at a time is the flow's checkpoint leader. No
other coordination is needed, so any number of processes can be started or killed.

The process publishes each worker's ``status.FlowStatus`` every ``PUBLISH_INTERVAL_S`` to the
coordination Redis when it is given a ``StatusStore`` (the ``mirror-maker`` command passes
``WEIR_REDIS_URL``); a failing publish is logged once and retried, never fatal. On stop, the
workers finish their batch, commit what the target acknowledged, and their statuses are
removed.
"""

from __future__ import annotations

import logging
import threading

from weir.mirror.config import MirrorConfig
from weir.mirror.status import PUBLISH_INTERVAL_S, FlowStatus, StatusStore, new_process_id
from weir.mirror.worker import FlowWorker

__all__ = ["MirrorMaker"]

log = logging.getLogger("weir.mirror")

_STOP_TIMEOUT_S = 60.0


class MirrorMaker:
    """Runs the flows of ``config`` in this process (see the module docstring)."""

    def __init__(
        self,
        config: MirrorConfig,
        *,
        status_store: StatusStore | None = None,
        process_id: str | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.config = config
        self.process_id = process_id or new_process_id()
        self.stop = stop or threading.Event()
        self.status_store = status_store
        self.workers = [
            FlowWorker(config, flow, process_id=self.process_id, stop=self.stop)
            for flow in config.flows
        ]
        self._publish_failing = False

    def statuses(self) -> list[FlowStatus]:
        return [worker.snapshot() for worker in self.workers]

    def run(self) -> None:
        """Start every flow and publish statuses until ``stop`` is set; then stop the flows."""
        for worker in self.workers:
            log.info(
                "mirror %s: starting (%s)",
                worker.flow.name,
                "replication" if worker.flow.enabled else "heartbeats only",
            )
            worker.start()
        try:
            while not self.stop.wait(PUBLISH_INTERVAL_S):
                self.publish()
        finally:
            self.stop.set()
            for worker in self.workers:
                worker.join(_STOP_TIMEOUT_S)
            self._unpublish()

    def publish(self) -> None:
        if self.status_store is None:
            return
        try:
            for status in self.statuses():
                self.status_store.publish(status)
        except Exception as exc:  # observability only: the mirror goes on without it
            if not self._publish_failing:
                log.warning("mirror: cannot publish status (retrying each round): %s", exc)
            self._publish_failing = True
        else:
            if self._publish_failing:
                log.info("mirror: publishing status again")
            self._publish_failing = False

    def _unpublish(self) -> None:
        if self.status_store is None:
            return
        try:
            for status in self.statuses():
                self.status_store.remove(status)
        except Exception as exc:  # it expires on its own
            log.debug("mirror: removing status: %s", exc)

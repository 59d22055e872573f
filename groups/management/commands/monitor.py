"""``manage.py monitor``: the lag monitor and the periodic tasks, one tick a second.

    manage.py monitor [--interval 1.0] [--once] [--window 10] [--no-history]
                      [--history-interval 5] [--commit-interval-ms 5000]

Each tick computes every group's lag and status and publishes it (:class:`groups.monitor
.Monitor`), then runs the periodic tasks of the one registry (``controlplane.periodic``) that
run here (``RunsIn.MONITOR``: other apps' ``periodic`` modules, e.g. the rebalance executor;
Celery beat runs the rest). Errors are logged and the loop goes on,
so Redis or the brokers going away only pauses the updates. SIGTERM and Ctrl-C stop it
between ticks.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import close_old_connections

from controlplane import periodic
from controlplane.cluster import gateway
from groups.burrow import DEFAULT_WINDOW
from groups.monitor import DEFAULT_COMMIT_INTERVAL_MS, Monitor

log = logging.getLogger("weir.monitor")


class Command(BaseCommand):
    help = (
        "Compute consumer lag and status every second, push it to websockets, run periodic tasks."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--interval", type=float, default=1.0, help="seconds between ticks")
        parser.add_argument("--once", action="store_true", help="run one tick and exit")
        parser.add_argument("--window", type=int, default=DEFAULT_WINDOW, help="Burrow window")
        parser.add_argument(
            "--commit-interval-ms",
            type=int,
            default=DEFAULT_COMMIT_INTERVAL_MS,
            help="how often a live consumer is assumed to re-commit an unchanged offset",
        )
        parser.add_argument("--no-history", action="store_true", help="do not store history")
        parser.add_argument(
            "--history-interval",
            type=float,
            default=None,
            help="seconds between stored lag samples (default WEIR_LAG_HISTORY_INTERVAL_S or 5)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["interval"] <= 0:
            options["interval"] = 1.0
        stop = threading.Event()
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
        periodic.autodiscover()
        monitor: Monitor | None = None
        try:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    if monitor is None:
                        monitor = Monitor(
                            gateway(),
                            window_size=options["window"],
                            commit_interval_ms=options["commit_interval_ms"],
                            store_history=not options["no_history"],
                            history_interval_ms=(
                                None
                                if options["history_interval"] is None
                                else int(options["history_interval"] * 1000)
                            ),
                        )
                    groups = monitor.tick()
                    log.debug("tick: %d groups", len(groups))
                except Exception as exc:  # keep monitoring whatever failed
                    log.warning("monitor tick failed: %s", exc, exc_info=log.isEnabledFor(10))
                    close_old_connections()
                periodic.run_due()
                if options["once"]:
                    break
                stop.wait(max(0.0, options["interval"] - (time.monotonic() - started)))
        finally:
            if monitor is not None:
                monitor.close()
        if not options["once"]:
            self.stdout.write("monitor stopped")

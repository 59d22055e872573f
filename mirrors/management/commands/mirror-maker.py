"""``manage.py mirror-maker``: MirrorMaker 2's job, from its own properties file.

    manage.py mirror-maker PROPERTIES [--clusters ALIAS [ALIAS ...]]

PROPERTIES is a ``connect-mirror-maker.properties`` file as MM2's ``connect-mirror-maker.sh``
reads it (keys: docs/mirroring.md); ``--clusters`` keeps the flows whose *target* is one of
the aliases, as MM2's option does (run the process near the cluster it writes to). A thin
shell over :mod:`weir.mirror.maker`: it validates the file -- an unknown alias or a missing
required key stops it with a message naming the key -- then runs every flow until SIGTERM or
Ctrl-C, publishing each flow's status to ``WEIR_REDIS_URL`` for ``/api/mirrors/`` and the
``/mirrors/`` page (best effort: the clusters need not be Weir's). Start as many processes
with the same file as you like; they share the work.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from weir.metadata.redis_url import ReconnectRetry, sync_client
from weir.mirror.config import MirrorConfig, MirrorConfigError
from weir.mirror.maker import MirrorMaker
from weir.mirror.properties import PropertiesError, load_properties
from weir.mirror.status import StatusStore


class Command(BaseCommand):
    help = (
        "Mirror topics, consumer group offsets and heartbeats between Kafka clusters, "
        "configured with MirrorMaker 2's connect-mirror-maker.properties."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("properties", metavar="PROPERTIES", help="MM2 properties file")
        parser.add_argument(
            "--clusters",
            nargs="+",
            metavar="ALIAS",
            help="run only the flows whose target is one of these cluster aliases",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["properties"]
        try:
            props = load_properties(path)
        except OSError as exc:
            raise CommandError(f"PROPERTIES: cannot read {path}: {exc.strerror or exc}") from None
        except PropertiesError as exc:
            raise CommandError(f"PROPERTIES: {exc}") from None
        try:
            config = MirrorConfig.from_properties(props, clusters=options["clusters"])
            stop = threading.Event()
            maker = MirrorMaker(config, status_store=_status_store(), stop=stop)
        except (MirrorConfigError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if not config.flows:
            raise CommandError(
                "no flow to run: enable one with <source>-><target>.enabled = true"
                + (" whose target is in --clusters" if options["clusters"] else "")
            )
        if "WEIR_LOG_LEVEL" not in os.environ:
            logging.getLogger("weir.mirror").setLevel(logging.INFO)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        self.stdout.write(
            f"mirror-maker {maker.process_id}: "
            + ", ".join(
                f"{flow.name}{'' if flow.enabled else ' (heartbeats)'}" for flow in config.flows
            )
        )
        self.stdout.flush()
        maker.run()
        self.stdout.write("mirror-maker stopped")


def _status_store() -> StatusStore | None:
    """The coordination Redis for status, if one is configured (it may not be reachable)."""
    url = settings.WEIR_REDIS_URL
    if not url:
        return None
    # A short retry budget: status is best effort and must not hold up a stop.
    client = sync_client(
        url, socket_timeout=1.0, socket_connect_timeout=1.0, retry=ReconnectRetry(budget_s=1.0)
    )
    return StatusStore(client, settings.WEIR_CLUSTER_ID)

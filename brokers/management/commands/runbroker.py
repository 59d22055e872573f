"""``manage.py runbroker``: run one Weir broker in the foreground.

Flags are the contract of DESIGN.md: ``--broker-id N --listen HOST:PORT --data-dir DIR
[--advertise HOST:PORT] [--rack R] [--config key=value ...]``; the coordination store comes
from ``WEIR_REDIS_URL`` and ``WEIR_CLUSTER_ID``. Bad flags get a message naming the flag.
``--listen`` may repeat as ``NAME://HOST:PORT`` (no prefix: PLAINTEXT); Kafka's ``listeners``,
``advertised.listeners`` and ``listener.security.protocol.map`` configs add listeners too
(``brokers.security.listeners``). The first listener is the primary one (any protocol);
``inter.broker.listener.name`` picks the one brokers use to reach each other.
SIGTERM and SIGINT shut the broker down cleanly (flush, checkpoint, deregister).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brokers.config import InvalidConfigError, parse_broker_overrides
from brokers.security.listeners import ListenerError, resolve_listeners
from brokers.security.tls import TlsConfigError


def parse_endpoint(flag: str, value: str) -> tuple[str, int]:
    """``HOST:PORT`` → (host, port), or a CommandError naming ``flag``."""
    host, sep, port_text = value.rpartition(":")
    if not sep or not host:
        raise CommandError(f"{flag} expects HOST:PORT, got {value!r}")
    try:
        port = int(port_text)
    except ValueError:
        raise CommandError(f"{flag} expects a numeric port, got {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise CommandError(f"{flag} port {port} is outside 0..65535")
    return host.strip("[]"), port


class Command(BaseCommand):
    help = "Run one Weir broker (Kafka protocol listener) in the foreground."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--broker-id", type=int, required=True, help="unique broker id (>= 0)")
        parser.add_argument(
            "--listen",
            required=True,
            action="append",
            help="[NAME://]HOST:PORT to accept clients on (repeatable; no NAME: PLAINTEXT)",
        )
        parser.add_argument("--data-dir", required=True, help="directory for partition logs")
        parser.add_argument("--advertise", help="HOST:PORT clients should use (default: --listen)")
        parser.add_argument("--rack", help="rack id for rack-aware replica placement")
        parser.add_argument(
            "--config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="broker config override with Kafka's names, e.g. num.partitions=3 (repeatable)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from brokers.broker import Broker, BrokerSettings

        broker_id = options["broker_id"]
        if broker_id < 0:
            raise CommandError(f"--broker-id must be >= 0, got {broker_id}")
        advertise = (
            parse_endpoint("--advertise", options["advertise"]) if options["advertise"] else None
        )
        try:
            overrides = parse_broker_overrides(options["config"])
        except InvalidConfigError as exc:
            raise CommandError(str(exc)) from None
        listen_values = options["listen"]
        for value in listen_values:
            if "://" not in value:
                parse_endpoint("--listen", value)  # the usual messages for a bad HOST:PORT
        try:
            listeners = resolve_listeners(listen_values, advertise=advertise, configs=overrides)
        except ListenerError as exc:
            raise CommandError(str(exc)) from None
        listen = (listeners[0].host, listeners[0].port)
        data_dir = Path(options["data_dir"])
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"--data-dir {data_dir}: {exc.strerror}") from None
        logging.basicConfig(
            level=os.environ.get("WEIR_LOG_LEVEL", "INFO"),
            format=f"%(asctime)s broker-{broker_id} %(levelname)s %(name)s: %(message)s",
            # Django's LOGGING already gave the root logger a WARNING handler; the broker's
            # own level (WEIR_LOG_LEVEL) is the one that counts here.
            force=True,
        )
        settings = BrokerSettings(
            broker_id=broker_id,
            listen=listen,
            advertise=advertise,
            data_dir=data_dir,
            # Kafka sets the rack with the broker.rack config; --rack is the shorthand.
            rack=options["rack"] or overrides.get("broker.rack") or None,
            overrides=overrides,
            redis_url=os.environ.get("WEIR_REDIS_URL", "redis://127.0.0.1:6379/0"),
            cluster_id=os.environ.get("WEIR_CLUSTER_ID", "weir"),
            extra_listeners=tuple(listeners[1:]),
            primary_listener=listeners[0],
        )
        try:
            asyncio.run(_run(Broker(settings)))
        except (InvalidConfigError, TlsConfigError) as exc:
            raise CommandError(str(exc)) from None


async def _run(broker: Any) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await broker.start()
    try:
        stop_task = asyncio.create_task(stop.wait())
        fenced_task = asyncio.create_task(broker.fenced.wait())
        await asyncio.wait({stop_task, fenced_task}, return_when=asyncio.FIRST_COMPLETED)
        stop_task.cancel()
        fenced_task.cancel()
    finally:
        await broker.stop()
    if broker.fenced.is_set():
        raise CommandError(
            f"broker {broker.broker_id} was fenced by a newer registration of the same id"
        )

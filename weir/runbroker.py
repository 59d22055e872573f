"""``runbroker``: run one Weir broker in the foreground, without Django.

Flags are the contract of DESIGN.md: ``--broker-id N --listen HOST:PORT --data-dir DIR
[--advertise HOST:PORT] [--rack R] [--config key=value ...]``; the coordination store comes
from ``WEIR_REDIS_URL`` and ``WEIR_CLUSTER_ID``. Bad flags get one line naming the flag and
exit status 1. ``--listen`` may repeat as ``NAME://HOST:PORT`` (no prefix: PLAINTEXT); Kafka's
``listeners``, ``advertised.listeners`` and ``listener.security.protocol.map`` configs add
listeners too (``weir.security.listeners``). The first listener is the primary one (any
protocol); ``inter.broker.listener.name`` picks the one brokers use to reach each other.
SIGTERM and SIGINT shut the broker down cleanly (flush, checkpoint, deregister); SIGUSR1
logs where each asyncio task is waiting.

``manage.py runbroker`` hands its arguments to :func:`main` before Django is imported, so a
broker process never loads the control plane (``python -m weir.runbroker`` is the same).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from weir.config import InvalidConfigError, parse_broker_overrides
from weir.security.listeners import ListenerError, parse_host_port, resolve_listeners
from weir.security.tls import TlsConfigError

__all__ = [
    "UsageError",
    "add_arguments",
    "build_parser",
    "main",
    "parse_endpoint",
    "settings_from_args",
]


class UsageError(Exception):
    """A bad flag or config: printed as one line naming it, exit status 1."""


def parse_endpoint(flag: str, value: str) -> tuple[str, int]:
    """``HOST:PORT`` with a host → (host, port), or a UsageError naming ``flag``."""
    if not value.rpartition(":")[0]:
        raise UsageError(f"{flag} expects HOST:PORT, got {value!r}")
    try:
        return parse_host_port(value, flag)
    except ListenerError as exc:
        raise UsageError(str(exc)) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """runbroker's flags, on any argparse parser (Django's command parser is one)."""
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


def build_parser(prog: str = "manage.py runbroker") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Run one Weir broker (Kafka protocol listener) in the foreground."
    )
    add_arguments(parser)
    return parser


def settings_from_args(args: argparse.Namespace, environ: dict[str, str] | None = None):
    """The flags and environment as :class:`weir.broker.BrokerSettings`, or a UsageError."""
    from weir.broker import BrokerSettings

    environ = dict(os.environ) if environ is None else environ
    if args.broker_id < 0:
        raise UsageError(f"--broker-id must be >= 0, got {args.broker_id}")
    advertise = parse_endpoint("--advertise", args.advertise) if args.advertise else None
    try:
        overrides = parse_broker_overrides(args.config)
    except InvalidConfigError as exc:
        raise UsageError(str(exc)) from None
    for value in args.listen:
        if "://" not in value:
            parse_endpoint("--listen", value)  # the usual messages for a bad HOST:PORT
    try:
        listeners = resolve_listeners(args.listen, advertise=advertise, configs=overrides)
    except ListenerError as exc:
        raise UsageError(str(exc)) from None
    data_dir = Path(args.data_dir)
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--data-dir {data_dir}: {exc.strerror}") from None
    return BrokerSettings(
        broker_id=args.broker_id,
        listen=(listeners[0].host, listeners[0].port),
        advertise=advertise,
        data_dir=data_dir,
        # Kafka sets the rack with the broker.rack config; --rack is the shorthand.
        rack=args.rack or overrides.get("broker.rack") or None,
        overrides=overrides,
        redis_url=environ.get("WEIR_REDIS_URL", "redis://127.0.0.1:6379/0"),
        cluster_id=environ.get("WEIR_CLUSTER_ID", "weir"),
        extra_listeners=tuple(listeners[1:]),
        primary_listener=listeners[0],
    )


def dump_tasks() -> None:
    """SIGUSR1: log where every asyncio task of the broker is waiting (an operator's, and a
    test's, view of a broker that seems stuck)."""
    lines = []
    for task in asyncio.all_tasks():
        chain = []
        awaited = task.get_coro()
        while awaited is not None and len(chain) < 40:  # the await chain, outermost first
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is None:
                break
            chain.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
        lines.append(f"  {task.get_name()}: {' -> '.join(chain) or 'done'}")
    logging.getLogger("weir.broker").warning("asyncio tasks:\n%s", "\n".join(sorted(lines)))


async def serve(broker) -> None:
    """Run ``broker`` until SIGTERM/SIGINT or until it is fenced; always stop it cleanly."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, dump_tasks)
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
        raise UsageError(
            f"broker {broker.broker_id} was fenced by a newer registration of the same id"
        )


def run(args: argparse.Namespace) -> None:
    """Build the broker from parsed flags and serve until stopped (raises UsageError)."""
    from weir.broker import Broker

    settings = settings_from_args(args)
    logging.basicConfig(
        level=os.environ.get("WEIR_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s broker-{settings.broker_id} %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    try:
        asyncio.run(serve(Broker(settings)))
    except (InvalidConfigError, TlsConfigError) as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        # e.g. the listen address is in use: one line naming the address, no traceback.
        raise UsageError(str(exc)) from None


def main(argv: Sequence[str] | None = None, prog: str = "manage.py runbroker") -> int:
    args = build_parser(prog).parse_args(argv)
    try:
        run(args)
    except UsageError as exc:
        print(f"runbroker: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(prog="python -m weir.runbroker"))

"""Shared plumbing of the Kafka-tool commands (``topics``, ``configs``): a Kafka client.

The commands speak the Kafka protocol through confluent-kafka's AdminClient, so they work
against any broker of the cluster exactly as Kafka's own shell tools do.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

from django.core.management.base import CommandError, CommandParser

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def add_bootstrap_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        default=os.environ.get("WEIR_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
        help="HOST:PORT[,HOST:PORT] of brokers (default $WEIR_BOOTSTRAP_SERVERS or "
        f"{DEFAULT_BOOTSTRAP})",
    )


def add_tool_arguments(parser: CommandParser, actions: Sequence[str | tuple[str, str]]) -> None:
    """``--bootstrap-server`` and the tool's actions, exactly one of which is required
    (``"--list"`` or ``("--list", "help text")``), as every ``kafka-*.sh`` tool takes them."""
    add_bootstrap_argument(parser)
    group = parser.add_mutually_exclusive_group(required=True)
    for action in actions:
        flag, text = action if isinstance(action, tuple) else (action, None)
        group.add_argument(flag, action="store_true", help=text)


def admin_client(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient
    from django.conf import settings

    from controlplane.kafka_security import KafkaSecurity

    # The same credentials as the control plane (WEIR_KAFKA_*): a secured cluster's admin
    # tools authenticate like its web app does.
    security = KafkaSecurity.from_settings(settings).librdkafka_config()
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000, **security})


@contextlib.contextmanager
def api_errors() -> Iterator[None]:
    """The control plane's API errors (from the services and selectors a command shares with
    the REST API) end the command with their message, as a tool's error."""
    from controlplane.errors import ApiError

    try:
        yield
    except ApiError as exc:
        raise CommandError(exc.message) from None


def kafka_error_text(code: int, message: str | None) -> str:
    """``NAME: message`` for a Kafka error code, as the Kafka tools print it."""
    from kio.schema.errors import ErrorCode

    try:
        name = ErrorCode(code).name.upper()
    except ValueError:
        name = f"ERROR {code}"
    return f"{name}: {message}" if message else name


def parse_config_pairs(pairs: list[str], *, flag: str) -> dict[str, str]:
    """``["k=v", ...]`` → dict, or a CommandError naming ``flag``."""
    configs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"{flag} expects KEY=VALUE, got {pair!r}")
        configs[key.strip()] = value.strip()
    return configs

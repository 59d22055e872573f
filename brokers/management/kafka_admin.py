"""Shared plumbing of the Kafka-tool commands: where the cluster is and how to log in to it.

Every admin tool is a Kafka client, as Kafka's shell tools are: ``--bootstrap-server`` names
brokers to start from and ``--command-config FILE`` gives the client properties
(``security.protocol``, ``sasl.*``, ``ssl.*``; see :mod:`brokers.management.command_config`).
Without ``--command-config`` a tool authenticates like the control plane (the ``WEIR_KAFKA_*``
settings), so an operator's shell in the web container needs no file. :func:`tool_target`
turns the options into a :class:`ToolTarget`, which both client kinds read: confluent-kafka's
AdminClient (:func:`admin_client`) and the kio requests of
:mod:`brokers.management.protocol_admin`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.management.base import CommandError, CommandParser

if TYPE_CHECKING:
    from controlplane.cluster import ClientCredentials

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def add_command_config_argument(parser: CommandParser) -> None:
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties (security.protocol, sasl.*, ssl.*) to connect with, "
        "as Kafka's tools take them (default: the control plane's WEIR_KAFKA_* settings)",
    )


def add_bootstrap_argument(parser: CommandParser) -> None:
    """``--bootstrap-server`` and ``--command-config``, as every ``kafka-*.sh`` tool has."""
    parser.add_argument(
        "--bootstrap-server",
        default=os.environ.get("WEIR_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
        help="HOST:PORT[,HOST:PORT] of brokers (default $WEIR_BOOTSTRAP_SERVERS or "
        f"{DEFAULT_BOOTSTRAP})",
    )
    add_command_config_argument(parser)


@dataclass(frozen=True)
class ToolTarget:
    """The brokers a tool starts from and the credentials it presents to them."""

    bootstrap: str
    security: ClientCredentials


def command_security(options: dict[str, Any]) -> ClientCredentials:
    """The credentials of ``--command-config FILE``, else the control plane's."""
    from django.conf import settings

    from brokers.management.command_config import load_properties, tool_security
    from controlplane.kafka_security import KafkaSecurity

    path = options.get("command_config")
    if path:
        return tool_security(load_properties(path), source=f"--command-config {path}")
    return KafkaSecurity.from_settings(settings)


def tool_target(options: dict[str, Any]) -> ToolTarget:
    """Where and how a tool connects, from its ``--bootstrap-server``/``--command-config``."""
    return ToolTarget(bootstrap=options["bootstrap_server"], security=command_security(options))


def add_tool_arguments(parser: CommandParser, actions: Sequence[str | tuple[str, str]]) -> None:
    """``--bootstrap-server`` and the tool's actions, exactly one of which is required
    (``"--list"`` or ``("--list", "help text")``), as every ``kafka-*.sh`` tool takes them."""
    add_bootstrap_argument(parser)
    group = parser.add_mutually_exclusive_group(required=True)
    for action in actions:
        flag, text = action if isinstance(action, tuple) else (action, None)
        group.add_argument(flag, action="store_true", help=text)


def admin_client(target: ToolTarget) -> Any:
    """A confluent-kafka AdminClient of ``target``'s brokers, with its credentials."""
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": target.bootstrap,
            "socket.timeout.ms": 10000,
            **target.security.librdkafka_config(),
        }
    )


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

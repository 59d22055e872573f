"""``manage.py configs``: ``kafka-configs.sh`` parity for topics and brokers.

    manage.py configs --entity-type topics --entity-name T --describe [--all]
    manage.py configs --entity-type topics --entity-name T --alter \\
        --add-config retention.ms=60000,cleanup.policy=[compact,delete]
    manage.py configs --entity-type topics --entity-name T --alter --delete-config retention.ms
    manage.py configs --entity-type brokers --entity-name 1 --describe
    manage.py configs --entity-type brokers --entity-default --alter --add-config log.retention.ms=1

Alterations are incremental (IncrementalAlterConfigs), as in current Kafka tools. Requests go
over the Kafka protocol with Weir's own client, which (unlike librdkafka) can address the
cluster-wide broker default resource (an empty broker name).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kio.schema.errors import ErrorCode

from brokers.management.kafka_admin import (
    add_bootstrap_argument,
    api_errors,
    kafka_error_text,
    tool_target,
)
from brokers.management.protocol_admin import send_to_any_broker
from brokers.rest.configs import (
    SOURCES,
    ConfigOp,
    Kind,
    alter_configs_request,
    describe_configs_request,
)

# Config sources with a name (kafka-configs prints "?" for the others).
_SOURCES = {code: source for code, source in SOURCES.items() if code}
_DYNAMIC = {1, 2, 3}


def split_add_config(text: str) -> dict[str, str]:
    """Parse ``k=v,k2=[a,b]`` (brackets hold list values with commas), kafka-configs style."""
    configs: dict[str, str] = {}
    depth = 0
    current = ""
    parts: list[str] = []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current:
        parts.append(current)
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"--add-config expects KEY=VALUE[,KEY=VALUE], got {part!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        configs[key.strip()] = value
    return configs


class Command(BaseCommand):
    help = "Describe and alter topic and broker configs (kafka-configs.sh parity)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_bootstrap_argument(parser)
        parser.add_argument("--entity-type", required=True, choices=["topics", "brokers"])
        parser.add_argument("--entity-name", help="topic name or broker id")
        parser.add_argument(
            "--entity-default",
            action="store_true",
            help="the cluster-wide broker default (brokers only)",
        )
        actions = parser.add_mutually_exclusive_group(required=True)
        actions.add_argument("--describe", action="store_true")
        actions.add_argument("--alter", action="store_true")
        parser.add_argument(
            "--all", action="store_true", help="with --describe: every config, not only overrides"
        )
        parser.add_argument("--add-config", default="", help="k=v[,k2=[a,b]] to set")
        parser.add_argument("--delete-config", default="", help="k[,k2] to remove")
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args: Any, **options: Any) -> None:
        entity_type = options["entity_type"]
        if options["entity_default"]:
            if entity_type != "brokers":
                raise CommandError("--entity-default is only valid with --entity-type brokers")
            if options["entity_name"] is not None:
                raise CommandError("--entity-name and --entity-default are mutually exclusive")
            name = ""
        elif options["entity_name"] is None:
            raise CommandError("--entity-name (or --entity-default for brokers) is required")
        else:
            name = options["entity_name"]
        kind = "topic" if entity_type == "topics" else "broker"
        if kind == "broker" and name and not name.isdigit():
            raise CommandError(f"--entity-name for brokers must be a broker id, got {name!r}")
        label = f"{kind} {name}" if name else "the default broker"
        if options["describe"]:
            self._describe(kind, name, label, options)
        else:
            self._alter(kind, name, label, options)

    def _describe(self, kind: Kind, name: str, label: str, options: dict[str, Any]) -> None:
        request = describe_configs_request(kind=kind, name=name)
        (result,) = _send(request, options).results
        _check(result)
        self.stdout.write(f"{'All' if options['all'] else 'Dynamic'} configs for {label} are:")
        for entry in sorted(result.configs, key=lambda c: c.name):
            if not options["all"] and entry.config_source not in _DYNAMIC:
                continue
            value = "null" if entry.value is None else entry.value
            synonyms = ", ".join(
                f"{_SOURCES.get(s.source, '?')}:{s.name}={s.value}" for s in entry.synonyms
            )
            self.stdout.write(
                f"  {entry.name}={value} sensitive={str(entry.is_sensitive).lower()} "
                f"synonyms={{{synonyms}}}"
            )

    def _alter(self, kind: Kind, name: str, label: str, options: dict[str, Any]) -> None:
        adds = split_add_config(options["add_config"]) if options["add_config"] else {}
        deletes = [k.strip() for k in options["delete_config"].split(",") if k.strip()]
        if not adds and not deletes:
            raise CommandError("--alter needs --add-config and/or --delete-config")
        operations = [ConfigOp(k, "SET", v) for k, v in adds.items()]
        operations += [ConfigOp(k, "DELETE") for k in deletes]
        with api_errors():
            request = alter_configs_request(kind=kind, name=name, operations=operations)
        (result,) = _send(request, options).responses
        _check(result)
        self.stdout.write(f"Completed updating config for {label}.")


def _send(request: Any, options: dict[str, Any]) -> Any:
    return send_to_any_broker(tool_target(options), request, timeout=options["timeout"])


def _check(result: Any) -> None:
    """The resource's Kafka error, as the command's error."""
    if result.error_code != ErrorCode.none:
        raise CommandError(kafka_error_text(result.error_code, result.error_message))

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
from kio.schema.describe_configs.v4.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.schema.errors import ErrorCode
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.static.primitive import i8

from brokers.management.kafka_admin import add_bootstrap_argument
from brokers.management.protocol_admin import send_to_any_broker

# Kafka's ConfigResource types and IncrementalAlterConfigs operations.
_RESOURCE_TYPES = {"topic": 2, "broker": 4}
_SET, _DELETE = 0, 1
_DYNAMIC = {1, 2, 3}

_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


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

    def _describe(self, kind: str, name: str, label: str, options: dict[str, Any]) -> None:
        request = DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=i8(_RESOURCE_TYPES[kind]),
                    resource_name=name,
                    configuration_keys=None,
                ),
            ),
            include_synonyms=True,
            include_documentation=False,
        )
        response = send_to_any_broker(
            options["bootstrap_server"], request, timeout=options["timeout"]
        )
        (result,) = response.results
        if result.error_code != ErrorCode.none:
            raise CommandError(_error_text(result.error_code, result.error_message))
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

    def _alter(self, kind: str, name: str, label: str, options: dict[str, Any]) -> None:
        adds = split_add_config(options["add_config"]) if options["add_config"] else {}
        deletes = [k.strip() for k in options["delete_config"].split(",") if k.strip()]
        if not adds and not deletes:
            raise CommandError("--alter needs --add-config and/or --delete-config")
        configs = tuple(
            AlterableConfig(name=k, config_operation=i8(_SET), value=v) for k, v in adds.items()
        ) + tuple(
            AlterableConfig(name=k, config_operation=i8(_DELETE), value=None) for k in deletes
        )
        request = IncrementalAlterConfigsRequest(
            resources=(
                AlterConfigsResource(
                    resource_type=i8(_RESOURCE_TYPES[kind]), resource_name=name, configs=configs
                ),
            ),
            validate_only=False,
        )
        response = send_to_any_broker(
            options["bootstrap_server"], request, timeout=options["timeout"]
        )
        (result,) = response.responses
        if result.error_code != ErrorCode.none:
            raise CommandError(_error_text(result.error_code, result.error_message))
        self.stdout.write(f"Completed updating config for {label}.")


def _error_text(code: int, message: str | None) -> str:
    name = ErrorCode(code).name.upper()
    return f"{name}: {message}" if message else name

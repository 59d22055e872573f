"""``manage.py configs``: ``kafka-configs.sh`` parity for topics and brokers.

    manage.py configs --entity-type topics --entity-name T --describe [--all]
    manage.py configs --entity-type topics --entity-name T --alter \\
        --add-config retention.ms=60000,cleanup.policy=[compact,delete]
    manage.py configs --entity-type topics --entity-name T --alter --delete-config retention.ms
    manage.py configs --entity-type brokers --entity-name 1 --describe
    manage.py configs --entity-type brokers --entity-default --alter --add-config log.retention.ms=1

Alterations are incremental (IncrementalAlterConfigs), as in current Kafka tools.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brokers.management.kafka_admin import add_bootstrap_argument, admin_client

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
        from confluent_kafka.admin import ConfigResource

        entity_type = options["entity_type"]
        if options["entity_default"]:
            if entity_type != "brokers":
                raise CommandError("--entity-default is only valid with --entity-type brokers")
            name = ""
        elif options["entity_name"] is None:
            raise CommandError("--entity-name (or --entity-default for brokers) is required")
        else:
            name = options["entity_name"]
        kind = "topic" if entity_type == "topics" else "broker"
        admin = admin_client(options["bootstrap_server"])
        if options["describe"]:
            self._describe(admin, ConfigResource(kind, name), kind, name, options)
        else:
            self._alter(admin, kind, name, options)

    def _describe(
        self, admin: Any, resource: Any, kind: str, name: str, options: dict[str, Any]
    ) -> None:
        from confluent_kafka import KafkaException

        try:
            entries = admin.describe_configs([resource])[resource].result(options["timeout"])
        except KafkaException as exc:
            raise CommandError(exc.args[0].str()) from None
        dynamic = {1, 2, 3}
        label = f"{kind} {name}" if name else "the default broker"
        self.stdout.write(f"{'All' if options['all'] else 'Dynamic'} configs for {label} are:")
        for key, entry in sorted(entries.items()):
            source = int(getattr(entry.source, "value", entry.source))
            if not options["all"] and source not in dynamic:
                continue
            value = "null" if entry.value is None else entry.value
            synonyms = ", ".join(
                f"{_SOURCES.get(int(getattr(s.source, 'value', s.source)), '?')}:{s.name}={s.value}"
                for s in entry.synonyms.values()
            )
            self.stdout.write(
                f"  {key}={value} sensitive={str(entry.is_sensitive).lower()} "
                f"synonyms={{{synonyms}}}"
            )

    def _alter(self, admin: Any, kind: str, name: str, options: dict[str, Any]) -> None:
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
        )

        adds = split_add_config(options["add_config"]) if options["add_config"] else {}
        deletes = [k.strip() for k in options["delete_config"].split(",") if k.strip()]
        if not adds and not deletes:
            raise CommandError("--alter needs --add-config and/or --delete-config")
        entries = [
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in adds.items()
        ] + [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in deletes]
        resource = ConfigResource(kind, name, incremental_configs=entries)
        try:
            admin.incremental_alter_configs([resource])[resource].result(options["timeout"])
        except KafkaException as exc:
            raise CommandError(exc.args[0].str()) from None
        label = f"{kind} {name}" if name else "the default broker"
        self.stdout.write(f"Completed updating config for {label}.")

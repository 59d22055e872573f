"""``manage.py configs``: ``kafka-configs.sh`` parity for topics and brokers.

    manage.py configs --entity-type topics --entity-name T --describe [--all]
    manage.py configs --entity-type topics --entity-name T --alter \\
        --add-config retention.ms=60000,cleanup.policy=[compact,delete]
    manage.py configs --entity-type topics --entity-name T --alter --delete-config retention.ms
    manage.py configs --entity-type brokers --entity-name 1 --describe
    manage.py configs --entity-type brokers --entity-default --alter --add-config log.retention.ms=1
    manage.py configs --entity-type users --entity-name alice --alter \
        --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
    manage.py configs --entity-type users --entity-name alice --entity-type clients \
        --entity-default --describe
    manage.py configs --entity-type clients --entity-default --alter \\
        --delete-config request_percentage

Client quotas (``users`` / ``clients``, alone or combined, names or ``--entity-default``) go
through AlterClientQuotas / DescribeClientQuotas, as kafka-configs does, with the services
``/api/quotas/`` uses (``brokers.quotas``: the same checks and messages); ``--entity-type``,
``--entity-name`` and ``--entity-default`` repeat, and each name or default belongs to the
entity type before it.

Alterations are incremental (IncrementalAlterConfigs), as in current Kafka tools. Requests go
over the Kafka protocol with Weir's own client, which (unlike librdkafka) can address the
cluster-wide broker default resource (an empty broker name).
"""

from __future__ import annotations

import functools
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
from brokers.quotas import ENTITY_TYPES, client_quota_alter, client_quota_describe, entity_label
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
        parser.add_argument(
            "--entity-type",
            required=True,
            action="append",
            choices=["topics", "brokers", *ENTITY_TYPES],
            help="repeat for a users + clients quota entity",
        )
        parser.add_argument(
            "--entity-name",
            dest="entity_names",
            action="append",
            help="topic name, broker id, user principal name or client id",
        )
        parser.add_argument(
            "--entity-default",
            dest="entity_names",
            action="append_const",
            const=None,
            help="the cluster-wide broker default, or the default user / client-id",
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
        types, names = options["entity_type"], options["entity_names"] or []
        if any(t in ENTITY_TYPES for t in types):
            self._quotas(types, names, options)
            return
        if len(types) > 1:
            raise CommandError("only users and clients may be combined in one --entity-type list")
        entity_type = types[0]
        if len(names) > 1:
            raise CommandError("give one --entity-name or --entity-default")
        if names and names[0] is None:
            if entity_type != "brokers":
                raise CommandError(
                    "--entity-default is only valid with --entity-type brokers, users or clients"
                )
            name = ""
        elif not names:
            raise CommandError("--entity-name (or --entity-default for brokers) is required")
        else:
            name = names[0]
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

    # -- client quotas (users / clients) ---------------------------------------------------
    def _quotas(self, types: list[str], names: list[str | None], options: dict[str, Any]) -> None:
        if any(t not in ENTITY_TYPES for t in types) or len(set(types)) != len(types):
            raise CommandError(
                "--entity-type users and clients may be combined, each once, but not with "
                "topics or brokers"
            )
        if len(names) > len(types) or (options["alter"] and len(names) != len(types)):
            raise CommandError(
                "each --entity-type users|clients needs its own --entity-name or --entity-default"
            )
        entity: list[tuple[str, Any]] = [
            (kind, names[i] if i < len(names) else True) for i, kind in enumerate(types)
        ]
        send = functools.partial(_send, options=options)
        if options["describe"]:
            with api_errors():
                found = client_quota_describe(entity=entity, send=send)
            for quota in found:
                values = ", ".join(f"{k}={v}" for k, v in quota.values.items())
                self.stdout.write(f"Quota configs for {quota.label} are {values}")
            return
        adds: dict[str, float] = {}
        for key, text in (
            split_add_config(options["add_config"]) if options["add_config"] else {}
        ).items():
            try:
                adds[key] = float(text)
            except ValueError:
                raise CommandError(
                    f"--add-config {key}={text}: a quota value must be a number"
                ) from None
        deletes = [k.strip() for k in options["delete_config"].split(",") if k.strip()]
        if not adds and not deletes:
            raise CommandError("--alter needs --add-config and/or --delete-config")
        with api_errors():
            client_quota_alter(entity=entity, values=adds, remove=deletes, send=send)
        label = entity_label([(ENTITY_TYPES[k], n) for k, n in entity])
        self.stdout.write(f"Completed updating config for {label}.")


def _send(request: Any, options: dict[str, Any]) -> Any:
    return send_to_any_broker(tool_target(options), request, timeout=options["timeout"])


def _check(result: Any) -> None:
    """The resource's Kafka error, as the command's error."""
    if result.error_code != ErrorCode.none:
        raise CommandError(kafka_error_text(result.error_code, result.error_message))

"""``manage.py scram-users``: SCRAM credentials with ``kafka-configs`` parity.

::

    manage.py scram-users --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=s3cr3t]' \\
        --entity-type users --entity-name alice
    manage.py scram-users --alter --delete-config 'SCRAM-SHA-256' --entity-type users \\
        --entity-name alice
    manage.py scram-users --describe --entity-type users [--entity-name alice]

Theory of operation
-------------------
The command is a thin shell over :mod:`controlplane.scram_users`, the service behind
``/api/scram-users/``: credentials are changed with AlterUserScramCredentials and read with
DescribeUserScramCredentials (KIP-554) through the brokers, as ``kafka-configs.sh
--bootstrap-server ... --entity-type users`` does in current Kafka. So a secured cluster
authorizes the change (Alter on the cluster) against the principal the command logs in as --
that of ``--command-config FILE`` (Kafka's client properties, as for every admin tool), else the
control plane's (``WEIR_KAFKA_*``) -- and the brokers store the credential exactly as for the
REST API and any Kafka AdminClient; the password itself is never stored.

The brokers are those of ``--bootstrap-server`` or, without it, the brokers registered in the
cluster's Redis (``WEIR_REDIS_URL``, ``WEIR_CLUSTER_ID``), so at least one broker must be
running. The command runs a gateway of its own (closed when it ends) rather than the
process-wide one, since its credentials and brokers are its own.

The one exception is Kafka's ``--zookeeper`` bootstrap: ``--alter --redis-url URL``
writes the credential straight into that Redis without brokers, for the users a cluster needs
before its brokers can start or be reached (the inter-broker user, the first admin of a
SASL-only cluster); see docs/security.md, "SCRAM users".

Describe prints Kafka's lines: ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192``.
"""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from brokers.management.kafka_admin import (
    add_command_config_argument,
    api_errors,
    command_security,
)
from controlplane import scram_users
from controlplane.cluster import ClusterGateway
from controlplane.errors import NotFound
from weir.security.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS

_ITEM = re.compile(r"\s*([A-Za-z0-9._-]+)\s*=\s*(\[[^\]]*\]|[^,]*)\s*(?:,|$)")


def parse_add_config(text: str) -> dict[str, tuple[str, int]]:
    """``SCRAM-SHA-256=[iterations=8192,password=x],SCRAM-SHA-512=[password=y]`` →
    {mechanism: (password, iterations)}."""
    result: dict[str, tuple[str, int]] = {}
    position = 0
    while position < len(text):
        match = _ITEM.match(text, position)
        if match is None or match.end() == position:
            raise CommandError(f"--add-config: cannot parse {text[position:]!r}")
        position = match.end()
        name, value = match.group(1).upper(), match.group(2)
        if name not in MECHANISMS:
            raise CommandError(f"--add-config: {name} is not SCRAM-SHA-256 or SCRAM-SHA-512")
        fields: dict[str, str] = {}
        inner = value[1:-1] if value.startswith("[") else f"password={value}"
        for part in inner.split(","):
            key, sep, val = part.partition("=")
            if not sep:
                raise CommandError(f"--add-config {name}: expected key=value, got {part!r}")
            fields[key.strip()] = val
        password = fields.get("password")
        if not password:
            raise CommandError(f"--add-config {name}: a password is required")
        try:
            iterations = int(fields.get("iterations", MIN_ITERATIONS))
        except ValueError:
            raise CommandError(f"--add-config {name}: iterations must be a number") from None
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise CommandError(
                f"--add-config {name}: iterations must be in {MIN_ITERATIONS}..{MAX_ITERATIONS}"
            )
        result[name] = (password, iterations)
    return result


class Command(BaseCommand):
    help = (
        "Add, delete and describe SCRAM user credentials (kafka-configs --entity-type users). "
        "Goes through the brokers (AlterUserScramCredentials), like /api/scram-users/: those of "
        "--bootstrap-server, else the brokers registered in the cluster's Redis."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--alter", action="store_true")
        action.add_argument("--describe", action="store_true")
        parser.add_argument("--add-config", help="'SCRAM-SHA-256=[iterations=N,password=P]'")
        parser.add_argument("--delete-config", help="'SCRAM-SHA-256[,SCRAM-SHA-512]'")
        parser.add_argument("--entity-type", default="users", choices=["users"])
        parser.add_argument("--entity-name", help="the user name")
        parser.add_argument(
            "--bootstrap-server",
            help="HOST:PORT[,HOST:PORT] of brokers (default: the brokers registered in Redis)",
        )
        add_command_config_argument(parser)
        parser.add_argument(
            "--redis-url",
            help="with --alter: write into this Redis without brokers, only to create users "
            "before the brokers start (Kafka's kafka-configs --zookeeper)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["redis_url"]:
            if not options["alter"]:
                raise CommandError(
                    "--redis-url is only for --alter (bootstrap before brokers start)"
                )
            for flag in ("bootstrap_server", "command_config"):
                if options[flag]:
                    raise CommandError(
                        f"--redis-url writes without brokers; --{flag.replace('_', '-')} "
                        "is for the brokers' path (drop one)"
                    )
        self.gateway: ClusterGateway | None = None
        try:
            with api_errors():
                if options["describe"]:
                    self._describe(options["entity_name"], options)
                else:
                    self._alter(options)
        finally:
            if self.gateway is not None:
                self.gateway.close()

    def _cluster(self, options: dict[str, Any]) -> ClusterGateway:
        """A gateway to the brokers with the command's credentials (opened once)."""
        if self.gateway is None:
            security = command_security(options)
            self.gateway = ClusterGateway(
                redis_url=settings.WEIR_REDIS_URL,
                cluster_id=settings.WEIR_CLUSTER_ID,
                bootstrap_servers=options["bootstrap_server"] or "",
                security=security,
            )
        return self.gateway

    def _alter(self, options: dict[str, Any]) -> None:
        user = options["entity_name"]
        if not user:
            raise CommandError("--alter needs --entity-name")
        if not options["add_config"] and not options["delete_config"]:
            raise CommandError("--alter needs --add-config or --delete-config")
        additions = parse_add_config(options["add_config"] or "")
        deletions = [m.strip().upper() for m in (options["delete_config"] or "").split(",")]
        deletions = [m for m in deletions if m]
        for mechanism in deletions:
            if mechanism not in MECHANISMS:
                raise CommandError(f"--delete-config: {mechanism} is not a SCRAM mechanism")
        if options["redis_url"]:
            scram_users.scram_user_bootstrap(
                redis_url=options["redis_url"],
                cluster_id=settings.WEIR_CLUSTER_ID,
                name=user,
                upserts=additions,
                deletions=deletions,
            )
            self.stdout.write(f"Completed updating config for user {user}.")
            return
        cluster = self._cluster(options)
        for mechanism in deletions:
            scram_users.scram_user_delete(name=user, mechanism=mechanism, gateway=cluster)
        for mechanism, (password, iterations) in additions.items():
            scram_users.scram_user_upsert(
                name=user,
                mechanism=mechanism,
                password=password,
                iterations=iterations,
                gateway=cluster,
            )
        self.stdout.write(f"Completed updating config for user {user}.")

    def _describe(self, user: str | None, options: dict[str, Any]) -> None:
        cluster = self._cluster(options)
        if user is None:
            found = scram_users.scram_user_list(gateway=cluster)
        else:
            try:
                found = [scram_users.scram_user_get(name=user, gateway=cluster)]
            except NotFound:
                # kafka-configs prints the line with nothing after "are" for such a user.
                self.stdout.write(f"SCRAM credential configs for user-principal '{user}' are ")
                return
        for entry in found:
            self.stdout.write(
                f"SCRAM credential configs for user-principal '{entry.name}' are "
                + ", ".join(f"{m}=iterations={i}" for m, i in sorted(entry.credentials.items()))
            )

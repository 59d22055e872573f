"""``manage.py scram-users``: SCRAM credentials with ``kafka-configs`` parity.

::

    manage.py scram-users --alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=s3cr3t]' \\
        --entity-type users --entity-name alice
    manage.py scram-users --alter --delete-config 'SCRAM-SHA-256' --entity-type users \\
        --entity-name alice
    manage.py scram-users --describe --entity-type users [--entity-name alice]

The credentials are salted here (32 random bytes, at least 4096 iterations) and written to the
cluster's Redis (``WEIR_REDIS_URL``, ``WEIR_CLUSTER_ID``) as brokers read them
(``weir.security.credentials``); the password itself is never stored. Describe prints
Kafka's lines: ``SCRAM credential configs for user-principal 'alice' are
SCRAM-SHA-256=iterations=8192``.
"""

from __future__ import annotations

import re
from typing import Any

import redis
from django.core.management.base import BaseCommand, CommandError, CommandParser

from weir.metadata.keys import cluster_id_from_env, redis_url_from_env
from weir.security.credentials import decode_credential, encode_credential, scram_key
from weir.security.scram import (
    MAX_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    credential_from_password,
)

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
    help = "Add, delete and describe SCRAM user credentials (kafka-configs --entity-type users)."

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--alter", action="store_true")
        action.add_argument("--describe", action="store_true")
        parser.add_argument("--add-config", help="'SCRAM-SHA-256=[iterations=N,password=P]'")
        parser.add_argument("--delete-config", help="'SCRAM-SHA-256[,SCRAM-SHA-512]'")
        parser.add_argument("--entity-type", default="users", choices=["users"])
        parser.add_argument("--entity-name", help="the user name")
        parser.add_argument("--bootstrap-server", help="accepted for kafka-configs parity")

    def handle(self, *args: Any, **options: Any) -> None:
        client = redis.Redis.from_url(redis_url_from_env())
        cluster_id = cluster_id_from_env()
        try:
            if options["describe"]:
                self._describe(client, cluster_id, options["entity_name"])
            else:
                self._alter(client, cluster_id, options)
        finally:
            client.close()

    def _alter(self, client: redis.Redis, cluster_id: str, options: dict[str, Any]) -> None:
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
        for mechanism in deletions:
            client.hdel(scram_key(cluster_id, mechanism), user)
        for mechanism, (password, iterations) in additions.items():
            credential = credential_from_password(mechanism, password, iterations)
            client.hset(scram_key(cluster_id, mechanism), user, encode_credential(credential))
        self.stdout.write(f"Completed updating config for user {user}.")

    def _describe(self, client: redis.Redis, cluster_id: str, user: str | None) -> None:
        found: dict[str, list[str]] = {}
        for mechanism in MECHANISMS:
            entries = client.hgetall(scram_key(cluster_id, mechanism))
            for name, raw in entries.items():
                text = name.decode() if isinstance(name, bytes) else name
                if user is None or text == user:
                    iterations = decode_credential(raw).iterations
                    found.setdefault(text, []).append(f"{mechanism}=iterations={iterations}")
        if user is not None and user not in found:
            self.stdout.write(f"SCRAM credential configs for user-principal '{user}' are ")
            return
        for name in sorted(found):
            self.stdout.write(
                f"SCRAM credential configs for user-principal '{name}' are "
                + ", ".join(found[name])
            )

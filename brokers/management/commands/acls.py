"""``manage.py acls``: ``kafka-acls.sh`` parity over the Kafka protocol.

    manage.py acls --bootstrap-server HOST:PORT --add --allow-principal User:alice \\
        --operation Read --operation Describe --topic orders
    manage.py acls --add --allow-principal User:app --producer --topic orders
    manage.py acls --add --allow-principal User:app --consumer --topic orders --group billing
    manage.py acls --add --deny-principal User:mallory --deny-host 10.0.0.9 --operation All \\
        --topic orders- --resource-pattern-type prefixed
    manage.py acls --list [--topic orders] [--principal User:alice] \\
        [--resource-pattern-type match]
    manage.py acls --remove --force --allow-principal User:alice --operation Read --topic orders

Theory of operation
-------------------
The flags become Kafka ACL bindings exactly as ``AclCommand`` builds them: every principal, host
and operation on every named resource (``--cluster`` is the ``kafka-cluster`` resource);
``--operation`` defaults to All; hosts default to ``*``; ``--producer`` expands to Write,
Describe and Create on the topics (plus Write/Describe on ``--transactional-id``s and
IdempotentWrite on the cluster with ``--idempotent``), ``--consumer`` to Read and Describe on
the topics and Read on the groups. Operations are checked against what each resource type
supports, as kafka-acls does. ``--remove`` without a principal removes every ACL of the
resource; it needs ``--force`` (there is no interactive prompt). Output follows kafka-acls.

Requests go through confluent-kafka's AdminClient (CreateAcls / DescribeAcls / DeleteAcls),
so the command works against any broker of the cluster, and against Kafka itself.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brokers.management.kafka_admin import add_tool_arguments, admin_client, tool_target
from brokers.rest.acls import acl_sort_key, confluent_resource_type, kafka_resource_type

CLUSTER_NAME = "kafka-cluster"

# kafka-acls' operation names (also accepted: DESCRIBE_CONFIGS, describe-configs, ...).
_OPERATIONS = (
    "All",
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
)
_SUPPORTED = {
    "TOPIC": {
        "Read",
        "Write",
        "Create",
        "Describe",
        "Delete",
        "Alter",
        "DescribeConfigs",
        "AlterConfigs",
        "All",
    },
    "GROUP": {"Read", "Describe", "Delete", "All"},
    "CLUSTER": {
        "Create",
        "ClusterAction",
        "DescribeConfigs",
        "AlterConfigs",
        "IdempotentWrite",
        "Alter",
        "Describe",
        "All",
    },
    "TRANSACTIONAL_ID": {"Describe", "Write", "All"},
}
_PATTERN_TYPES = ("literal", "prefixed", "any", "match")


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


_OP_BY_KEY = {_key(op): op for op in _OPERATIONS}


def _snake(camel: str) -> str:
    """``DescribeConfigs`` → ``DESCRIBE_CONFIGS`` (confluent-kafka's enum names)."""
    out = "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(camel))
    return out.upper()


def parse_operation(text: str) -> str:
    op = _OP_BY_KEY.get(_key(text))
    if op is None:
        raise CommandError(
            f"--operation: unknown operation {text!r}; valid: {', '.join(_OPERATIONS)}"
        )
    return op


def _principal(text: str, flag: str) -> str:
    kind, sep, name = text.partition(":")
    if not (sep and kind and name):
        raise CommandError(f"{flag}: a principal is Type:name (e.g. User:alice), got {text!r}")
    return text


class Command(BaseCommand):
    help = "Add, list and remove Kafka ACLs (kafka-acls.sh parity)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tool_arguments(
            parser, [("--add", "add ACLs"), ("--remove", "remove ACLs"), ("--list", "list ACLs")]
        )
        for flag, what in (
            ("--allow-principal", "principal (Type:name) to allow; repeatable"),
            ("--deny-principal", "principal (Type:name) to deny; repeatable"),
            ("--allow-host", "host (IP or *) the allow principals are allowed from"),
            ("--deny-host", "host (IP or *) the deny principals are denied from"),
            ("--operation", f"operation ({', '.join(_OPERATIONS)}); repeatable, default All"),
            ("--topic", "topic name (or * / a prefix); repeatable"),
            ("--group", "consumer group id; repeatable"),
            ("--transactional-id", "transactional id; repeatable"),
        ):
            parser.add_argument(flag, action="append", default=[], help=what)
        parser.add_argument(
            "--cluster", action="store_true", help="the cluster resource (kafka-cluster)"
        )
        parser.add_argument(
            "--principal", help="with --list: only ACLs of this principal (Type:name)"
        )
        parser.add_argument(
            "--resource-pattern-type",
            type=str.lower,
            choices=_PATTERN_TYPES,
            help="literal or prefixed for --add; also any or match for --list/--remove "
            "(default: literal for --add/--remove, any for --list)",
        )
        parser.add_argument(
            "--producer",
            action="store_true",
            help="producer ACLs: Write, Describe, Create on the topics",
        )
        parser.add_argument(
            "--consumer",
            action="store_true",
            help="consumer ACLs: Read, Describe on the topics, Read on the groups",
        )
        parser.add_argument(
            "--idempotent",
            action="store_true",
            help="with --producer: IdempotentWrite on the cluster",
        )
        parser.add_argument(
            "--force", action="store_true", help="remove without asking (required for --remove)"
        )
        parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait")

    # -- flags → resources and entries ----------------------------------------------------------
    def _pattern_type(self, options: dict[str, Any]) -> str:
        given = options["resource_pattern_type"]
        if options["list"]:
            return (given or "any").upper()
        pattern = (given or "literal").upper()
        if options["add"] and pattern not in ("LITERAL", "PREFIXED"):
            raise CommandError(
                "--resource-pattern-type: --add needs literal or prefixed, "
                f"not {given!r} (any and match are filters)"
            )
        return pattern

    def _resources(self, options: dict[str, Any]) -> list[tuple[str, str]]:
        resources = [("TOPIC", t) for t in options["topic"]]
        resources += [("GROUP", g) for g in options["group"]]
        resources += [("TRANSACTIONAL_ID", t) for t in options["transactional_id"]]
        if options["cluster"]:
            resources.append(("CLUSTER", CLUSTER_NAME))
        for _, name in resources:
            if not name:
                raise CommandError("resource names must not be empty")
        return resources

    def _principals(self, options: dict[str, Any]) -> list[tuple[str, str, str]]:
        """(permission, principal, host) for every allow and deny principal."""
        out = []
        for perm, flag in (("ALLOW", "allow"), ("DENY", "deny")):
            principals = [
                _principal(p, f"--{flag}-principal") for p in options[f"{flag}_principal"]
            ]
            hosts = options[f"{flag}_host"]
            if hosts and not principals:
                raise CommandError(f"--{flag}-host needs --{flag}-principal")
            for principal in principals:
                for host in hosts or ["*"]:
                    out.append((perm, principal, host))
        return out

    def _acls(self, options: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
        """Operations per resource, with --producer/--consumer expanded and checked."""
        ops = [parse_operation(o) for o in options["operation"]]
        resources = self._resources(options)
        wanted: dict[tuple[str, str], set[str]] = {}
        if options["producer"] or options["consumer"]:
            if options["operation"]:
                raise CommandError("--operation cannot be combined with --producer/--consumer")
            topics = [r for r in resources if r[0] == "TOPIC"]
            if not topics:
                raise CommandError("--producer/--consumer need --topic")
            if options["producer"]:
                for r in topics:
                    wanted.setdefault(r, set()).update({"Write", "Describe", "Create"})
                for r in resources:
                    if r[0] == "TRANSACTIONAL_ID":
                        wanted.setdefault(r, set()).update({"Write", "Describe"})
                if options["idempotent"]:
                    wanted.setdefault(("CLUSTER", CLUSTER_NAME), set()).add("IdempotentWrite")
            if options["consumer"]:
                groups = [r for r in resources if r[0] == "GROUP"]
                if not groups:
                    raise CommandError("--consumer needs --group")
                for r in topics:
                    wanted.setdefault(r, set()).update({"Read", "Describe"})
                for r in groups:
                    wanted.setdefault(r, set()).add("Read")
            return wanted
        if not resources:
            raise CommandError("name a resource: --topic, --group, --transactional-id or --cluster")
        for rtype, name in resources:
            chosen = set(ops or ["All"])
            unsupported = chosen - _SUPPORTED[rtype]
            if unsupported:
                raise CommandError(
                    f"--operation: ResourceType {rtype} only supports operations "
                    f"{', '.join(sorted(_SUPPORTED[rtype]))} (not {', '.join(sorted(unsupported))})"
                )
            wanted[(rtype, name)] = chosen
        return wanted

    # -- actions -------------------------------------------------------------------------------
    def handle(self, *args: Any, **options: Any) -> None:
        pattern = self._pattern_type(options)
        for op in options["operation"]:
            parse_operation(op)  # a bad name fails before any connection
        if options["list"]:
            self._list(options, pattern)
            return
        principals = self._principals(options)
        if options["add"]:
            if not principals:
                raise CommandError("--add needs --allow-principal or --deny-principal")
            self._add(options, pattern, principals)
        else:
            if not options["force"]:
                raise CommandError(
                    "--remove needs --force: there is no interactive confirmation prompt"
                )
            self._remove(options, pattern, principals)

    def _add(self, options: dict[str, Any], pattern: str, principals: list[Any]) -> None:
        from confluent_kafka.admin import AclBinding

        per_resource = self._acls(options)
        admin = admin_client(tool_target(options))
        for (rtype, name), ops in per_resource.items():
            bindings = [
                AclBinding(
                    confluent_resource_type(rtype), name, pattern, principal, host, _snake(op), perm
                )
                for perm, principal, host in principals
                for op in sorted(ops)
            ]
            self.stdout.write(
                f"Adding ACLs for resource `{_pattern_text(rtype, name, pattern)}`: \n"
                + "".join(f" \t{_entry_text(b)} \n" for b in bindings)
            )
            futures = admin.create_acls(bindings, request_timeout=options["timeout"])
            _wait(futures, options["timeout"], "add")
        for rtype, name in per_resource:
            self._print_current(admin, options, rtype, name, pattern)

    def _remove(self, options: dict[str, Any], pattern: str, principals: list[Any]) -> None:
        from confluent_kafka.admin import AclBindingFilter

        if principals:
            # The exact entries, as --add would build them (operation default All).
            resources = list(self._acls(options).items())
            filters = [
                AclBindingFilter(
                    confluent_resource_type(rtype), name, pattern, principal, host, _snake(op), perm
                )
                for (rtype, name), ops in resources
                for perm, principal, host in principals
                for op in sorted(ops)
            ]
        else:
            # kafka-acls: no principal removes every ACL of the resources.
            resources = [(r, set()) for r in self._resources(options)]
            if not resources:
                raise CommandError(
                    "name a resource: --topic, --group, --transactional-id or --cluster"
                )
            filters = [
                AclBindingFilter(
                    confluent_resource_type(rtype), name, pattern, None, None, "ANY", "ANY"
                )
                for (rtype, name), _ in resources
            ]
        admin = admin_client(tool_target(options))
        futures = admin.delete_acls(filters, request_timeout=options["timeout"])
        removed: list[Any] = []
        for future in futures.values():
            removed += _result(future, options["timeout"], "remove")
        self.stdout.write(f"Removed {len(removed)} ACLs.")
        self._print_groups(sorted(set(removed), key=acl_sort_key), heading="Removed ACLs")
        for (rtype, name), _ in resources:
            self._print_current(admin, options, rtype, name, pattern)

    def _list(self, options: dict[str, Any], pattern: str) -> None:
        from confluent_kafka.admin import AclBindingFilter

        principal = options["principal"]
        if principal:
            _principal(principal, "--principal")
        resources = self._resources(options) or [("ANY", None)]
        admin = admin_client(tool_target(options))
        seen: list[Any] = []
        for rtype, name in resources:
            flt = AclBindingFilter(
                confluent_resource_type(rtype), name, pattern, principal, None, "ANY", "ANY"
            )
            future = admin.describe_acls(flt, request_timeout=options["timeout"])
            seen += _result(future, options["timeout"], "list")
        self._print_groups(sorted(set(seen), key=acl_sort_key))

    def _print_current(
        self, admin: Any, options: dict[str, Any], rtype: str, name: str, pattern: str
    ) -> None:
        from confluent_kafka.admin import AclBindingFilter

        exact = pattern if pattern in ("LITERAL", "PREFIXED") else "ANY"
        flt = AclBindingFilter(
            confluent_resource_type(rtype), name, exact, None, None, "ANY", "ANY"
        )
        found = _result(
            admin.describe_acls(flt, request_timeout=options["timeout"]), options["timeout"], "list"
        )
        if found:
            self._print_groups(sorted(found, key=acl_sort_key))

    def _print_groups(self, bindings: list[Any], heading: str = "Current ACLs") -> None:
        for (rtype, name, pattern), group in groupby(
            bindings, key=lambda b: (kafka_resource_type(b), b.name, b.resource_pattern_type.name)
        ):
            self.stdout.write(
                f"{heading} for resource `{_pattern_text(rtype, name, pattern)}`: \n"
                + "".join(f" \t{_entry_text(b)} \n" for b in group)
            )


def _pattern_text(rtype: str, name: str, pattern: str) -> str:
    return f"ResourcePattern(resourceType={rtype}, name={name}, patternType={pattern})"


def _entry_text(b: Any) -> str:
    return (
        f"(principal={b.principal}, host={b.host}, operation={b.operation.name}, "
        f"permissionType={b.permission_type.name})"
    )


def _result(future: Any, timeout: float, action: str) -> list[Any]:
    """An AdminClient future's result (a list, or [] for None); errors as CommandError."""
    from confluent_kafka import KafkaException

    try:
        return list(future.result(timeout) or ())
    except KafkaException as exc:
        error = exc.args[0]
        raise CommandError(
            f"Error while executing ACL command ({action}): {error.name()}: {error.str()}"
        ) from None
    except TimeoutError:
        raise CommandError(
            f"Error while executing ACL command ({action}): no answer from the brokers in "
            f"{timeout:g} s (see --bootstrap-server)"
        ) from None


def _wait(futures: dict[Any, Any], timeout: float, action: str) -> None:
    for future in futures.values():
        _result(future, timeout, action)

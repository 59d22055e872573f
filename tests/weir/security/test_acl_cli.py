"""``manage.py acls`` (kafka-acls parity) as an operator runs it, against real brokers: add,
list (with filters), remove, --producer / --consumer expansion, and clean errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
)
from django.core.management import CommandError, call_command

from tests.weir.clients.test_cli import fails, ok
from tests.weir.inprocess import ThreadedBroker
from tests.weir.security.acl_fixtures import acl_pair, any_filter

__all__ = ["acl_pair"]  # the fixture, used by name below

pytestmark = pytest.mark.integration

LIT = ResourcePatternType.LITERAL
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def acls(broker: ThreadedBroker, *args: str) -> list[str]:
    return ["acls", "--bootstrap-server", broker.bootstrap, *args]


def acls_of(broker: ThreadedBroker, principal: str) -> set[tuple[str, str, str, str, str]]:
    """(resource type, name, pattern type, operation, permission) of ``principal``'s ACLs."""
    flt = any_filter(principal=principal)
    client = AdminClient({"bootstrap.servers": broker.bootstrap})
    found: list[AclBinding] = client.describe_acls(flt, request_timeout=10).result(10)
    return {
        (
            b.restype.name,
            b.name,
            b.resource_pattern_type.name,
            b.operation.name,
            b.permission_type.name,
        )
        for b in found
    }


def test_add_list_and_remove_like_kafka_acls(acl_pair: list[ThreadedBroker]) -> None:
    b = acl_pair[0]
    out = ok(
        *acls(b, "--add", "--allow-principal", "User:alice", "--operation", "Read"),
        *("--operation", "describe-configs", "--topic", "cli-orders"),
    )
    pattern = "ResourcePattern(resourceType=TOPIC, name=cli-orders, patternType=LITERAL)"
    assert f"Adding ACLs for resource `{pattern}`:" in out
    assert f"Current ACLs for resource `{pattern}`:" in out
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in out
    assert acls_of(b, "User:alice") == {
        ("TOPIC", "cli-orders", "LITERAL", "READ", "ALLOW"),
        ("TOPIC", "cli-orders", "LITERAL", "DESCRIBE_CONFIGS", "ALLOW"),
    }

    ok(
        *acls(b, "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.9"),
        *("--topic", "cli-", "--resource-pattern-type", "prefixed"),
    )
    # --list with a MATCH pattern: everything that applies to topic cli-orders.
    listed = ok(*acls(b, "--list", "--topic", "cli-orders", "--resource-pattern-type", "match"))
    assert pattern in listed
    assert "ResourcePattern(resourceType=TOPIC, name=cli-, patternType=PREFIXED)" in listed
    assert "(principal=User:mallory, host=10.0.0.9, operation=ALL, permissionType=DENY)" in listed
    by_principal = ok(*acls(b, "--list", "--principal", "User:mallory"))
    assert "User:alice" not in by_principal and "User:mallory" in by_principal

    refused = fails(*acls(b, "--remove", "--topic", "cli-orders"))
    assert "--force" in refused
    ok(
        *acls(b, "--remove", "--force", "--allow-principal", "User:alice"),
        *("--operation", "Read", "--topic", "cli-orders"),
    )
    assert acls_of(b, "User:alice") == {
        ("TOPIC", "cli-orders", "LITERAL", "DESCRIBE_CONFIGS", "ALLOW")
    }
    out = ok(*acls(b, "--remove", "--force", "--topic", "cli-orders"))
    assert "Removed 1 ACLs." in out
    assert acls_of(b, "User:alice") == set()
    assert acls_of(b, "User:mallory") == {("TOPIC", "cli-", "PREFIXED", "ALL", "DENY")}


def test_producer_and_consumer_flags_expand_like_kafka_acls(
    acl_pair: list[ThreadedBroker],
) -> None:
    b = acl_pair[0]
    ok(*acls(b, "--add", "--allow-principal", "User:app", "--producer", "--topic", "cli-p"))
    ok(
        *acls(b, "--add", "--allow-principal", "User:app", "--consumer"),
        *("--topic", "cli-p", "--group", "cli-g"),
    )
    ok(*acls(b, "--add", "--allow-principal", "User:app", "--cluster", "--operation", "Describe"))
    assert acls_of(b, "User:app") == {
        ("TOPIC", "cli-p", "LITERAL", "WRITE", "ALLOW"),
        ("TOPIC", "cli-p", "LITERAL", "DESCRIBE", "ALLOW"),
        ("TOPIC", "cli-p", "LITERAL", "CREATE", "ALLOW"),
        ("TOPIC", "cli-p", "LITERAL", "READ", "ALLOW"),
        ("GROUP", "cli-g", "LITERAL", "READ", "ALLOW"),
        ("BROKER", "kafka-cluster", "LITERAL", "DESCRIBE", "ALLOW"),
    }
    listed = ok(*acls(b, "--list", "--cluster"))
    assert "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)" in (
        listed
    )
    ok(
        *acls(b, "--remove", "--force", "--allow-principal", "User:app", "--consumer"),
        *("--topic", "cli-p", "--group", "cli-g"),
    )
    assert acls_of(b, "User:app") == {
        ("TOPIC", "cli-p", "LITERAL", "WRITE", "ALLOW"),
        ("TOPIC", "cli-p", "LITERAL", "CREATE", "ALLOW"),
        ("BROKER", "kafka-cluster", "LITERAL", "DESCRIBE", "ALLOW"),
    }


BAD_FLAGS = [
    (
        ["--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"],
        "--operation: unknown operation 'Fly'",
    ),
    (
        ["--add", "--allow-principal", "User:a", "--operation", "ClusterAction", "--topic", "t"],
        "--operation: ResourceType TOPIC only supports operations",
    ),
    (["--add", "--allow-principal", "alice", "--topic", "t"], "--allow-principal: a principal"),
    (
        [
            "--add",
            "--allow-principal",
            "User:a",
            "--topic",
            "t",
            "--resource-pattern-type",
            "match",
        ],
        "--resource-pattern-type: --add needs literal or prefixed",
    ),
    (["--add", "--topic", "t"], "--add needs --allow-principal or --deny-principal"),
    (["--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"], "--group"),
    (["--add", "--allow-principal", "User:a", "--operation", "Read"], "name a resource"),
]


@pytest.mark.parametrize(("args", "message"), BAD_FLAGS, ids=[m for _, m in BAD_FLAGS])
def test_bad_flags_fail_with_a_message_naming_the_flag(args: list[str], message: str) -> None:
    # No broker needed: flags are checked before any connection (the port is closed).
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("acls", "--bootstrap-server", "127.0.0.1:1", *args)


def test_an_unknown_operation_ends_the_process_cleanly_naming_the_flag() -> None:
    stderr = fails("acls", "--bootstrap-server", "127.0.0.1:1", "--add", "--topic", "t")
    assert "--add needs --allow-principal" in stderr
    stderr = fails(
        *("acls", "--bootstrap-server", "127.0.0.1:1", "--list", "--operation", "Jump"),
    )
    assert "--operation: unknown operation 'Jump'" in stderr


def test_runbroker_refuses_an_unknown_authorizer_class(tmp_path: Path) -> None:
    stderr = fails(
        *("runbroker", "--broker-id", "1", "--listen", "127.0.0.1:0"),
        *("--data-dir", str(tmp_path), "--config", "authorizer.class.name=com.example.Nope"),
    )
    assert "authorizer.class.name 'com.example.Nope' is not supported" in stderr

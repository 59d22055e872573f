"""Topic ACL sync: MM2's rule on plain data, then between two in-process Weir clusters with
the standard authorizer on."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.weir.inprocess import threaded_broker
from weir.mirror.acls import AclEntry, plan_acls, sync_acls

SECURED = (
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:ANONYMOUS",  # the PLAINTEXT principal: the mirror and this test
)


def test_write_is_never_copied_and_all_becomes_read() -> None:
    source = [
        AclEntry("orders", "User:bob", "*", "READ", "ALLOW"),
        AclEntry("orders", "User:bob", "*", "WRITE", "ALLOW"),
        AclEntry("orders", "User:carol", "*", "ALL", "ALLOW"),
        AclEntry("orders", "User:eve", "10.0.0.9", "WRITE", "DENY"),
        AclEntry("other", "User:bob", "*", "READ", "ALLOW"),  # not mirrored
    ]
    assert plan_acls(source, {"orders": "east.orders"}) == [
        AclEntry("east.orders", "User:bob", "*", "READ", "ALLOW"),
        AclEntry("east.orders", "User:carol", "*", "READ", "ALLOW"),
        AclEntry("east.orders", "User:eve", "10.0.0.9", "WRITE", "DENY"),
    ]


def binding(
    topic: str,
    principal: str,
    op: AclOperation,
    permission: AclPermissionType,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, topic, pattern, principal, "*", op, permission)


def test_topic_acls_reach_the_remote_topic(redis_server: str, tmp_path: Path) -> None:
    with (
        threaded_broker(data_dir=tmp_path / "e", redis_url=redis_server, configs=SECURED) as east,
        threaded_broker(data_dir=tmp_path / "w", redis_url=redis_server, configs=SECURED) as west,
    ):
        source = AdminClient({"bootstrap.servers": east.bootstrap})
        target = AdminClient({"bootstrap.servers": west.bootstrap})
        created = source.create_acls(
            [
                binding("orders", "User:bob", AclOperation.READ, AclPermissionType.ALLOW),
                binding("orders", "User:bob", AclOperation.WRITE, AclPermissionType.ALLOW),
                binding("orders", "User:carol", AclOperation.ALL, AclPermissionType.ALLOW),
                binding("orders", "User:eve", AclOperation.READ, AclPermissionType.DENY),
                binding(
                    "ord",
                    "User:bob",
                    AclOperation.READ,
                    AclPermissionType.ALLOW,
                    ResourcePatternType.PREFIXED,
                ),
            ]
        )
        for future in created.values():
            future.result(30)
        sent = sync_acls(source, target, {"orders": "east.orders"}, cluster="west")
        assert sent is not None and len(sent) == 3
        any_topic = AclBindingFilter(
            ResourceType.TOPIC,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        deadline = time.monotonic() + 10
        while True:
            found = {
                (b.name, b.principal, b.operation.name, b.permission_type.name)
                for b in target.describe_acls(any_topic).result(30)
            }
            if len(found) >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert found == {
            ("east.orders", "User:bob", "READ", "ALLOW"),
            ("east.orders", "User:carol", "READ", "ALLOW"),
            ("east.orders", "User:eve", "READ", "DENY"),
        }
        # Idempotent: a second round sends the same bindings and changes nothing.
        assert sync_acls(source, target, {"orders": "east.orders"}, cluster="west") == sent

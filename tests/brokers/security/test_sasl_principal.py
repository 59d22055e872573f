"""The authenticated principal reaches the authorizer: ``User:<name>`` over SASL and
``User:ANONYMOUS`` over PLAINTEXT (checked through DescribeAcls, which needs Describe on the
cluster)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.brokers.clients.conftest import BrokerProcess, free_port
from tests.brokers.security.conftest import USERS, SaslBroker, add_user, wait_port

_ANY = AclBindingFilter(
    ResourceType.ANY,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


@pytest.fixture(scope="module")
def acl_broker(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    directory: Path = tmp_path_factory.mktemp("sasl-acl-broker")
    cluster_id = f"test-{uuid.uuid4().hex[:12]}"
    for user, (password, mechanisms) in USERS.items():
        add_user(redis_server, cluster_id, user, password, mechanisms)
    sasl_port = free_port()
    process = BrokerProcess(
        broker_id=1,
        data_dir=directory / "broker-1",
        redis_url=redis_server,
        cluster_id=cluster_id,
        configs=[
            f"listeners=SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:alice",
        ],
        log_path=directory / "broker-1.log",
    )
    process.start()
    try:
        wait_port(sasl_port)
        yield SaslBroker(process, sasl_port, redis_server, cluster_id)
    finally:
        process.stop()


def _admin(broker: SaslBroker, user: str | None) -> AdminClient:
    if user is None:
        return AdminClient({"bootstrap.servers": broker.plaintext})
    return AdminClient(
        {
            "bootstrap.servers": broker.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": USERS[user][0],
        }
    )


def _binding(principal: str) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        f"t-{uuid.uuid4().hex[:6]}",
        ResourcePatternType.LITERAL,
        principal,
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )


def test_super_user_authenticated_over_scram_is_authorized(acl_broker: SaslBroker) -> None:
    admin = _admin(acl_broker, "alice")
    binding = _binding("User:carol")
    for future in admin.create_acls([binding]).values():
        future.result(timeout=10)
    assert binding in admin.describe_acls(_ANY).result(timeout=10)


@pytest.mark.parametrize("user", ["bob", None], ids=["User:bob", "User:ANONYMOUS"])
def test_other_principals_are_denied(acl_broker: SaslBroker, user: str | None) -> None:
    admin = _admin(acl_broker, user)  # keep the handle alive until the futures resolve
    with pytest.raises(Exception, match=r"CLUSTER_AUTHORIZATION_FAILED|[Aa]uthoriz"):
        for future in admin.create_acls([_binding("User:bob")]).values():
            future.result(timeout=10)
    # librdkafka hides DescribeAcls' top-level error: a denied principal sees no bindings.
    assert admin.describe_acls(_ANY).result(timeout=10) == []

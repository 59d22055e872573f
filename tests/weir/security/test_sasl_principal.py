"""The authenticated principal reaches the authorizer: ``User:<name>`` over SASL and
``User:ANONYMOUS`` over PLAINTEXT (checked through DescribeAcls, which needs Describe on the
cluster)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.weir.security.acl_fixtures import any_filter
from tests.weir.security.conftest import SaslBroker, sasl_conf

_ANY = any_filter()


def _admin(broker: SaslBroker, user: str | None) -> AdminClient:
    if user is None:
        return AdminClient({"bootstrap.servers": broker.plaintext})
    return AdminClient(sasl_conf(broker.sasl, user))


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

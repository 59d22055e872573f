"""CreateAcls / DescribeAcls / DeleteAcls against real broker processes with confluent-kafka's
AdminClient, raw kio requests for what the client refuses to send, and the authorizer
guarding the ACL APIs themselves."""

from __future__ import annotations

import time
import warnings
from dataclasses import replace

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from tests.weir.cluster.conftest import raw_request
from tests.weir.inprocess import ThreadedBroker
from tests.weir.security.acl_fixtures import acl_guarded, acl_pair, any_filter

__all__ = ["acl_guarded", "acl_pair"]  # fixtures used by name below

pytestmark = pytest.mark.integration

TIMEOUT = 10.0
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LIT, PRE = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED


ANY_DESCRIBE = DescribeAclsRequest(
    resource_type_filter=i8(1),
    resource_name_filter=None,
    pattern_type_filter=i8(1),
    principal_filter=None,
    host_filter=None,
    operation=i8(1),
    permission_type=i8(1),
)


def admin(broker: ThreadedBroker) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def binding(
    name: str,
    op: AclOperation,
    *,
    principal: str = "User:alice",
    rtype: ResourceType = ResourceType.TOPIC,
    pattern: ResourcePatternType = LIT,
    perm: AclPermissionType = ALLOW,
    host: str = "*",
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def create(client: AdminClient, bindings: list[AclBinding]) -> None:
    for future in client.create_acls(bindings, request_timeout=TIMEOUT).values():
        future.result(TIMEOUT)


def describe(client: AdminClient, flt: AclBindingFilter) -> set[AclBinding]:
    return set(client.describe_acls(flt, request_timeout=TIMEOUT).result(TIMEOUT))


def test_create_describe_with_filters_and_delete_round_trip(
    acl_pair: list[ThreadedBroker],
) -> None:
    client = admin(acl_pair[0])
    read_t = binding("orders", AclOperation.READ)
    write_prefix = binding("orders-", AclOperation.WRITE, pattern=PRE, principal="User:bob")
    star = binding("*", AclOperation.DESCRIBE, principal="User:carol")
    group = binding("billing", AclOperation.READ, rtype=ResourceType.GROUP)
    deny = binding("orders", AclOperation.WRITE, perm=DENY, host="10.0.0.9")
    create(client, [read_t, write_prefix, star, group, deny])

    assert describe(client, any_filter()) >= {read_t, write_prefix, star, group, deny}
    assert describe(client, any_filter(restype=ResourceType.GROUP)) == {group}
    assert describe(client, any_filter(principal="User:bob")) == {write_prefix}
    assert describe(client, any_filter(permission_type=DENY)) == {deny}
    assert describe(client, any_filter(name="orders", resource_pattern_type=LIT)) == {
        read_t,
        deny,
    }
    # MATCH: every ACL that applies to topic "orders-eu": the wildcard and the prefix
    match = any_filter(
        restype=ResourceType.TOPIC,
        name="orders-eu",
        resource_pattern_type=ResourcePatternType.MATCH,
    )
    assert describe(client, match) == {write_prefix, star}

    futures = client.delete_acls(
        [any_filter(principal="User:alice"), any_filter(principal="User:nobody")],
        request_timeout=TIMEOUT,
    )
    deleted = [set(f.result(TIMEOUT)) for f in futures.values()]
    assert {read_t, group, deny} in deleted and set() in deleted
    assert describe(client, any_filter()) == {write_prefix, star}


def test_an_acl_created_on_one_broker_is_seen_by_the_other_within_a_second(
    acl_pair: list[ThreadedBroker],
) -> None:
    new = binding("cross-broker", AclOperation.ALTER_CONFIGS, principal="User:dave")
    only_new = any_filter(principal="User:dave")
    other = admin(acl_pair[1])
    create(admin(acl_pair[0]), [new])
    started = time.monotonic()
    while describe(other, only_new) != {new}:
        assert time.monotonic() - started < 1.5, "broker 2 did not see the ACL"
        time.sleep(0.05)


def test_invalid_creations_get_invalid_request_and_the_valid_ones_are_kept(
    acl_pair: list[ThreadedBroker],
) -> None:
    def creation(**kw: object) -> AclCreation:
        values: dict[str, object] = {
            "resource_type": i8(2),
            "resource_name": "bad-input",
            "resource_pattern_type": i8(3),
            "principal": "User:eve",
            "host": "*",
            "operation": i8(3),
            "permission_type": i8(3),
        }
        values.update(kw)
        return AclCreation(**values)  # type: ignore[arg-type]

    response = raw_request(
        acl_pair[0].port,
        CreateAclsRequest(
            creations=(
                creation(),
                creation(resource_pattern_type=i8(2)),  # MATCH is a filter, not a pattern
                creation(operation=i8(1)),  # ANY
                creation(principal="eve"),  # not Type:name
                creation(resource_type=i8(99)),  # unknown code
                creation(resource_name=""),
            )
        ),
    )
    codes = [r.error_code for r in response.results]
    assert codes == [ErrorCode.none] + [ErrorCode.invalid_request] * 5
    assert all(r.error_message for r in response.results[1:])
    assert describe(admin(acl_pair[0]), any_filter(principal="User:eve")) == {
        binding("bad-input", AclOperation.READ, principal="User:eve")
    }


def test_filters_with_unknown_fields_get_invalid_request(acl_pair: list[ThreadedBroker]) -> None:
    describe_bad = replace(ANY_DESCRIBE, resource_type_filter=i8(0))  # UNKNOWN
    response = raw_request(acl_pair[0].port, describe_bad)
    assert response.error_code == ErrorCode.invalid_request and response.resources == ()

    def flt(pattern: int) -> DeleteAclsFilter:
        return DeleteAclsFilter(
            resource_type_filter=i8(1),
            resource_name_filter=None,
            pattern_type_filter=i8(pattern),
            principal_filter="User:nobody-here",
            host_filter=None,
            operation=i8(1),
            permission_type=i8(1),
        )

    deleted = raw_request(acl_pair[0].port, DeleteAclsRequest(filters=(flt(0), flt(1))))
    codes = [r.error_code for r in deleted.filter_results]
    assert codes == [ErrorCode.invalid_request, ErrorCode.none]


def test_with_the_authorizer_on_the_acl_apis_need_cluster_permissions(
    acl_guarded: ThreadedBroker,
) -> None:
    client = admin(acl_guarded)
    # No ACL on the cluster yet and allow.everyone.if.no.acl.found=true: ANONYMOUS may.
    assert describe(client, any_filter()) == set()
    # confluent-kafka names the Cluster resource type (code 4) BROKER.
    cluster_alter = binding(
        "kafka-cluster", AclOperation.ALTER, rtype=ResourceType.BROKER, principal="User:admin"
    )
    create(client, [cluster_alter])
    # Now the cluster has ACLs, none for ANONYMOUS: the ACL APIs are refused. (librdkafka
    # drops DescribeAcls' top-level error when no resource comes back: read it raw.)
    refused = raw_request(acl_guarded.port, ANY_DESCRIBE)
    assert refused.error_code == ErrorCode.cluster_authorization_failed
    assert refused.resources == ()
    with pytest.raises(KafkaException) as denied:
        create(client, [binding("t", AclOperation.READ)])
    assert denied.value.args[0].code() == ErrorCode.cluster_authorization_failed
    futures = client.delete_acls([any_filter()], request_timeout=TIMEOUT)
    with pytest.raises(KafkaException) as denied:
        for future in futures.values():
            future.result(TIMEOUT)
    assert denied.value.args[0].code() == ErrorCode.cluster_authorization_failed


def test_kafka_python_admin_round_trip(acl_pair: list[ThreadedBroker]) -> None:
    """kafka-python speaks other versions of the ACL APIs than librdkafka."""
    with warnings.catch_warnings():
        # kafka-python loads its schemas through a deprecated importlib API (see
        # tests/weir/clients/helpers.py); the suite turns warnings into errors.
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.admin import (
            ACL,
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            KafkaAdminClient,
            ResourcePattern,
            ResourcePatternFilter,
        )
        from kafka.admin import ResourceType as KpResourceType

    client = KafkaAdminClient(bootstrap_servers=acl_pair[1].bootstrap)
    try:
        acl = ACL(
            principal="User:kp",
            host="*",
            operation=ACLOperation.WRITE,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(
                KpResourceType.TOPIC, "kp-", ACLResourcePatternType.PREFIXED
            ),
        )
        created = client.create_acls([acl])
        assert created["failed"] == [] and len(created["succeeded"]) == 1
        only_kp = ACLFilter(
            principal="User:kp",
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                KpResourceType.ANY, None, ACLResourcePatternType.ANY
            ),
        )
        found, error = client.describe_acls(only_kp)
        assert error.errno == 0
        assert [(a.principal, a.operation, a.resource_pattern.resource_name) for a in found] == [
            ("User:kp", ACLOperation.WRITE, "kp-")
        ]
        deleted = client.delete_acls([only_kp])
        assert len(deleted) == 1 and len(deleted[0][1]) == 1
        assert client.describe_acls(only_kp)[0] == []
    finally:
        client.close()

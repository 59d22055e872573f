"""The pure ACL model: Kafka's authorizer decisions, implication rules, filters, validation.

The cases mirror the semantics Kafka's ``AclAuthorizerTest`` / ``StandardAuthorizerTest``
check: deny wins, wildcard principal/host/resource, prefixed patterns, implied Describe and
DescribeConfigs, super users, and ``allow.everyone.if.no.acl.found``.
"""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from weir.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclIndex,
    AclOperation,
    AclPermission,
    Authorizer,
    InvalidAclError,
    PatternType,
    ResourceType,
    authorized_operations,
    client_host,
    denied_error,
    parse_super_users,
    validate_binding,
    validate_filter,
)

Op = AclOperation
R = ResourceType
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermission.ALLOW, AclPermission.DENY
ALICE, BOB = "User:alice", "User:bob"
HOST, OTHER_HOST = "192.168.0.1", "10.0.0.9"


def acl(
    name: str,
    op: AclOperation,
    perm: AclPermission = ALLOW,
    *,
    principal: str = ALICE,
    host: str = "*",
    rtype: ResourceType = R.TOPIC,
    pattern: PatternType = LIT,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


# One ACL of ALICE's on topic "t", ALICE asking from HOST:
# (the operation the ACL allows, the operation asked for, expected).
IMPLICATIONS = [
    # All allows everything
    (Op.ALL, Op.DELETE, True),
    (Op.ALL, Op.DESCRIBE_CONFIGS, True),
    # Describe is implied by Read, Write, Delete, Alter
    (Op.READ, Op.DESCRIBE, True),
    (Op.WRITE, Op.DESCRIBE, True),
    (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True),
    # ... but not by Create or DescribeConfigs
    (Op.CREATE, Op.DESCRIBE, False),
    (Op.DESCRIBE_CONFIGS, Op.DESCRIBE, False),
    # implication is one way: Describe does not grant Read
    (Op.DESCRIBE, Op.READ, False),
    # DescribeConfigs is implied by AlterConfigs, not the reverse
    (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
    # Alter does not imply AlterConfigs
    (Op.ALTER, Op.ALTER_CONFIGS, False),
]


# (ACLs, principal, host, operation, resource type, resource name, expected)
CASES = [
    # no ACL on the resource: deny (allow.everyone off)
    ([], ALICE, HOST, Op.READ, R.TOPIC, "t", False),
    # an ACL for someone else on the resource still makes it "has ACLs": deny
    ([acl("t", Op.READ, principal=BOB)], ALICE, HOST, Op.READ, R.TOPIC, "t", False),
    # plain allow
    ([acl("t", Op.READ)], ALICE, HOST, Op.READ, R.TOPIC, "t", True),
    # allow for another operation does not grant this one
    ([acl("t", Op.READ)], ALICE, HOST, Op.WRITE, R.TOPIC, "t", False),
    # the resource name must match for literal patterns
    ([acl("t", Op.READ)], ALICE, HOST, Op.READ, R.TOPIC, "t2", False),
    # the resource type must match
    ([acl("t", Op.READ)], ALICE, HOST, Op.READ, R.GROUP, "t", False),
    # deny wins over allow
    ([acl("t", Op.READ), acl("t", Op.READ, DENY)], ALICE, HOST, Op.READ, R.TOPIC, "t", False),
    # deny All beats allow Read
    ([acl("t", Op.READ), acl("t", Op.ALL, DENY)], ALICE, HOST, Op.READ, R.TOPIC, "t", False),
    # deny on Read does not deny Write
    ([acl("t", Op.WRITE), acl("t", Op.READ, DENY)], ALICE, HOST, Op.WRITE, R.TOPIC, "t", True),
    # deny on Read does not deny the Describe that an allowed Write implies
    (
        [acl("t", Op.WRITE), acl("t", Op.READ, DENY)],
        ALICE,
        HOST,
        Op.DESCRIBE,
        R.TOPIC,
        "t",
        True,
    ),
    # deny Describe beats Describe implied by Read
    (
        [acl("t", Op.READ), acl("t", Op.DESCRIBE, DENY)],
        ALICE,
        HOST,
        Op.DESCRIBE,
        R.TOPIC,
        "t",
        False,
    ),
    # what one allow ACL grants, its operation and the ones it implies
    *[
        ([acl("t", allowed)], ALICE, HOST, asked, R.TOPIC, "t", expected)
        for allowed, asked, expected in IMPLICATIONS
    ],
    # wildcard principal
    ([acl("t", Op.READ, principal="User:*")], BOB, HOST, Op.READ, R.TOPIC, "t", True),
    # wildcard principal deny beats a specific allow
    (
        [acl("t", Op.READ), acl("t", Op.READ, DENY, principal="User:*")],
        ALICE,
        HOST,
        Op.READ,
        R.TOPIC,
        "t",
        False,
    ),
    # host must match: specific host
    ([acl("t", Op.READ, host=HOST)], ALICE, HOST, Op.READ, R.TOPIC, "t", True),
    ([acl("t", Op.READ, host=HOST)], ALICE, OTHER_HOST, Op.READ, R.TOPIC, "t", False),
    # deny from one host only
    (
        [acl("t", Op.READ), acl("t", Op.READ, DENY, host=OTHER_HOST)],
        ALICE,
        HOST,
        Op.READ,
        R.TOPIC,
        "t",
        True,
    ),
    (
        [acl("t", Op.READ), acl("t", Op.READ, DENY, host=OTHER_HOST)],
        ALICE,
        OTHER_HOST,
        Op.READ,
        R.TOPIC,
        "t",
        False,
    ),
    # wildcard resource name
    ([acl("*", Op.READ)], ALICE, HOST, Op.READ, R.TOPIC, "anything", True),
    ([acl("*", Op.READ, DENY), acl("t", Op.READ)], ALICE, HOST, Op.READ, R.TOPIC, "t", False),
    # prefixed patterns
    ([acl("fin-", Op.WRITE, pattern=PRE)], ALICE, HOST, Op.WRITE, R.TOPIC, "fin-ledger", True),
    ([acl("fin-", Op.WRITE, pattern=PRE)], ALICE, HOST, Op.WRITE, R.TOPIC, "fin-", True),
    ([acl("fin-", Op.WRITE, pattern=PRE)], ALICE, HOST, Op.WRITE, R.TOPIC, "fi", False),
    ([acl("fin-", Op.WRITE, pattern=PRE)], ALICE, HOST, Op.WRITE, R.TOPIC, "xfin-a", False),
    # a literal named like a prefix does not match longer names
    ([acl("fin-", Op.WRITE)], ALICE, HOST, Op.WRITE, R.TOPIC, "fin-ledger", False),
    # prefixed deny beats literal allow
    (
        [acl("fin-ledger", Op.READ), acl("fin", Op.READ, DENY, pattern=PRE)],
        ALICE,
        HOST,
        Op.READ,
        R.TOPIC,
        "fin-ledger",
        False,
    ),
    # a prefixed "*" is a plain prefix, not a wildcard
    ([acl("*", Op.READ, pattern=PRE)], ALICE, HOST, Op.READ, R.TOPIC, "t", False),
    # group and cluster resources
    ([acl("g", Op.READ, rtype=R.GROUP)], ALICE, HOST, Op.READ, R.GROUP, "g", True),
    (
        [acl("kafka-cluster", Op.CLUSTER_ACTION, rtype=R.CLUSTER)],
        ALICE,
        HOST,
        Op.CLUSTER_ACTION,
        R.CLUSTER,
        "kafka-cluster",
        True,
    ),
    (
        [acl("kafka-cluster", Op.IDEMPOTENT_WRITE, rtype=R.CLUSTER)],
        ALICE,
        HOST,
        Op.IDEMPOTENT_WRITE,
        R.CLUSTER,
        "kafka-cluster",
        True,
    ),
    (
        [acl("tx-", Op.WRITE, rtype=R.TRANSACTIONAL_ID, pattern=PRE)],
        ALICE,
        HOST,
        Op.WRITE,
        R.TRANSACTIONAL_ID,
        "tx-1",
        True,
    ),
]


@pytest.mark.parametrize(
    ("acls", "principal", "host", "op", "rtype", "name", "expected"),
    CASES,
    ids=[f"case{i}" for i in range(len(CASES))],
)
def test_authorizer_decision_table(
    acls: list[AclBinding],
    principal: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    expected: bool,
) -> None:
    authorizer = Authorizer(AclIndex(acls))
    assert authorizer.authorize(principal, host, op, rtype, name) is expected


def test_allow_everyone_if_no_acl_found_applies_only_to_resources_without_acls() -> None:
    authorizer = Authorizer(
        AclIndex([acl("guarded", Op.READ, principal=BOB)]), allow_everyone_if_no_acl=True
    )
    assert authorizer.authorize(ALICE, HOST, Op.WRITE, R.TOPIC, "open")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, R.TOPIC, "guarded")
    assert authorizer.authorize(BOB, HOST, Op.READ, R.TOPIC, "guarded")


def test_super_users_bypass_deny_acls_and_missing_acls() -> None:
    authorizer = Authorizer(
        AclIndex([acl("t", Op.ALL, DENY, principal="User:*")]),
        super_users=parse_super_users("User:admin; User:ops"),
    )
    assert authorizer.authorize("User:admin", HOST, Op.READ, R.TOPIC, "t")
    assert authorizer.authorize("User:ops", HOST, Op.ALTER, R.CLUSTER, "kafka-cluster")
    assert not authorizer.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")


def test_parse_super_users_splits_on_semicolons_and_ignores_blanks() -> None:
    assert parse_super_users("User:a;;User:b ;") == {"User:a", "User:b"}
    assert parse_super_users("") == frozenset()
    assert parse_super_users(None) == frozenset()


def test_authorizer_reads_a_callable_index_on_every_check() -> None:
    current = [AclIndex()]
    authorizer = Authorizer(lambda: current[0])
    assert not authorizer.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")
    current[0] = AclIndex([acl("t", Op.READ)])
    assert authorizer.authorize(ALICE, HOST, Op.READ, R.TOPIC, "t")


class _Ctx:
    peer_host = HOST


def test_authorize_connection_uses_ctx_principal_else_anonymous() -> None:
    authorizer = Authorizer(AclIndex([acl("t", Op.READ, principal="User:ANONYMOUS")]))
    assert authorizer.authorize_connection(_Ctx(), Op.READ, R.TOPIC, "t")
    ctx = _Ctx()
    ctx.principal = ALICE  # type: ignore[attr-defined]
    assert not authorizer.authorize_connection(ctx, Op.READ, R.TOPIC, "t")


def test_ipv4_mapped_peers_match_acls_for_their_ipv4_address() -> None:
    assert client_host("::ffff:192.168.0.1") == HOST
    assert client_host("::1") == "::1" and client_host(HOST) == HOST
    authorizer = Authorizer(AclIndex([acl("t", Op.READ, host=HOST)]))
    ctx = _Ctx()
    ctx.peer_host = "::ffff:192.168.0.1"
    ctx.principal = ALICE  # type: ignore[attr-defined]
    assert authorizer.authorize_connection(ctx, Op.READ, R.TOPIC, "t")


def test_denied_error_is_the_authorization_error_of_the_resource_type() -> None:
    assert denied_error(R.TOPIC) == ErrorCode.topic_authorization_failed
    assert denied_error(R.GROUP) == ErrorCode.group_authorization_failed
    assert denied_error(R.CLUSTER) == ErrorCode.cluster_authorization_failed
    assert denied_error(R.TRANSACTIONAL_ID) == ErrorCode.transactional_id_authorization_failed


# -- filters ---------------------------------------------------------------------------------
LIT_T = acl("t", Op.READ)
LIT_STAR = acl("*", Op.WRITE, principal=BOB)
PRE_T = acl("t", Op.DESCRIBE, pattern=PRE)
PRE_OTHER = acl("x", Op.READ, pattern=PRE)
GROUP_T = acl("t", Op.READ, rtype=R.GROUP)
ALL_BINDINGS = [LIT_T, LIT_STAR, PRE_T, PRE_OTHER, GROUP_T]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (AclBindingFilter(), set(ALL_BINDINGS)),
        (AclBindingFilter(resource_type=R.TOPIC), {LIT_T, LIT_STAR, PRE_T, PRE_OTHER}),
        # ANY pattern type + name: exact name, any pattern type
        (AclBindingFilter(resource_name="t"), {LIT_T, PRE_T, GROUP_T}),
        # LITERAL + name: only that literal
        (AclBindingFilter(resource_name="t", pattern_type=LIT), {LIT_T, GROUP_T}),
        (AclBindingFilter(resource_name="*", pattern_type=LIT), {LIT_STAR}),
        (AclBindingFilter(pattern_type=PRE), {PRE_T, PRE_OTHER}),
        # MATCH: everything that applies to topic "tea": literal "*" and prefix "t"
        (
            AclBindingFilter(
                resource_type=R.TOPIC, resource_name="tea", pattern_type=PatternType.MATCH
            ),
            {LIT_STAR, PRE_T},
        ),
        # MATCH on "t": literal t, wildcard, prefix t
        (
            AclBindingFilter(
                resource_type=R.TOPIC, resource_name="t", pattern_type=PatternType.MATCH
            ),
            {LIT_T, LIT_STAR, PRE_T},
        ),
        (AclBindingFilter(principal=BOB), {LIT_STAR}),
        (AclBindingFilter(operation=Op.DESCRIBE), {PRE_T}),
        (AclBindingFilter(permission=DENY), set()),
        (AclBindingFilter(host="10.1.1.1"), set()),
    ],
)
def test_filters_match_like_kafka_resource_pattern_filter(
    flt: AclBindingFilter, expected: set[AclBinding]
) -> None:
    assert set(AclIndex(ALL_BINDINGS).select(flt)) == expected


@pytest.mark.parametrize(
    "binding",
    [
        acl("t", Op.READ, pattern=PatternType.ANY),
        acl("t", Op.READ, pattern=PatternType.MATCH),
        acl("t", Op.ANY),
        acl("t", Op.UNKNOWN),
        acl("t", Op.READ, AclPermission.ANY),
        acl("t", Op.READ, rtype=R.ANY),
        acl("", Op.READ),
        acl("t", Op.READ, principal="alice"),
        acl("t", Op.READ, host="not an ip"),
    ],
)
def test_invalid_bindings_are_rejected(binding: AclBinding) -> None:
    with pytest.raises(InvalidAclError):
        validate_binding(binding)


def test_valid_binding_passes_validation_and_round_trips_json() -> None:
    binding = acl("fin-", Op.IDEMPOTENT_WRITE, DENY, host="::1", pattern=PRE)
    validate_binding(binding)
    assert AclBinding.from_json(binding.to_json()) == binding


@pytest.mark.parametrize(
    "flt",
    [
        AclBindingFilter(resource_type=R.UNKNOWN),
        AclBindingFilter(pattern_type=PatternType.UNKNOWN),
        AclBindingFilter(operation=Op.UNKNOWN),
        AclBindingFilter(permission=AclPermission.UNKNOWN),
    ],
)
def test_filters_with_unknown_fields_are_invalid(flt: AclBindingFilter) -> None:
    with pytest.raises(InvalidAclError):
        validate_filter(flt)


def test_authorized_operations_sets_one_bit_per_granted_supported_operation() -> None:
    everything = authorized_operations(lambda op: True, ResourceType.TOPIC)
    # Read(3) Write(4) Create(5) Delete(6) Alter(7) Describe(8) DescribeConfigs(10)
    # AlterConfigs(11): Kafka's supported topic operations, never All/Any/ClusterAction.
    assert everything == sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))
    only_read = authorized_operations(lambda op: op == AclOperation.READ, ResourceType.GROUP)
    assert only_read == 1 << 3
    assert authorized_operations(lambda op: True, ResourceType.CLUSTER) & (1 << 9)  # ClusterAction
    assert authorized_operations(lambda op: False, ResourceType.CLUSTER) == 0

"""Kafka's ACL model and the authorizer that decides one access check (pure, no I/O).

Theory of operation
-------------------
An ACL binding is a *resource pattern* (resource type, name, pattern type LITERAL or
PREFIXED) plus an *access control entry* (principal ``Type:name``, host, operation,
permission ALLOW or DENY). The numeric codes are Kafka's own (``ResourceType``,
``PatternType``, ``AclOperation``, ``AclPermissionType``), so bindings go to and from the
wire unchanged.

``Authorizer.authorize(principal, host, operation, resource_type, name)`` follows Kafka's
``AclAuthorizer`` / ``StandardAuthorizer``:

1. a principal listed in ``super.users`` is always allowed;
2. the ACLs *on the resource* are those whose pattern matches it: LITERAL with the same
   name, LITERAL ``*`` (wildcard), or PREFIXED with a prefix of the name;
3. none at all → allowed only if ``allow.everyone.if.no.acl.found``;
4. a DENY entry matching principal (or ``User:*``), host (or ``*``) and the operation (or
   All) → denied; deny wins over any allow;
5. otherwise allowed if an ALLOW entry matches, where Describe is implied by Read, Write,
   Delete and Alter, DescribeConfigs by AlterConfigs, and All implies everything.

Filters (``AclBindingFilter``) are what DescribeAcls and DeleteAcls carry: ANY matches
any value; pattern type MATCH matches every pattern that would apply to the named resource
(the literal name, the ``*`` wildcard and the matching prefixes). The authorizer reads an
``AclIndex`` (an immutable snapshot built from all bindings), so a check is a few dict
lookups and never waits for Redis.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import IntEnum

from kio.schema.errors import ErrorCode

__all__ = [
    "ANONYMOUS",
    "AUTHORIZED_OPERATIONS_OMITTED",
    "CLUSTER_NAME",
    "SUPPORTED_OPERATIONS",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AclBinding",
    "AclBindingFilter",
    "AclIndex",
    "AclOperation",
    "AclPermission",
    "Authorizer",
    "InvalidAclError",
    "PatternType",
    "ResourceType",
    "authorized_operations",
    "client_host",
    "denied_error",
    "operation",
    "parse_super_users",
    "pattern_type",
    "permission",
    "resource_type",
    "validate_binding",
    "validate_filter",
]

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
ANONYMOUS = "User:ANONYMOUS"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermission(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _code(enum: type[IntEnum], value: int) -> IntEnum:
    """Kafka's ``fromCode``: a code this version does not know is UNKNOWN."""
    try:
        return enum(value)
    except ValueError:
        return enum(0)


def resource_type(value: int) -> ResourceType:
    return _code(ResourceType, value)  # type: ignore[return-value]


def pattern_type(value: int) -> PatternType:
    return _code(PatternType, value)  # type: ignore[return-value]


def operation(value: int) -> AclOperation:
    return _code(AclOperation, value)  # type: ignore[return-value]


def permission(value: int) -> AclPermission:
    return _code(AclPermission, value)  # type: ignore[return-value]


# Kafka's implication rules: an ALLOW for any of these grants the key operation.
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.ALL,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.ALL}
    ),
}

_CONCRETE_RESOURCES = frozenset(
    {
        ResourceType.TOPIC,
        ResourceType.GROUP,
        ResourceType.CLUSTER,
        ResourceType.TRANSACTIONAL_ID,
        ResourceType.DELEGATION_TOKEN,
        ResourceType.USER,
    }
)


class InvalidAclError(ValueError):
    """A binding or filter Kafka rejects with INVALID_REQUEST; the message says why."""


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: resource pattern + access control entry."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    def to_json(self) -> dict[str, object]:
        return {
            "resource_type": int(self.resource_type),
            "resource_name": self.resource_name,
            "pattern_type": int(self.pattern_type),
            "principal": self.principal,
            "host": self.host,
            "operation": int(self.operation),
            "permission": int(self.permission),
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AclBinding:
        return cls(
            resource_type=resource_type(int(data["resource_type"])),  # type: ignore[call-overload]
            resource_name=str(data["resource_name"]),
            pattern_type=pattern_type(int(data["pattern_type"])),  # type: ignore[call-overload]
            principal=str(data["principal"]),
            host=str(data["host"]),
            operation=operation(int(data["operation"])),  # type: ignore[call-overload]
            permission=permission(int(data["permission"])),  # type: ignore[call-overload]
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """What DescribeAcls / DeleteAcls select; ``None`` strings and ANY codes match anything."""

    resource_type: ResourceType = ResourceType.ANY
    resource_name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermission = AclPermission.ANY

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, b: AclBinding) -> bool:
        # ResourcePatternFilter.matches
        if self.resource_type is not ResourceType.ANY and self.resource_type != b.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, b.pattern_type):
            return False
        if self.resource_name is None:
            return True
        if self.pattern_type in (PatternType.ANY, b.pattern_type):
            return self.resource_name == b.resource_name
        # MATCH: every pattern that applies to the named resource.
        if b.pattern_type is PatternType.LITERAL:
            return b.resource_name in (self.resource_name, WILDCARD)
        if b.pattern_type is PatternType.PREFIXED:
            return self.resource_name.startswith(b.resource_name)
        return False

    def _matches_entry(self, b: AclBinding) -> bool:
        # AccessControlEntryFilter.matches
        return (
            (self.principal is None or self.principal == b.principal)
            and (self.host is None or self.host == b.host)
            and (self.operation is AclOperation.ANY or self.operation == b.operation)
            and (self.permission is AclPermission.ANY or self.permission == b.permission)
        )


def _valid_principal(principal: str) -> bool:
    kind, sep, name = principal.partition(":")
    return bool(sep and kind and name)


def validate_binding(b: AclBinding) -> None:
    """Kafka's ``AclControlManager.validateNewAcl``; raises InvalidAclError."""
    if b.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAclError(f"Invalid patternType {b.pattern_type.name}")
    if b.resource_type not in _CONCRETE_RESOURCES:
        raise InvalidAclError(f"Invalid resourceType {b.resource_type.name}")
    if b.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAclError(f"Invalid operation {b.operation.name}")
    if b.permission not in (AclPermission.ALLOW, AclPermission.DENY):
        raise InvalidAclError(f"Invalid permissionType {b.permission.name}")
    if not b.resource_name:
        raise InvalidAclError("Resource name should not be empty")
    if not _valid_principal(b.principal):
        raise InvalidAclError(f"Could not parse principal {b.principal!r}")
    if b.host != WILDCARD:
        try:
            ipaddress.ip_address(b.host)
        except ValueError:
            raise InvalidAclError(f"Invalid host {b.host!r}: '*' or an IP address") from None


def validate_filter(f: AclBindingFilter) -> None:
    """Kafka's ``validateFilter``: an UNKNOWN field makes the filter INVALID_REQUEST."""
    for what, value in (
        ("resourceType", f.resource_type),
        ("patternType", f.pattern_type),
        ("operation", f.operation),
        ("permissionType", f.permission),
    ):
        if value == 0:
            raise InvalidAclError(f"Unknown {what} in the ACL filter")


class AclIndex:
    """An immutable snapshot of all bindings, indexed for the authorizer."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self.bindings: frozenset[AclBinding] = frozenset(bindings)
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        for b in self.bindings:
            table = self._literal if b.pattern_type is PatternType.LITERAL else self._prefixed
            table.setdefault((b.resource_type, b.resource_name), []).append(b)

    def __len__(self) -> int:
        return len(self.bindings)

    def on_resource(self, rtype: ResourceType, name: str) -> list[AclBinding]:
        """Every binding whose pattern applies to the resource ``rtype`` / ``name``."""
        found = list(self._literal.get((rtype, name), ()))
        if name != WILDCARD:
            found += self._literal.get((rtype, WILDCARD), ())
        if self._prefixed:
            for end in range(1, len(name) + 1):
                found += self._prefixed.get((rtype, name[:end]), ())
        return found

    def select(self, flt: AclBindingFilter) -> list[AclBinding]:
        return sorted(b for b in self.bindings if flt.matches(b))


_DENIED_ERRORS = {
    ResourceType.TOPIC: ErrorCode.topic_authorization_failed,
    ResourceType.GROUP: ErrorCode.group_authorization_failed,
    ResourceType.CLUSTER: ErrorCode.cluster_authorization_failed,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.transactional_id_authorization_failed,
    ResourceType.DELEGATION_TOKEN: ErrorCode.delegation_token_authorization_failed,
}


def denied_error(rtype: ResourceType) -> ErrorCode:
    """The error Kafka answers when an operation on a resource of ``rtype`` is denied."""
    return _DENIED_ERRORS.get(rtype, ErrorCode.cluster_authorization_failed)


# Kafka's ``AclEntry.supportedOperations``: the operations an ``authorized_operations``
# bit field (Metadata, DescribeGroups, DescribeCluster) reports on, per resource type.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
}

# The bit field's value when the client did not ask for it (Integer.MIN_VALUE in Kafka).
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def authorized_operations(allowed: Callable[[AclOperation], bool], rtype: ResourceType) -> int:
    """Kafka's ``authorized_operations`` bit field: bit ``op.code`` set for each supported
    operation on a resource of ``rtype`` that ``allowed`` grants."""
    bits = 0
    for op in SUPPORTED_OPERATIONS.get(rtype, ()):
        if allowed(op):
            bits |= 1 << int(op)
    return bits


def client_host(peer_host: object) -> str:
    """The address ACL hosts are compared with: an IPv4-mapped IPv6 peer (``::ffff:a.b.c.d``,
    from a dual-stack listener) counts as its IPv4 address, as Java's InetAddress does."""
    text = str(peer_host)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return text
    mapped = getattr(address, "ipv4_mapped", None)
    return str(mapped) if mapped is not None else str(address)


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: semicolon-separated principals (``User:admin;User:ops``)."""
    if not value:
        return frozenset()
    return frozenset(p.strip() for p in value.split(";") if p.strip())


class Authorizer:
    """Kafka's allow/deny decision over an ``AclIndex`` the caller keeps current."""

    def __init__(
        self,
        acls: AclIndex | Callable[[], AclIndex] | None = None,
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl: bool = False,
    ) -> None:
        # A callable is asked on every check: the broker passes its ACL cache's snapshot.
        if acls is None:
            acls = AclIndex()
        self._acls = acls if callable(acls) else (lambda: acls)
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl = allow_everyone_if_no_acl

    @property
    def index(self) -> AclIndex:
        return self._acls()

    def authorize_connection(
        self, ctx: object, op: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        """``authorize`` for a connection context: its ``principal`` (ANONYMOUS when the
        listener does not authenticate) and its ``peer_host``."""
        principal = str(getattr(ctx, "principal", None) or ANONYMOUS)
        return self.authorize(
            principal, client_host(getattr(ctx, "peer_host", "")), op, rtype, name
        )

    def authorize(
        self,
        principal: str,
        host: str,
        op: AclOperation,
        rtype: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        acls = self.index.on_resource(rtype, name)
        if not acls:
            return self.allow_everyone_if_no_acl
        applicable = [
            a
            for a in acls
            if a.principal in (principal, WILDCARD_PRINCIPAL) and a.host in (host, WILDCARD)
        ]
        if any(
            a.permission is AclPermission.DENY and a.operation in (op, AclOperation.ALL)
            for a in applicable
        ):
            return False
        granting = _IMPLIED_BY.get(op, frozenset({op, AclOperation.ALL}))
        return any(
            a.permission is AclPermission.ALLOW and a.operation in granting for a in applicable
        )

"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31).

Bindings and filters map one to one onto ``weir.security.acl``; the bindings live in
Redis (``weir.security.acl_store``) and any broker may change them. After a change the
broker reloads its own ACL cache before answering, so the next request to it already sees
the change; other brokers pick it up within a second.

Errors follow Kafka: a creation with an ANY/MATCH/UNKNOWN pattern, operation, permission
or resource type, an empty name or an unparsable principal gets INVALID_REQUEST in its own
result; a describe or delete filter with an UNKNOWN field gets INVALID_REQUEST (for the
whole DescribeAcls, per filter in DeleteAcls). With an authorizer configured, DescribeAcls
needs Describe and CreateAcls/DeleteAcls need Alter on the Cluster resource
(CLUSTER_AUTHORIZATION_FAILED otherwise); without one, anyone may call them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8
from redis.exceptions import RedisError

from weir.handlers._build import make, respond, types_of
from weir.metadata.errors import MetadataUnavailableError
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    InvalidAclError,
    operation,
    pattern_type,
    permission,
    resource_type,
    validate_binding,
    validate_filter,
)
from weir.security.acl_store import AclStore
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.security.acl_store import AclCache

log = logging.getLogger("weir.handlers.acls")


_DENIED = "Cluster authorization failed: the principal may not {what} ACLs"
_REDIS_DOWN = "ACL storage is unavailable: {exc}"

T = TypeVar("T")
R = TypeVar("R")


# The request fields a binding is read from: CreateAcls names them plainly, DescribeAcls and
# DeleteAcls filters add "_filter" (and name the pattern type differently).
_BINDING_FIELDS = ("resource_type", "resource_name", "resource_pattern_type", "principal", "host")
_FILTER_FIELDS = (
    "resource_type_filter",
    "resource_name_filter",
    "pattern_type_filter",
    "principal_filter",
    "host_filter",
)


def _parse(cls: type[T], raw: Any, names: tuple[str, ...]) -> T:
    """An ``AclBinding`` or ``AclBindingFilter`` from a request entry whose resource,
    pattern, principal and host fields are ``names``."""
    rtype, name, ptype, principal, host = (getattr(raw, n) for n in names)
    return cls(
        resource_type=resource_type(rtype),
        resource_name=name,
        pattern_type=pattern_type(ptype),
        principal=principal,
        host=host,
        operation=operation(raw.operation),
        permission=permission(raw.permission_type),
    )


def _filter(raw: Any) -> AclBindingFilter:
    return _parse(AclBindingFilter, raw, _FILTER_FIELDS)


def _binding(raw: Any) -> AclBinding:
    return _parse(AclBinding, raw, _BINDING_FIELDS)


def _described(binding: AclBinding) -> dict[str, Any]:
    """A binding as DescribeAcls and DeleteAcls answer it; ``make`` keeps the fields an entity
    has (a described resource its resource fields, an ACL description the rest)."""
    return {
        "resource_type": i8(binding.resource_type),
        "resource_name": binding.resource_name,
        "pattern_type": i8(binding.pattern_type),
        "principal": binding.principal,
        "host": binding.host,
        "operation": i8(binding.operation),
        "permission_type": i8(binding.permission),
    }


_Outcome = tuple[ErrorCode, str | None]


def _storage_failed(outcomes: list[_Outcome], exc: Exception, *, api: str) -> list[_Outcome]:
    """The items that were going to succeed fail with the storage error instead."""
    log.warning("%s: %s", api, exc)
    failed = (ErrorCode.unknown_server_error, _REDIS_DOWN.format(exc=exc))
    return [failed if code == ErrorCode.none else (code, m) for code, m in outcomes]


async def handle_describe(
    ctx: ConnectionContext, request: Request, *, access: Access, acls: AclCache
) -> Any:
    types = types_of(request)

    def fail(code: ErrorCode, message: str) -> Any:
        return respond(request, error_code=code, error_message=message, resources=())

    if not access.on_cluster(ctx, AclOperation.DESCRIBE):
        return fail(ErrorCode.cluster_authorization_failed, _DENIED.format(what="describe"))
    flt = _filter(request.body)
    try:
        validate_filter(flt)
    except InvalidAclError as exc:
        return fail(ErrorCode.invalid_request, str(exc))
    matched = acls.index.select(flt)
    resources = []
    for _, group in groupby(
        matched, key=lambda b: (b.resource_type, b.resource_name, b.pattern_type)
    ):
        bindings = list(group)
        resources.append(
            make(
                types.DescribeAclsResource,
                **_described(bindings[0]),
                acls=tuple(make(types.AclDescription, **_described(b)) for b in bindings),
            )
        )
    return respond(request, resources=tuple(resources))


@dataclass(frozen=True, slots=True)
class _Change(Generic[T, R]):
    """What CreateAcls and DeleteAcls differ in: each request item is parsed, validated, and
    the valid ones applied to the store together."""

    api: str
    what: str  # for the denial message
    parse: Callable[[Any], T]
    validate: Callable[[T], None]
    apply: Callable[[AclStore, list[T]], Awaitable[R]]


_CREATE = _Change("CreateAcls", "create", _binding, validate_binding, AclStore.add)
_DELETE = _Change("DeleteAcls", "delete", _filter, validate_filter, AclStore.delete_matching)


async def _changed(
    change: _Change[T, R], ctx: ConnectionContext, access: Access, acls: AclCache, raw: Any
) -> tuple[list[_Outcome], R | None]:
    """Per item: denied as a whole without Alter on the cluster, else INVALID_REQUEST where
    validation rejects it; the valid items are applied and this broker's cache reloaded,
    and a storage failure fails them. (Per item outcome, and what applying returned, or None
    when it did not run.)"""
    items = [change.parse(entry) for entry in raw]
    if not access.on_cluster(ctx, AclOperation.ALTER):
        denied = (ErrorCode.cluster_authorization_failed, _DENIED.format(what=change.what))
        return [denied for _ in items], None
    outcomes: list[_Outcome] = []
    for item in items:
        try:
            change.validate(item)
        except InvalidAclError as exc:
            outcomes.append((ErrorCode.invalid_request, str(exc)))
        else:
            outcomes.append((ErrorCode.none, None))
    valid = [
        item for item, (code, _) in zip(items, outcomes, strict=True) if code == ErrorCode.none
    ]
    if not valid:
        return outcomes, None
    try:
        applied = await change.apply(acls.store, valid)
        await acls.reload()
    except (RedisError, OSError, MetadataUnavailableError) as exc:
        return _storage_failed(outcomes, exc, api=change.api), None
    return outcomes, applied


async def handle_create(
    ctx: ConnectionContext, request: Request, *, access: Access, acls: AclCache
) -> Any:
    types = types_of(request)
    outcomes, _ = await _changed(_CREATE, ctx, access, acls, request.body.creations)
    return respond(
        request,
        results=tuple(
            make(types.AclCreationResult, error_code=code, error_message=message)
            for code, message in outcomes
        ),
    )


async def handle_delete(
    ctx: ConnectionContext, request: Request, *, access: Access, acls: AclCache
) -> Any:
    types = types_of(request)
    outcomes, deleted = await _changed(_DELETE, ctx, access, acls, request.body.filters)
    # The bindings each filter deleted, in the order of the filters that ran (those with
    # no error): one list per such filter.
    per_filter = iter(deleted or ())
    return respond(
        request,
        filter_results=tuple(
            make(
                types.DeleteAclsFilterResult,
                error_code=code,
                error_message=message,
                matching_acls=tuple(
                    make(
                        types.DeleteAclsMatchingAcl,
                        error_code=ErrorCode.none,
                        error_message=None,
                        **_described(b),
                    )
                    for b in (next(per_filter) if code == ErrorCode.none else ())
                ),
            )
            for code, message in outcomes
        ),
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.DESCRIBE_ACLS: ((1, 3), handle_describe),
    ApiKey.CREATE_ACLS: ((1, 3), handle_create),
    ApiKey.DELETE_ACLS: ((1, 3), handle_delete),
}

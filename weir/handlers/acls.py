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
from collections.abc import Callable
from itertools import groupby
from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.static.primitive import i8
from redis.exceptions import RedisError

from weir.handlers._build import make, respond, types_of
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
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.security.acl_store import AclCache

log = logging.getLogger("weir.handlers.acls")

DESCRIBE_KEY = 29
DESCRIBE_VERSIONS = (1, 3)
CREATE_KEY = 30
CREATE_VERSIONS = (1, 3)
DELETE_KEY = 31
DELETE_VERSIONS = (1, 3)

_DENIED = "Cluster authorization failed: the principal may not {what} ACLs"
_REDIS_DOWN = "ACL storage is unavailable: {exc}"

T = TypeVar("T")


def _filter(raw: Any) -> AclBindingFilter:
    return AclBindingFilter(
        resource_type=resource_type(raw.resource_type_filter),
        resource_name=raw.resource_name_filter,
        pattern_type=pattern_type(raw.pattern_type_filter),
        principal=raw.principal_filter,
        host=raw.host_filter,
        operation=operation(raw.operation),
        permission=permission(raw.permission_type),
    )


def _binding(raw: Any) -> AclBinding:
    return AclBinding(
        resource_type=resource_type(raw.resource_type),
        resource_name=raw.resource_name,
        pattern_type=pattern_type(raw.resource_pattern_type),
        principal=raw.principal,
        host=raw.host,
        operation=operation(raw.operation),
        permission=permission(raw.permission_type),
    )


_Outcome = tuple[ErrorCode, str | None]


def _vetted(
    items: list[T], validate: Callable[[T], None], *, allowed: bool, what: str
) -> list[_Outcome]:
    """Per item of a CreateAcls or DeleteAcls request: denied as a whole without Alter on the
    cluster, else INVALID_REQUEST where ``validate`` rejects it, else no error (yet)."""
    outcomes: list[_Outcome] = []
    for item in items:
        if not allowed:
            outcomes.append((ErrorCode.cluster_authorization_failed, _DENIED.format(what=what)))
            continue
        try:
            validate(item)
        except InvalidAclError as exc:
            outcomes.append((ErrorCode.invalid_request, str(exc)))
            continue
        outcomes.append((ErrorCode.none, None))
    return outcomes


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
    for (rtype, name, ptype), group in groupby(
        matched, key=lambda b: (b.resource_type, b.resource_name, b.pattern_type)
    ):
        resources.append(
            make(
                types.DescribeAclsResource,
                resource_type=i8(rtype),
                resource_name=name,
                pattern_type=i8(ptype),
                acls=tuple(
                    make(
                        types.AclDescription,
                        principal=b.principal,
                        host=b.host,
                        operation=i8(b.operation),
                        permission_type=i8(b.permission),
                    )
                    for b in group
                ),
            )
        )
    return respond(
        request,
        resources=tuple(resources),
    )


async def handle_create(
    ctx: ConnectionContext, request: Request, *, access: Access, acls: AclCache
) -> Any:
    types = types_of(request)
    bindings = [_binding(raw) for raw in request.body.creations]
    allowed = access.on_cluster(ctx, AclOperation.ALTER)
    outcomes = _vetted(bindings, validate_binding, allowed=allowed, what="create")
    valid = [b for b, (code, _) in zip(bindings, outcomes, strict=True) if code == ErrorCode.none]
    if valid:
        try:
            await acls.store.add(valid)
            await acls.reload()
        except (RedisError, OSError) as exc:
            outcomes = _storage_failed(outcomes, exc, api="CreateAcls")
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
    filters = [_filter(raw) for raw in request.body.filters]
    allowed = access.on_cluster(ctx, AclOperation.ALTER)
    errors = _vetted(filters, validate_filter, allowed=allowed, what="delete")
    runnable = [i for i, (code, _) in enumerate(errors) if code == ErrorCode.none]
    matches: dict[int, list[AclBinding]] = {}
    if runnable:
        try:
            found = await acls.store.delete_matching([filters[i] for i in runnable])
            matches = dict(zip(runnable, found, strict=True))
            await acls.reload()
        except (RedisError, OSError) as exc:
            errors = _storage_failed(errors, exc, api="DeleteAcls")
            matches = {}
    results = []
    for i, (code, message) in enumerate(errors):
        results.append(
            make(
                types.DeleteAclsFilterResult,
                error_code=code,
                error_message=message,
                matching_acls=tuple(
                    make(
                        types.DeleteAclsMatchingAcl,
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=i8(b.resource_type),
                        resource_name=b.resource_name,
                        pattern_type=i8(b.pattern_type),
                        principal=b.principal,
                        host=b.host,
                        operation=i8(b.operation),
                        permission_type=i8(b.permission),
                    )
                    for b in matches.get(i, ())
                ),
            )
        )
    return respond(request, filter_results=tuple(results))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    DESCRIBE_KEY: (DESCRIBE_VERSIONS, handle_describe),
    CREATE_KEY: (CREATE_VERSIONS, handle_create),
    DELETE_KEY: (DELETE_VERSIONS, handle_delete),
}

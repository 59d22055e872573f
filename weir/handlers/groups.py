"""Consumer-group membership APIs: FindCoordinator (10), JoinGroup (11), Heartbeat (12),
LeaveGroup (13), SyncGroup (14), DescribeGroups (15), ListGroups (16), DeleteGroups (42).

Each handler turns a request into calls on the group's pure state machine through
``groups`` (``weir.group_coordinator``) and the result into the version's
response. A JoinGroup or SyncGroup that must wait parks on a future the coordinator
resolves; requests for a group this broker does not coordinate answer NOT_COORDINATOR.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.coordinator import (
    GroupDescription,
    JoinResponse,
    MemberIdentity,
    Pending,
    SyncResponse,
)
from weir.group_coordinator import CoordinatorError
from weir.handlers._build import make, respond, types_of
from weir.handlers._group import group_shard, member_group
from weir.handlers.transactions import may_use_transactional_id
from weir.protocol.api_keys import ApiKey
from weir.quotas import not_request_time
from weir.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    AclOperation,
    ResourceType,
)

if TYPE_CHECKING:
    from weir.coordinator import Group
    from weir.group_coordinator import GroupCoordinator, Shard
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.protocol.codec import Request
    from weir.server import ConnectionContext
    from weir.transaction_coordinator import TransactionCoordinator


_GROUP_KEY_TYPE = 0
_TRANSACTION_KEY_TYPE = 1


def _ms(value: timedelta | int | None) -> int:
    if value is None:
        return -1
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def _client_host(ctx: ConnectionContext) -> str:
    return f"/{ctx.peer_host}"  # Kafka shows the client address with a leading slash


# FindCoordinator ------------------------------------------------------------------------------
async def handle_find_coordinator(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    groups: GroupCoordinator,
    transactions: TransactionCoordinator,
) -> Any:
    body = request.body
    batched = request.api_version >= 4  # KIP-699: many keys in one request
    key_type = getattr(body, "key_type", _GROUP_KEY_TYPE)
    keys = list(body.coordinator_keys) if batched else [body.key]
    answers = [
        await _find(access, groups, transactions, metadata, ctx, key_type, key) for key in keys
    ]
    if batched:
        types = types_of(request)
        coordinators = (
            make(types.Coordinator, key=k, **a) for k, a in zip(keys, answers, strict=True)
        )
        return respond(request, coordinators=tuple(coordinators))
    return respond(request, **answers[0])


def _coordinator(
    error: ErrorCode, message: str | None = None, node: int = -1, host: str = "", port: int = -1
) -> dict[str, Any]:
    """A FindCoordinator answer for one key (no coordinator unless one is given)."""
    return {
        "error_code": error,
        "error_message": message,
        "node_id": node,
        "host": host,
        "port": port,
    }


async def _find(
    access: Access,
    groups: GroupCoordinator,
    transactions: TransactionCoordinator,
    metadata: MetadataView,
    ctx: ConnectionContext,
    key_type: int,
    key: str,
) -> dict[str, Any]:
    if key_type == _TRANSACTION_KEY_TYPE:
        if not may_use_transactional_id(access, ctx, AclOperation.DESCRIBE, key):
            return _coordinator(ErrorCode.transactional_id_authorization_failed)
        if not key:
            return _coordinator(ErrorCode.invalid_request, "the transactional id must not be empty")
        error = await transactions.ensure_state_topic()
        if error is not ErrorCode.none:
            return _coordinator(ErrorCode.coordinator_not_available)
        _, leader = transactions.coordinator_of(key)
    elif key_type == _GROUP_KEY_TYPE:
        if not access.on_group(ctx, AclOperation.DESCRIBE, key):
            return _coordinator(ErrorCode.group_authorization_failed)
        if not key:
            return _coordinator(ErrorCode.invalid_request, "the group id must not be empty")
        error = await groups.ensure_offsets_topic()
        if error is not ErrorCode.none:
            return _coordinator(ErrorCode.coordinator_not_available)
        _, leader = groups.coordinator_of(key)
    else:
        return _coordinator(ErrorCode.invalid_request, f"unknown coordinator key type {key_type}")
    endpoint = next((b for b in metadata.live_brokers() if b.broker_id == leader), None)
    if endpoint is None:
        return _coordinator(ErrorCode.coordinator_not_available)
    return _coordinator(ErrorCode.none, None, endpoint.broker_id, endpoint.host, endpoint.port)


# JoinGroup ------------------------------------------------------------------------------------
async def handle_join_group(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body
    version = request.api_version
    types = types_of(request)

    def reply(response: JoinResponse) -> Any:
        protocol_name = response.protocol_name
        if version < 7 and protocol_name is None:
            protocol_name = ""  # nullable from v7 only
        return respond(
            request,
            error_code=response.error,
            generation_id=response.generation_id,
            protocol_type=response.protocol_type,
            protocol_name=protocol_name,
            leader=response.leader,
            skip_assignment=response.skip_assignment,
            member_id=response.member_id,
            members=tuple(
                _member(types.JoinGroupResponseMember, m, metadata=m.metadata)
                for m in response.members
            ),
        )

    def failed(error: ErrorCode) -> Any:
        """No generation, protocol, leader or members; the member id the request sent."""
        return reply(JoinResponse(error, body.member_id))

    shard = group_shard(access, ctx, groups, AclOperation.READ, body.group_id)
    if isinstance(shard, ErrorCode):
        return failed(shard)
    group = shard.groups.get(body.group_id)
    if group is None:
        if body.member_id:
            return failed(ErrorCode.unknown_member_id)
        group = groups.new_group(shard, body.group_id)
    session_ms = _ms(body.session_timeout)
    rebalance = getattr(body, "rebalance_timeout", None)
    outcome = group.join(
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        client_id=request.client_id or "",
        client_host=_client_host(ctx),
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=session_ms if rebalance is None else _ms(rebalance),
        protocol_type=body.protocol_type,
        protocols=[(p.name, p.metadata) for p in body.protocols],
        api_version=version,
        now_ms=groups.now_ms(),
    )
    response = await _settle(groups, shard, group, outcome)
    if isinstance(response, ErrorCode):
        return failed(response)
    _forget_if_unused(shard, group)
    return reply(response)


async def _settle(coordinator: GroupCoordinator, shard: Shard, group: Group, outcome: Any) -> Any:
    """Process an outcome's completions; wait for a parked request's own answer."""
    reply = outcome.reply
    future = coordinator.park(shard, group, reply.ticket) if isinstance(reply, Pending) else None
    coordinator.process(shard, group, outcome.completions)
    if future is None:
        return reply
    try:
        with not_request_time():  # a JoinGroup waiting for its rebalance uses no thread
            return await future
    except CoordinatorError as exc:
        return exc.error


def _forget_if_unused(shard: Shard, group: Group) -> None:
    """Drop a group a failed first JoinGroup created (Kafka does not keep it either)."""
    if (
        group.is_empty
        and not group.members
        and not group.pending_member_ids
        and group.generation_id == 0
        and not shard.offsets.has_offsets(group.group_id)
    ):
        shard.groups.pop(group.group_id, None)


# SyncGroup ------------------------------------------------------------------------------------
async def handle_sync_group(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body

    def reply(response: SyncResponse) -> Any:
        return respond(
            request,
            error_code=response.error,
            protocol_type=response.protocol_type,
            protocol_name=response.protocol_name,
            assignment=response.assignment,
        )

    found = member_group(access, ctx, groups, body.group_id)
    if isinstance(found, ErrorCode):
        return reply(SyncResponse(found))
    shard, group = found
    outcome = group.sync(
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        generation_id=body.generation_id,
        protocol_type=getattr(body, "protocol_type", None),
        protocol_name=getattr(body, "protocol_name", None),
        assignments={a.member_id: a.assignment for a in body.assignments},
        now_ms=groups.now_ms(),
    )
    response = await _settle(groups, shard, group, outcome)
    return reply(SyncResponse(response) if isinstance(response, ErrorCode) else response)


# Heartbeat ------------------------------------------------------------------------------------
async def handle_heartbeat(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body
    found = member_group(access, ctx, groups, body.group_id)
    if isinstance(found, ErrorCode):
        return respond(request, error_code=found)
    shard, group = found
    error = group.heartbeat(
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        generation_id=body.generation_id,
        now_ms=groups.now_ms(),
    )
    shard.wake.set()  # the member's session deadline moved
    return respond(request, error_code=error)


# LeaveGroup -----------------------------------------------------------------------------------
async def handle_leave_group(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body
    batched = request.api_version >= 3  # KIP-345: many members leave at once
    types = types_of(request)
    if batched:
        members = [
            MemberIdentity(member_id=m.member_id, group_instance_id=m.group_instance_id)
            for m in body.members
        ]
    else:
        members = [MemberIdentity(member_id=body.member_id)]

    def reply(error: ErrorCode, results: tuple[Any, ...] = ()) -> Any:
        return respond(
            request,
            error_code=error,
            members=tuple(_member(types.MemberResponse, r, error_code=r.error) for r in results),
        )

    found = member_group(access, ctx, groups, body.group_id)
    if isinstance(found, ErrorCode):
        return reply(found)
    shard, group = found
    outcome = group.leave(members, now_ms=groups.now_ms())
    groups.process(shard, group, outcome.completions)
    response = outcome.reply
    if not batched and response.members:
        # One member: its error is the response's error, as Kafka answers v0-v2.
        return reply(
            response.members[0].error if response.error is ErrorCode.none else response.error
        )
    return reply(response.error, response.members)


# DescribeGroups -------------------------------------------------------------------------------
async def handle_describe_groups(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body
    types = types_of(request)
    want_ops = bool(getattr(body, "include_authorized_operations", False))
    described = []
    for group_id in body.groups:
        shard = group_shard(access, ctx, groups, AclOperation.DESCRIBE, group_id)
        if isinstance(shard, ErrorCode):
            nothing = GroupDescription(group_id, "", "", "", ())  # an error describes nothing
            described.append(_described(types, shard, nothing, AUTHORIZED_OPERATIONS_OMITTED))
            continue
        group = shard.groups.get(group_id)
        # A group this coordinator does not know is Dead, as Kafka answers.
        info = (
            group.describe()
            if group is not None
            else GroupDescription(group_id, "Dead", "", "", ())
        )
        ops = access.operations_field(ctx, want_ops, ResourceType.GROUP, group_id)
        described.append(_described(types, ErrorCode.none, info, ops))
    return respond(request, groups=tuple(described))


def _described(types: Any, error: ErrorCode, info: GroupDescription, ops: int) -> Any:
    return make(
        types.DescribedGroup,
        error_code=error,
        group_id=info.group_id,
        group_state=info.state,
        protocol_type=info.protocol_type,
        protocol_data=info.protocol_name,
        members=tuple(
            _member(
                types.DescribedGroupMember,
                m,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata,
                member_assignment=m.assignment,
            )
            for m in info.members
        ),
        authorized_operations=ops,
    )


def _member(cls: type, member: Any, **fields: Any) -> Any:
    """A member entry of a group response: the member's id and static instance id
    (KIP-345), and ``fields``."""
    return make(
        cls, member_id=member.member_id, group_instance_id=member.group_instance_id, **fields
    )


# ListGroups -----------------------------------------------------------------------------------
async def handle_list_groups(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    types = types_of(request)
    wanted = {s.lower() for s in getattr(request.body, "states_filter", ()) or ()}
    loading = any(not shard.loaded for shard in groups.shards.values())
    listed = []
    everything = access.on_cluster(ctx, AclOperation.DESCRIBE)
    for _, group in groups.all_groups():
        state = group.state.value
        if state == "Dead" or (wanted and state.lower() not in wanted):
            continue
        if not everything and not access.on_group(ctx, AclOperation.DESCRIBE, group.group_id):
            continue
        listed.append(
            make(
                types.ListedGroup,
                group_id=group.group_id,
                protocol_type=group.protocol_type or "",
                group_state=state,
            )
        )
    return respond(
        request,
        error_code=ErrorCode.coordinator_load_in_progress if loading else ErrorCode.none,
        groups=tuple(sorted(listed, key=lambda g: g.group_id)),
    )


# DeleteGroups ---------------------------------------------------------------------------------
async def handle_delete_groups(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    types = types_of(request)
    results = []
    for group_id in request.body.groups_names:
        shard = group_shard(access, ctx, groups, AclOperation.DELETE, group_id)
        try:
            error = (
                shard
                if isinstance(shard, ErrorCode)
                else await groups.delete_group(shard, group_id)
            )
        except CoordinatorError as exc:
            error = exc.error
        results.append(make(types.DeletableGroupResult, group_id=group_id, error_code=error))
    return respond(request, results=tuple(results))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.FIND_COORDINATOR: ((0, 4), handle_find_coordinator),
    ApiKey.JOIN_GROUP: ((0, 9), handle_join_group),
    ApiKey.SYNC_GROUP: ((0, 5), handle_sync_group),
    ApiKey.HEARTBEAT: ((0, 4), handle_heartbeat),
    ApiKey.LEAVE_GROUP: ((0, 5), handle_leave_group),
    ApiKey.DESCRIBE_GROUPS: ((0, 5), handle_describe_groups),
    ApiKey.LIST_GROUPS: ((0, 4), handle_list_groups),
    ApiKey.DELETE_GROUPS: ((0, 2), handle_delete_groups),
}

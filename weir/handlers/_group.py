"""The door every consumer-group request goes through: may the principal act on the group,
and which shard of the group coordinator holds it (NOT_COORDINATOR and the loading errors
come from ``GroupCoordinator.shard_for``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from weir.group_coordinator import CoordinatorError
from weir.security.acl import AclOperation

if TYPE_CHECKING:
    from weir.coordinator import Group
    from weir.group_coordinator import GroupCoordinator, Shard
    from weir.handlers._authz import Access
    from weir.server import ConnectionContext

__all__ = ["group_shard", "member_group"]


def group_shard(
    access: Access,
    ctx: ConnectionContext,
    groups: GroupCoordinator,
    op: AclOperation,
    group_id: str,
) -> Shard | ErrorCode:
    """The shard that holds ``group_id``, if the principal may ``op`` on the group and this
    broker coordinates it; else the error the group answers."""
    if not access.on_group(ctx, op, group_id):
        return ErrorCode.group_authorization_failed
    try:
        return groups.shard_for(group_id)
    except CoordinatorError as exc:
        return exc.error


def member_group(
    access: Access, ctx: ConnectionContext, groups: GroupCoordinator, group_id: str
) -> tuple[Shard, Group] | ErrorCode:
    """(shard, group) for a member's SyncGroup, Heartbeat or LeaveGroup: Read on the group,
    coordinated here, and known (UNKNOWN_MEMBER_ID otherwise); else the error to answer."""
    shard = group_shard(access, ctx, groups, AclOperation.READ, group_id)
    if isinstance(shard, ErrorCode):
        return shard
    group = shard.groups.get(group_id)
    if group is None:
        return ErrorCode.unknown_member_id
    return shard, group

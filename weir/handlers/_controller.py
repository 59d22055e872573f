"""The gate of every request only the controller answers (AlterPartition, ElectLeaders,
AlterPartitionReassignments): the principal needs an operation on the cluster, and this
broker must hold the controller lease, whose epoch fences what the controller then writes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

if TYPE_CHECKING:
    from weir.controller import Controller
    from weir.handlers._authz import Access
    from weir.security.acl import AclOperation
    from weir.server import ConnectionContext

__all__ = ["controller_epoch"]


def controller_epoch(
    ctx: ConnectionContext, access: Access, controller: Controller, op: AclOperation
) -> tuple[ErrorCode, int | None]:
    """(NONE, the lease epoch), or (CLUSTER_AUTHORIZATION_FAILED or NOT_CONTROLLER, None):
    the error the whole request answers."""
    if not access.on_cluster(ctx, op):
        return ErrorCode.cluster_authorization_failed, None
    epoch = controller.epoch
    if epoch is None:
        return ErrorCode.not_controller, None
    return ErrorCode.none, epoch

"""AlterPartitionReassignments (45) and ListPartitionReassignments (46), KIP-455.

The controller starts, replaces and cancels moves; any broker lists the ongoing ones from
its metadata image (``adding``/``removing`` replicas of each partition).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import make, respond, types_of
from weir.handlers._controller import controller_epoch
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.controller import Controller
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView


_NOT_CONTROLLER = "this broker is not the controller"


async def handle_alter(
    ctx: ConnectionContext, request: Request, *, access: Access, controller: Controller
) -> Any:
    body = request.body
    types = types_of(request)
    error, epoch = controller_epoch(ctx, access, controller, AclOperation.ALTER)
    if epoch is None:
        return respond(
            request,
            error_code=error,
            error_message=_NOT_CONTROLLER if error is ErrorCode.not_controller else None,
            responses=(),
        )
    requests = [
        (t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas))
        for t in body.topics
        for p in t.partitions
    ]
    results = await controller.alter_reassignments(epoch, requests)
    return respond(
        request,
        responses=tuple(
            make(
                types.ReassignableTopicResponse,
                name=t.name,
                partitions=tuple(
                    make(
                        types.ReassignablePartitionResponse,
                        partition_index=p.partition_index,
                        error_code=results[(t.name, p.partition_index)][0],
                        error_message=results[(t.name, p.partition_index)][1],
                    )
                    for p in t.partitions
                ),
            )
            for t in body.topics
        ),
    )


async def handle_list(
    ctx: ConnectionContext, request: Request, *, metadata: MetadataView, access: Access
) -> Any:
    body = request.body
    types = types_of(request)
    if not access.on_cluster(ctx, AclOperation.DESCRIBE):
        return respond(
            request,
            error_code=ErrorCode.cluster_authorization_failed,
            topics=(),
        )
    image = metadata.image
    wanted = (
        None
        if body.topics is None
        else {(t.name, i) for t in body.topics for i in t.partition_indexes}
    )
    topics = []
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        ongoing = []
        for partition in sorted(topic.partitions.values(), key=lambda p: p.partition):
            if wanted is not None and (topic.name, partition.partition) not in wanted:
                continue
            if not (partition.adding_replicas or partition.removing_replicas):
                continue
            ongoing.append(
                make(
                    types.OngoingPartitionReassignment,
                    partition_index=partition.partition,
                    replicas=tuple(partition.replicas),
                    adding_replicas=tuple(partition.adding_replicas),
                    removing_replicas=tuple(partition.removing_replicas),
                )
            )
        if ongoing:
            topics.append(
                make(types.OngoingTopicReassignment, name=topic.name, partitions=tuple(ongoing))
            )
    return respond(request, topics=tuple(topics))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ((0, 0), handle_alter),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ((0, 0), handle_list),
}

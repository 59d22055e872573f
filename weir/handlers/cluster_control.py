"""Controller APIs: AlterPartition (56) from leaders, ElectLeaders (43) from operators.

AlterPartition is how a leader asks the controller to shrink or expand a partition's ISR
(KIP-497); ElectLeaders runs a preferred (0) or unclean (1) leader election. Both must reach
the controller; other brokers answer NOT_CONTROLLER and the sender retries there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.controller import IsrChangeRequest
from weir.handlers._build import by_topic, make, respond, types_of
from weir.handlers._controller import controller_epoch
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.controller import Controller
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView


PREFERRED = 0
UNCLEAN = 1


async def handle_alter_partition(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    controller: Controller,
) -> Any:
    body = request.body
    types = types_of(request)
    error, epoch = controller_epoch(ctx, access, controller, AclOperation.CLUSTER_ACTION)
    if epoch is None:
        return respond(request, error_code=error, topics=())
    topics = []
    for topic in body.topics:
        view = metadata.topic_view_by_id(topic.topic_id)
        results = []
        for p in topic.partitions:
            if view is None:
                error, state = ErrorCode.unknown_topic_id, None
            else:
                error, state = await controller.alter_isr(
                    epoch,
                    view.name,
                    p.partition_index,
                    IsrChangeRequest(
                        broker_id=body.broker_id,
                        leader_epoch=p.leader_epoch,
                        partition_epoch=p.partition_epoch,
                        new_isr=tuple(p.new_isr),
                    ),
                )
            results.append(
                make(
                    types.PartitionData,
                    partition_index=p.partition_index,
                    error_code=error,
                    leader_id=state.leader if state else -1,
                    leader_epoch=state.leader_epoch if state else -1,
                    isr=tuple(state.isr) if state else (),
                    leader_recovery_state=0,
                    partition_epoch=state.partition_epoch if state else -1,
                )
            )
        topics.append(make(types.TopicData, topic_id=topic.topic_id, partitions=tuple(results)))
    return respond(request, topics=tuple(topics))


async def handle_elect_leaders(
    ctx: ConnectionContext, request: Request, *, access: Access, controller: Controller
) -> Any:
    body = request.body
    types = types_of(request)
    election_type = getattr(body, "election_type", PREFERRED)
    error, epoch = controller_epoch(ctx, access, controller, AclOperation.ALTER)
    if epoch is None:
        return respond(request, error_code=error, replica_election_results=())
    if body.topic_partitions is None:
        targets = None
    else:
        targets = [(t.topic, p) for t in body.topic_partitions for p in t.partitions]
    if election_type == PREFERRED:
        results = await controller.elect_preferred(epoch, targets=targets)
    elif election_type == UNCLEAN:
        results = await controller.elect_unclean(epoch, targets=targets)
    else:
        return respond(
            request,
            error_code=ErrorCode.invalid_request,
            replica_election_results=(),
        )
    if targets is None:
        # Kafka reports only the partitions whose leader changed for an "all" election.
        results = {k: v for k, v in results.items() if v is ErrorCode.none}
    return respond(
        request,
        replica_election_results=by_topic(
            (
                (
                    topic,
                    make(
                        types.PartitionResult,
                        partition_id=index,
                        error_code=error,
                        error_message=None if error is ErrorCode.none else error.name,
                    ),
                )
                for (topic, index), error in sorted(results.items())
            ),
            lambda topic, parts: make(
                types.ReplicaElectionResult, topic=topic, partition_result=parts
            ),
        ),
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.ALTER_PARTITION: ((2, 2), handle_alter_partition),
    ApiKey.ELECT_LEADERS: ((0, 2), handle_elect_leaders),
}

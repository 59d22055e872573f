"""OffsetForLeaderEpoch (API 23): where a leader epoch ends in the leader's log (KIP-101).

Followers ask it before fetching from a new leader and truncate their log at the answer, so
no divergent tail survives a leader change; consumers ask it (KIP-320) to detect that their
position was truncated away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import per_partition, respond, types_of
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.handlers._leader import Leaders


async def handle(
    ctx: ConnectionContext, request: Request, *, leaders: Leaders, access: Access
) -> Any:
    types = types_of(request)
    replica = getattr(request.body, "replica_id", -1) >= 0
    cluster_ok = replica and access.on_cluster(ctx, AclOperation.CLUSTER_ACTION)
    topics = per_partition(
        request.body.topics,
        topic_cls=types.OffsetForLeaderTopicResult,
        partition_cls=types.EpochEndOffset,
        allowed=lambda name: (
            cluster_ok or (not replica and access.on_topic(ctx, AclOperation.DESCRIBE, name))
        ),
        answer=lambda name, p: _lookup(
            leaders, name, p.partition, p.current_leader_epoch, p.leader_epoch
        ),
        denied=_result(ErrorCode.topic_authorization_failed),
        name="topic",
        index="partition",
    )
    return respond(request, topics=topics)


def _result(error: ErrorCode, epoch: int = -1, end_offset: int = -1) -> dict[str, Any]:
    return {"error_code": error, "leader_epoch": epoch, "end_offset": end_offset}


def _lookup(
    leaders: Leaders, topic: str, index: int, current_epoch: int, epoch: int
) -> dict[str, Any]:
    error, partition = leaders.led(topic, index, current_epoch)
    if partition is None:
        return _result(error)
    return _result(ErrorCode.none, *partition.log.end_offset_for_epoch(epoch))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ((2, 4), handle),
}

"""OffsetForLeaderEpoch (API 23): where a leader epoch ends in the leader's log (KIP-101).

Followers ask it before fetching from a new leader and truncate their log at the answer, so
no divergent tail survives a leader change; consumers ask it (KIP-320) to detect that their
position was truncated away.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import NO_THROTTLE, make, response_class, response_types
from weir.handlers._leader import led_partition
from weir.protocol.codec import Request
from weir.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.replica_manager import ReplicaManager

API_KEY = 23
VERSIONS = (2, 4)


async def handle(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    replicas: ReplicaManager,
    access: Access,
) -> Any:
    version = request.api_version
    types = response_types(API_KEY, version)
    topics = []
    replica = getattr(request.body, "replica_id", -1) >= 0
    cluster_ok = replica and access.authorize(
        ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME
    )
    for topic in request.body.topics:
        partitions = []
        allowed = cluster_ok or (
            not replica
            and access.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic)
        )
        for p in topic.partitions:
            if allowed:
                error, epoch, end_offset = _lookup(
                    metadata,
                    replicas,
                    topic.topic,
                    p.partition,
                    p.current_leader_epoch,
                    p.leader_epoch,
                )
            else:
                error, epoch, end_offset = ErrorCode.topic_authorization_failed, -1, -1
            partitions.append(
                make(
                    types.EpochEndOffset,
                    error_code=error,
                    partition=p.partition,
                    leader_epoch=epoch,
                    end_offset=end_offset,
                )
            )
        topics.append(
            make(types.OffsetForLeaderTopicResult, topic=topic.topic, partitions=tuple(partitions))
        )
    return make(response_class(API_KEY, version), throttle_time=NO_THROTTLE, topics=tuple(topics))


def _lookup(
    metadata: MetadataView,
    replicas: ReplicaManager,
    topic: str,
    index: int,
    current_epoch: int,
    epoch: int,
) -> tuple[ErrorCode, int, int]:
    error, partition = led_partition(metadata, replicas, topic, index)
    if partition is None:
        return error, -1, -1
    if current_epoch >= 0 and current_epoch != partition.leader_epoch:
        fenced = current_epoch < partition.leader_epoch
        return (
            ErrorCode.fenced_leader_epoch if fenced else ErrorCode.unknown_leader_epoch,
            -1,
            -1,
        )
    found_epoch, end_offset = partition.log.end_offset_for_epoch(epoch)
    return ErrorCode.none, found_epoch, end_offset

"""ListOffsets (API 2): earliest, latest, max timestamp, and lookups by time.

Special timestamps: -2 earliest (the log start offset), -1 latest (the HW, which is the log
end offset as consumers see it; never a batch's base offset, DESIGN §5), -3 the record with
the largest timestamp (KIP-734). Any other value finds the first record whose timestamp is at
least the one asked for, using the records' own timestamps (or the append time on
LogAppendTime topics); none → offset -1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import NO_THROTTLE, make, response_class, response_types
from weir.handlers._leader import led_partition
from weir.protocol.codec import Request
from weir.security.acl import AclOperation, ResourceType
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.replica_manager import ReplicaManager

API_KEY = 2
VERSIONS = (1, 7)

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


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
    for topic in request.body.topics:
        partitions = []
        allowed = access.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            if allowed:
                error, offset, timestamp, epoch = _lookup(metadata, replicas, topic.name, p)
            else:
                error, offset, timestamp, epoch = ErrorCode.topic_authorization_failed, -1, -1, -1
            partitions.append(
                make(
                    types.ListOffsetsPartitionResponse,
                    partition_index=p.partition_index,
                    error_code=error,
                    timestamp=timestamp,
                    offset=offset,
                    leader_epoch=epoch,
                    old_style_offsets=(),
                )
            )
        topics.append(
            make(types.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(partitions))
        )
    return make(response_class(API_KEY, version), throttle_time=NO_THROTTLE, topics=tuple(topics))


def _lookup(
    metadata: MetadataView, replicas: ReplicaManager, topic: str, p: Any
) -> tuple[ErrorCode, int, int, int]:
    error, partition = led_partition(metadata, replicas, topic, p.partition_index)
    if partition is None:
        return error, -1, -1, -1
    requested_epoch = getattr(p, "current_leader_epoch", -1)
    if requested_epoch >= 0 and requested_epoch != partition.leader_epoch:
        error = (
            ErrorCode.fenced_leader_epoch
            if requested_epoch < partition.leader_epoch
            else ErrorCode.unknown_leader_epoch
        )
        return error, -1, -1, -1
    epochs = partition.log.leader_epoch_cache
    target = p.timestamp
    if target == EARLIEST:
        offset = partition.log_start_offset
        return ErrorCode.none, offset, -1, _epoch(epochs, offset)
    if target == LATEST:
        offset = partition.high_watermark
        return ErrorCode.none, offset, -1, _epoch(epochs, offset)
    if target == MAX_TIMESTAMP:
        found = partition.log.max_timestamp_offset()
    else:
        found = partition.log.offset_for_timestamp(target)
    if found is None or found[0] >= partition.high_watermark:
        return ErrorCode.none, -1, -1, -1
    offset, timestamp = found
    return ErrorCode.none, offset, timestamp, _epoch(epochs, offset)


def _epoch(epochs: Any, offset: int) -> int:
    epoch = epochs.epoch_for_offset(offset)
    return -1 if epoch is None else epoch

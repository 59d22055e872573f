"""DeleteRecords (API 21): move a partition's log start offset forward.

Offset -1 means "up to the high watermark". An offset above the HW is OFFSET_OUT_OF_RANGE.
Whole segments below the new log start are deleted; consumers below it get
OFFSET_OUT_OF_RANGE and reset per their policy.
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

API_KEY = 21
VERSIONS = (0, 2)


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
        allowed = access.authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, topic.name)
        for p in topic.partitions:
            if allowed:
                error, low = _delete(metadata, replicas, topic.name, p.partition_index, p.offset)
            else:
                error, low = ErrorCode.topic_authorization_failed, -1
            partitions.append(
                make(
                    types.DeleteRecordsPartitionResult,
                    partition_index=p.partition_index,
                    low_watermark=low,
                    error_code=error,
                )
            )
        topics.append(
            make(types.DeleteRecordsTopicResult, name=topic.name, partitions=tuple(partitions))
        )
    return make(response_class(API_KEY, version), throttle_time=NO_THROTTLE, topics=tuple(topics))


def _delete(
    metadata: MetadataView, replicas: ReplicaManager, topic: str, index: int, offset: int
) -> tuple[ErrorCode, int]:
    error, partition = led_partition(metadata, replicas, topic, index)
    if partition is None:
        return error, -1
    hw = partition.high_watermark
    if offset == -1:
        offset = hw
    if offset < 0 or offset > hw:
        return ErrorCode.offset_out_of_range, -1
    if offset <= partition.log_start_offset:
        return ErrorCode.none, partition.log_start_offset
    return ErrorCode.none, partition.delete_records_before(offset)

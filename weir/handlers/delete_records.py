"""DeleteRecords (API 21): move a partition's log start offset forward.

Offset -1 means "up to the high watermark". An offset above the HW is OFFSET_OUT_OF_RANGE.
Whole segments below the new log start are deleted; consumers below it get
OFFSET_OUT_OF_RANGE and reset per their policy.
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
    topics = per_partition(
        request.body.topics,
        topic_cls=types.DeleteRecordsTopicResult,
        partition_cls=types.DeleteRecordsPartitionResult,
        allowed=lambda name: access.on_topic(ctx, AclOperation.DELETE, name),
        answer=lambda name, p: _delete(leaders, name, p.partition_index, p.offset),
        denied=_DENIED,
    )
    return respond(request, topics=topics)


def _result(error: ErrorCode, low_watermark: int = -1) -> dict[str, Any]:
    return {"error_code": error, "low_watermark": low_watermark}


_DENIED = _result(ErrorCode.topic_authorization_failed)


def _delete(leaders: Leaders, topic: str, index: int, offset: int) -> dict[str, Any]:
    error, partition = leaders.led(topic, index)
    if partition is None:
        return _result(error)
    hw = partition.high_watermark
    if offset == -1:
        offset = hw
    if offset < 0 or offset > hw:
        return _result(ErrorCode.offset_out_of_range)
    if offset <= partition.log_start_offset:
        return _result(ErrorCode.none, partition.log_start_offset)
    return _result(ErrorCode.none, partition.delete_records_before(offset))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.DELETE_RECORDS: ((0, 2), handle),
}

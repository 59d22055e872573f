"""DeleteRecords (API 21): move a partition's log start offset forward.

Offset -1 means "up to the high watermark". An offset above the HW is OFFSET_OUT_OF_RANGE.
Whole segments below the new log start are deleted; consumers below it get
OFFSET_OUT_OF_RANGE and reset per their policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._leader import partition_leader_handler
from weir.protocol.api_keys import ApiKey
from weir.security.acl import AclOperation

if TYPE_CHECKING:
    from weir.handlers._leader import Leaders


def _result(error: ErrorCode, low_watermark: int = -1) -> dict[str, Any]:
    return {"error_code": error, "low_watermark": low_watermark}


def _delete(leaders: Leaders, topic: str, p: Any, _body: Any) -> dict[str, Any]:
    error, partition = leaders.led(topic, p.partition_index)
    if partition is None:
        return _result(error)
    hw = partition.high_watermark
    offset = p.offset
    if offset == -1:
        offset = hw
    if offset < 0 or offset > hw:
        return _result(ErrorCode.offset_out_of_range)
    if offset <= partition.log_start_offset:
        return _result(ErrorCode.none, partition.log_start_offset)
    return _result(ErrorCode.none, partition.delete_records_before(offset))


handle = partition_leader_handler(
    topic_result="DeleteRecordsTopicResult",
    partition_result="DeleteRecordsPartitionResult",
    operation=AclOperation.DELETE,
    answer=_delete,
    denied=_result(ErrorCode.topic_authorization_failed),
)

# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.DELETE_RECORDS: ((0, 2), handle),
}

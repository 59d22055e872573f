"""ListOffsets (API 2): earliest, latest, max timestamp, and lookups by time.

Special timestamps: -2 earliest (the log start offset), -1 latest (the HW, which is the log
end offset as consumers see it; never a batch's base offset, DESIGN §5), -3 the record with
the largest timestamp (KIP-734). With ``isolation_level`` read_committed, latest is the
last stable offset (what a read_committed consumer can reach). Any other value finds the
first record whose timestamp is at least the one asked for, using the records' own
timestamps (or the append time on LogAppendTime topics); none → offset -1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._leader import partition_leader_handler
from weir.protocol.api_keys import ApiKey
from weir.security.acl import AclOperation

if TYPE_CHECKING:
    from weir.handlers._leader import Leaders


LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
READ_COMMITTED = 1


def _result(
    error: ErrorCode, offset: int = -1, timestamp: int = -1, epoch: int = -1
) -> dict[str, Any]:
    return {
        "error_code": error,
        "timestamp": timestamp,
        "offset": offset,
        "leader_epoch": epoch,
        "old_style_offsets": (),
    }


def _lookup(leaders: Leaders, topic: str, p: Any, body: Any) -> tuple[ErrorCode, int, int, int]:
    error, partition = leaders.led(topic, p.partition_index, getattr(p, "current_leader_epoch", -1))
    if partition is None:
        return error, -1, -1, -1
    epochs = partition.log.leader_epoch_cache
    target = p.timestamp
    if target == EARLIEST:
        offset = partition.log_start_offset
        return ErrorCode.none, offset, -1, _epoch(epochs, offset)
    if target == LATEST:
        committed = getattr(body, "isolation_level", 0) == READ_COMMITTED
        offset = partition.last_stable_offset if committed else partition.high_watermark
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


handle = partition_leader_handler(
    topic_result="ListOffsetsTopicResponse",
    partition_result="ListOffsetsPartitionResponse",
    operation=AclOperation.DESCRIBE,
    answer=lambda leaders, name, p, body: _result(*_lookup(leaders, name, p, body)),
    denied=_result(ErrorCode.topic_authorization_failed),
)

# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.LIST_OFFSETS: ((1, 7), handle),
}

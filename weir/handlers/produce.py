"""Produce (API 0): validate record batches, append them, answer with offsets.

Per partition: the topic must exist and this broker lead it; the payload must be whole v2
batches with good CRCs (CORRUPT_MESSAGE otherwise) no larger than ``max.message.bytes``
(MESSAGE_TOO_LARGE, from the log); ``acks=all`` needs ``min.insync.replicas`` in-sync replicas
(NOT_ENOUGH_REPLICAS) and then waits in a purgatory until the high watermark passes the
batch (REQUEST_TIMED_OUT after the request's timeout). Idempotent batches go through the
producer state: duplicates are acknowledged with their original offsets, gaps get
OUT_OF_ORDER_SEQUENCE_NUMBER. One bad partition never fails the others.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import NO_THROTTLE, make, response_class, response_types
from weir.handlers._leader import led_partition
from weir.handlers._quota import charge
from weir.handlers.transactions import may_use_transactional_id
from weir.log.errors import LogError
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.protocol.records import CorruptBatchError, validate_batches
from weir.purgatory import await_commit
from weir.quotas import QuotaKind, QuotaManager, not_request_time
from weir.security.acl import AclOperation
from weir.server import ConnectionContext
from weir.topic_names import INTERNAL_TOPICS

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.partition import Partition
    from weir.replica_manager import ReplicaManager


log = logging.getLogger("weir.produce")


async def handle(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    replicas: ReplicaManager,
    access: Access,
    quotas: QuotaManager,
    time_ms: Callable[[], int],
) -> Any:
    body = request.body
    version = request.api_version
    types = response_types(ApiKey.PRODUCE, version)
    acks = body.acks
    results: list[tuple[str, list[list[Any]]]] = []
    waits: list[tuple[list[Any], Partition, int, int]] = []
    may_write_transactionally = body.transactional_id is None or may_use_transactional_id(
        access, ctx, AclOperation.WRITE, body.transactional_id
    )
    for topic_data in body.topic_data:
        rows = []
        allowed = access.on_topic(ctx, AclOperation.WRITE, topic_data.name)
        for partition_data in topic_data.partition_data:
            if not allowed:
                denied = ErrorCode.topic_authorization_failed
                rows.append([partition_data.index, denied, -1, -1, -1, None])
                continue
            error, base_offset, append_time, log_start, message = _append_one(
                metadata,
                replicas,
                topic_data.name,
                partition_data.index,
                partition_data.records,
                acks,
                body.transactional_id,
                may_write_transactionally,
            )
            row = [partition_data.index, error, base_offset, append_time, log_start, message]
            rows.append(row)
            if acks == -1 and error is ErrorCode.none:
                partition = replicas.get(topic_data.name, partition_data.index)
                assert partition is not None
                waits.append((row, partition, partition.leader_epoch, _required_hw(partition)))
        results.append((topic_data.name, rows))
    if waits:
        timeout_s = body.timeout.total_seconds()
        with not_request_time():
            await asyncio.gather(*(_await_commit(metadata, w, timeout_s) for w in waits))
    # Kafka records the request's size once the records are appended (and, with acks=all,
    # committed), then answers with the throttle time and mutes the connection.
    if quotas.enabled(QuotaKind.PRODUCE):  # no clock read on the hot path otherwise
        charge(ctx, request, quotas, QuotaKind.PRODUCE, request.size, time_ms())
    if acks == 0:
        return None
    return make(
        response_class(ApiKey.PRODUCE, version),
        responses=tuple(
            make(
                types.TopicProduceResponse,
                name=name,
                partition_responses=tuple(
                    make(
                        types.PartitionProduceResponse,
                        index=index,
                        error_code=error,
                        base_offset=base_offset,
                        log_append_time=_append_time(append_time),
                        log_start_offset=log_start,
                        record_errors=(),
                        error_message=message,
                    )
                    for index, error, base_offset, append_time, log_start, message in rows
                ),
            )
            for name, rows in results
        ),
        throttle_time=NO_THROTTLE,
    )


def _required_hw(partition: Partition) -> int:
    """acks=all is satisfied once the HW passes everything appended so far."""
    return partition.log_end_offset


async def _await_commit(
    metadata: MetadataView, wait: tuple[list[Any], Partition, int, int], timeout_s: float
) -> None:
    """The purgatory for one partition of a produce request; the row's error is set in place."""
    row, partition, epoch, required = wait
    row[1] = await await_commit(
        partition, epoch, required, timeout_s, topic_config=metadata.topic_config
    )
    if row[1] is not ErrorCode.none:
        row[5] = f"not committed by the in-sync replicas: {row[1].name}"


def _append_one(
    metadata: MetadataView,
    replicas: ReplicaManager,
    topic: str,
    index: int,
    records: memoryview | bytes | None,
    acks: int,
    transactional_id: str | None,
    may_write_transactionally: bool = True,
) -> tuple[ErrorCode, int, int, int, str | None]:
    """Append one partition's payload; returns (error, base offset, append time, LSO, msg)."""
    if acks not in (-1, 0, 1):
        return ErrorCode.invalid_required_acks, -1, -1, -1, f"acks={acks} is not -1, 0 or 1"
    if transactional_id is not None and not may_write_transactionally:
        return (
            ErrorCode.transactional_id_authorization_failed,
            -1,
            -1,
            -1,
            f"no Write permission on transactional id {transactional_id!r}",
        )
    if topic in INTERNAL_TOPICS:
        # Only the broker itself writes there (the group coordinator), as in Kafka.
        return (
            ErrorCode.invalid_topic_exception,
            -1,
            -1,
            -1,
            f"Cannot append to internal topic {topic}",
        )
    error, partition = led_partition(metadata, replicas, topic, index)
    if partition is None:
        return error, -1, -1, -1, None
    if not records:
        return ErrorCode.corrupt_message, -1, -1, -1, "empty record set"
    config = metadata.topic_config(topic)
    try:
        batches = validate_batches(records)
    except CorruptBatchError as exc:
        return ErrorCode.corrupt_message, -1, -1, -1, str(exc)
    # max.message.bytes is the log's rule, checked once when it appends (MESSAGE_TOO_LARGE).
    for _, header in batches:
        if header.is_control:
            # Markers are the transaction coordinator's (WriteTxnMarkers), never a client's.
            return ErrorCode.invalid_record, -1, -1, -1, "clients may not write control batches"
    if acks == -1 and replicas.in_sync_replica_count(topic, index) < config.min_insync_replicas:
        return (
            ErrorCode.not_enough_replicas,
            -1,
            -1,
            -1,
            f"in-sync replicas below min.insync.replicas={config.min_insync_replicas}",
        )
    try:
        # From the server, ``records`` is a writable view of the request's frame: the log
        # stamps the batches in place and writes them from it, no copy. Read-only bytes (a
        # request built in-process from kio entities) are copied once to be stamped.
        writable = isinstance(records, memoryview) and not records.readonly
        outcome = partition.append(records if writable else bytearray(records), batches)
    except LogError as exc:
        return ErrorCode(exc.error_code), -1, -1, -1, str(exc)
    return (
        ErrorCode.none,
        outcome.base_offset,
        outcome.log_append_time,
        partition.log_start_offset,
        None,
    )


def _append_time(ms: int) -> datetime | None:
    """kio models LogAppendTime as a nullable datetime: -1 (CreateTime topics) is None."""
    return None if ms < 0 else datetime.fromtimestamp(ms / 1000, tz=UTC)


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.PRODUCE: ((3, 9), handle),
}

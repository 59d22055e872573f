"""Fetch (API 1): serve committed log data as file regions, parking until min_bytes arrive.

Theory of operation
-------------------
A first pass reads every requested partition (never above the HW for consumers). If the
response already holds ``min_bytes``, an error, or ``max_wait`` is zero, it is sent at once.
Otherwise the request parks: a waiter registered on each partition counts bytes appended
after the first pass and wakes the request as soon as ``min_bytes`` is reachable (DESIGN §5:
never sit out a fixed wait), or when ``max_wait`` expires; then the partitions are read again.

Size limits follow KIP-74: ``partition_max_bytes`` per partition, ``max_bytes`` for the whole
response, and the first non-empty partition always returns at least one whole batch so a
consumer can never be stuck behind a batch larger than its limits.

Records are returned as ``RecordsRegion``s: the server sends them with sendfile. Weir does not
keep incremental fetch sessions (KIP-227): it answers session id 0, which every client
handles by sending full fetch requests.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from brokers.handlers._build import NO_THROTTLE, make, response_class, response_types
from brokers.log.errors import OffsetOutOfRangeError
from brokers.protocol.codec import RecordsRegion, Request
from brokers.server import ConnectionContext

if TYPE_CHECKING:
    from brokers.broker import Broker
    from brokers.partition import Partition

API_KEY = 1
VERSIONS = (4, 12)

_EMPTY = b""


@dataclass(slots=True)
class _PartitionRead:
    topic: str
    index: int
    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes
    size: int


async def handle(broker: Broker, ctx: ConnectionContext, request: Request) -> Any:
    body = request.body
    wanted = [(t.topic, p) for t in body.topics for p in t.partitions]
    reads = _read_all(broker, wanted, body.max_bytes)
    total = sum(r.size for r in reads)
    has_error = any(r.error is not ErrorCode.none for r in reads)
    max_wait_ms = int(body.max_wait.total_seconds() * 1000)
    if total < body.min_bytes and not has_error and max_wait_ms > 0 and not ctx.closed:
        await _park(broker, wanted, body.min_bytes - total, max_wait_ms / 1000)
        reads = _read_all(broker, wanted, body.max_bytes)
    return _response(request.api_version, reads)


def _read_all(
    broker: Broker, wanted: list[tuple[str, Any]], max_bytes: int
) -> list[_PartitionRead]:
    budget = max_bytes
    reads = []
    for topic, p in wanted:
        read = _read_one(broker, topic, p, budget, first=budget == max_bytes)
        budget = max(0, budget - read.size)
        reads.append(read)
    return reads


def _read_one(broker: Broker, topic: str, p: Any, budget: int, *, first: bool) -> _PartitionRead:
    index = p.partition
    error = broker.leader_error(topic, index)
    partition = broker.replicas.get(topic, index) if error is ErrorCode.none else None
    if partition is None:
        return _PartitionRead(topic, index, error, -1, -1, _EMPTY, 0)
    epoch_error = _check_epoch(partition, getattr(p, "current_leader_epoch", -1))
    if epoch_error is not ErrorCode.none:
        return _PartitionRead(topic, index, epoch_error, -1, -1, _EMPTY, 0)
    hw = partition.high_watermark
    limit = min(p.partition_max_bytes, budget)
    if limit <= 0 and not first:
        return _PartitionRead(
            topic, index, ErrorCode.none, hw, partition.log_start_offset, _EMPTY, 0
        )
    try:
        slices = partition.log.read(
            p.fetch_offset, max(limit, 1), max_offset=hw, min_one_batch=first or limit > 0
        )
    except OffsetOutOfRangeError:
        return _PartitionRead(
            topic, index, ErrorCode.offset_out_of_range, hw, partition.log_start_offset, _EMPTY, 0
        )
    if not slices:
        return _PartitionRead(
            topic, index, ErrorCode.none, hw, partition.log_start_offset, _EMPTY, 0
        )
    region = RecordsRegion(slices)
    return _PartitionRead(
        topic, index, ErrorCode.none, hw, partition.log_start_offset, region, region.total
    )


def _check_epoch(partition: Partition, requested: int) -> ErrorCode:
    """KIP-320: a client that knows a newer or older leader epoch than ours must refresh."""
    if requested < 0 or requested == partition.leader_epoch:
        return ErrorCode.none
    if requested < partition.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


async def _park(
    broker: Broker, wanted: list[tuple[str, Any]], missing_bytes: int, timeout: float
) -> None:
    """Wait until ``missing_bytes`` more are appended to the partitions, or ``timeout``."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    arrived = 0

    def on_append(added: int) -> None:
        nonlocal arrived
        arrived += added
        if arrived >= missing_bytes and not done.done():
            done.set_result(None)

    partitions = []
    for topic, p in wanted:
        partition = broker.replicas.get(topic, p.partition)
        if partition is not None:
            partition.add_waiter(on_append)
            partitions.append(partition)
    try:
        await asyncio.wait_for(done, timeout)
    except TimeoutError:
        pass
    finally:
        for partition in partitions:
            partition.remove_waiter(on_append)


def _response(version: int, reads: list[_PartitionRead]) -> Any:
    types = response_types(API_KEY, version)
    by_topic: dict[str, list[Any]] = {}
    for r in reads:
        by_topic.setdefault(r.topic, []).append(
            make(
                types.PartitionData,
                partition_index=r.index,
                error_code=r.error,
                high_watermark=r.high_watermark,
                last_stable_offset=r.high_watermark,
                log_start_offset=r.log_start_offset,
                aborted_transactions=(),
                preferred_read_replica=-1,
                records=r.records,
            )
        )
    return make(
        response_class(API_KEY, version),
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=0,
        responses=tuple(
            make(types.FetchableTopicResponse, topic=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )

"""Fetch (API 1): serve committed log data as file regions, parking until min_bytes arrive.

Theory of operation
-------------------
A first pass reads every requested partition: consumers never above the HW, followers
(``replica_id`` set) up to the LEO — and a follower's fetch offset is its LEO report, which
may move the HW. If the response already holds ``min_bytes``, an error, or ``max_wait`` is
zero, it is sent at once. Otherwise the request parks: every LEO/HW movement of its
partitions wakes it to re-check, and it completes as soon as ``min_bytes`` is available
(DESIGN §5: never sit out a fixed wait), or when ``max_wait`` expires.

Size limits follow KIP-74: ``partition_max_bytes`` per partition, ``max_bytes`` for the whole
response (at most the broker's ``fetch.max.bytes``, which also caps ``min_bytes``), and the
first non-empty partition always returns at least one whole batch so a consumer can never be
stuck behind a batch larger than its limits.

Batches are CRC-verified once before the first time they are served (``LogSegment.read``);
a corrupt one takes the partition offline here and answers KAFKA_STORAGE_ERROR.

Transactions: every answer to a consumer carries the partition's last stable offset (LSO).
A read_committed consumer (``isolation_level`` 1) reads only below it, and gets the aborted
transactions that overlap what it may read (``Log.collect_aborted_transactions``) so it can
drop their records, as Kafka's consumers do; read_uncommitted gets null there.

Records are returned as ``RecordsRegion``s: the server sends them with sendfile. Weir does not
keep incremental fetch sessions (KIP-227): it answers session id 0, which every client
handles by sending full fetch requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import by_topic, make, respond, types_of
from weir.handlers._quota import charge, charge_request_time, identity
from weir.log.errors import KafkaStorageError, OffsetOutOfRangeError
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import RecordsRegion, Request
from weir.quotas import QuotaKind, QuotaManager, not_request_time
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.handlers._leader import Leaders
    from weir.metadata_view import MetadataView
    from weir.replica_manager import ReplicaManager
    from weir.replication.isr_manager import IsrManager
    from weir.replication.throttle import ReplicationThrottle


_EMPTY = b""
READ_COMMITTED = 1  # isolation_level: 0 read_uncommitted, 1 read_committed


@dataclass(slots=True)
class _PartitionRead:
    topic: str
    index: int
    error: ErrorCode
    high_watermark: int
    log_start_offset: int
    records: bytes
    size: int
    throttled: bool = False
    # The LSO (-1: not known, as for errors); aborted transactions for read_committed.
    last_stable_offset: int = -1
    aborted: tuple[tuple[int, int], ...] | None = None


@dataclass(slots=True)
class _ThrottleBudget:
    """Catch-up bytes left for throttled partitions in one response (read lazily)."""

    remaining: int | None = None

    def take(self, throttle: ReplicationThrottle) -> int:
        if self.remaining is None:
            self.remaining = throttle.remaining()
        return self.remaining


async def handle(
    ctx: ConnectionContext,
    request: Request,
    *,
    leaders: Leaders,
    replicas: ReplicaManager,
    access: Access,
    isr: IsrManager,
    throttle: ReplicationThrottle,
    time_ms: Callable[[], int],
    quotas: QuotaManager,
    metadata: MetadataView,
) -> Any:
    body = request.body
    replica_id = getattr(body, "replica_id", -1)
    consumer_quota = replica_id < 0 and quotas.enabled(QuotaKind.FETCH)
    # KafkaApis: min(request max_bytes, fetch.max.bytes[, quota window]); min_bytes within it.
    max_bytes = min(body.max_bytes, metadata.config.get("fetch.max.bytes"))
    if consumer_quota:
        # Kafka never lets one fetch take more than the quota allows over the whole window.
        cap = quotas.max_value_in_window(QuotaKind.FETCH, *identity(ctx, request))
        max_bytes = max(1, int(min(max_bytes, cap)))
    wanted = [(t.topic, p) for t in body.topics for p in t.partitions]
    wanted, denied = _authorized(access, ctx, wanted, replica_id)
    if replica_id >= 0:
        _record_follower_positions(replicas, isr, time_ms(), replica_id, wanted)

    read_committed = replica_id < 0 and getattr(body, "isolation_level", 0) == READ_COMMITTED

    def read_all() -> list[_PartitionRead]:
        return _read_all(leaders, throttle, wanted, max_bytes, replica_id, read_committed)

    reads = read_all()
    max_wait_s = body.max_wait.total_seconds()
    min_bytes = min(body.min_bytes, max_bytes)
    if not denied and _should_park(reads, min_bytes, max_wait_s, ctx):
        with not_request_time():
            completed = await _park(replicas, wanted, min_bytes, max_wait_s, ctx, read_all)
        # Completed by new data: the reads that saw it are the answer (reading again would
        # only double the cost of every woken fetch). Timed out: read what is there now.
        reads = completed if completed is not None else read_all()
    # Charge the replication throttle for what is sent, not for parked re-reads.
    throttled = sum(r.size for r in reads if r.throttled)
    if throttled:
        throttle.record(throttled)
    if (
        replica_id < 0
        and (consumer_quota or quotas.enabled(QuotaKind.REQUEST))
        and _throttled_empty(ctx, request, quotas, reads, time_ms())
    ):
        # Kafka answers a throttled fetch empty (and takes its bytes back): the client
        # fetches the same offsets again once the connection is unmuted.
        return respond(request, session_id=0, responses=())
    return _response(request, reads + denied)


def _throttled_empty(
    ctx: ConnectionContext,
    request: Request,
    quotas: QuotaManager,
    reads: list[_PartitionRead],
    now_ms: int,
) -> bool:
    """Record a consumer's fetch against its quotas, as Kafka's handleFetchRequest: the
    request time so far against the request quota, the response's bytes against the consumer
    byte-rate quota. True when either throttles: the response must then go out empty, and
    its bytes are taken back from the byte-rate quota.

    One exception to Kafka: a response larger than the whole window's allowance (only a
    single batch bigger than the fetch cap can be) that only the byte-rate quota throttles is
    sent and throttled instead, since withholding it would starve the consumer forever: it
    would be refused at every fetch. The request quota's throttle is capped at one window,
    so an empty answer for it never starves anyone.
    """
    request_throttle = charge_request_time(ctx, request, quotas, now_ms)
    if not quotas.enabled(QuotaKind.FETCH):
        return request_throttle > 0
    size = sum(r.size for r in reads)
    fetch_throttle = charge(ctx, request, quotas, QuotaKind.FETCH, size, now_ms)
    if request_throttle == 0 and fetch_throttle == 0:
        return False
    user, client_id = identity(ctx, request)
    if request_throttle == 0 and size > quotas.max_value_in_window(
        QuotaKind.FETCH, user, client_id
    ):
        return False
    if size:
        quotas.unrecord(QuotaKind.FETCH, user, client_id, size, now_ms)
    return True


def _authorized(
    access: Access, ctx: ConnectionContext, wanted: list[tuple[str, Any]], replica_id: int
) -> tuple[list[tuple[str, Any]], list[_PartitionRead]]:
    """Kafka's checks: a follower needs ClusterAction on the cluster, a consumer Read on
    each topic; denied partitions answer TOPIC_AUTHORIZATION_FAILED and are not read."""
    if not access.enabled:
        return wanted, []
    if replica_id >= 0:
        ok = access.on_cluster(ctx, AclOperation.CLUSTER_ACTION)
        allowed = {topic: ok for topic, _ in wanted}
    else:
        allowed = {topic: access.on_topic(ctx, AclOperation.READ, topic) for topic, _ in wanted}
    denied = [
        _PartitionRead(topic, p.partition, ErrorCode.topic_authorization_failed, -1, -1, _EMPTY, 0)
        for topic, p in wanted
        if not allowed[topic]
    ]
    return [(topic, p) for topic, p in wanted if allowed[topic]], denied


def _should_park(
    reads: list[_PartitionRead], min_bytes: int, max_wait_s: float, ctx: ConnectionContext
) -> bool:
    total = sum(r.size for r in reads)
    has_error = any(r.error is not ErrorCode.none for r in reads)
    return total < min_bytes and not has_error and max_wait_s > 0 and not ctx.closed


def _record_follower_positions(
    replicas: ReplicaManager,
    isr: IsrManager,
    now: int,
    replica_id: int,
    wanted: list[tuple[str, Any]],
) -> None:
    """A follower's fetch offset is its LEO: the leader's HW may move."""
    for topic, p in wanted:
        partition = replicas.get(topic, p.partition)
        if partition is not None and partition.is_leader:
            partition.on_follower_fetch(replica_id, p.fetch_offset, now)
            isr.maybe_expand(partition)


def _read_all(
    leaders: Leaders,
    throttle: ReplicationThrottle,
    wanted: list[tuple[str, Any]],
    max_bytes: int,
    replica_id: int,
    read_committed: bool = False,
) -> list[_PartitionRead]:
    budget = max_bytes
    allowance = _ThrottleBudget()
    reads = []
    for topic, p in wanted:
        read = _read_one(
            leaders,
            throttle,
            topic,
            p,
            budget,
            first=budget == max_bytes,
            replica_id=replica_id,
            allowance=allowance,
            read_committed=read_committed,
        )
        budget = max(0, budget - read.size)
        reads.append(read)
    return reads


def _read_one(
    leaders: Leaders,
    throttle: ReplicationThrottle,
    topic: str,
    p: Any,
    budget: int,
    *,
    first: bool,
    replica_id: int,
    allowance: _ThrottleBudget,
    read_committed: bool = False,
) -> _PartitionRead:
    index = p.partition
    error, partition = leaders.led(topic, index, getattr(p, "current_leader_epoch", -1))
    if partition is None:
        return _PartitionRead(topic, index, error, -1, -1, _EMPTY, 0)
    hw = partition.high_watermark
    start = partition.log_start_offset
    # Followers replicate everything below the LEO and never look at the LSO: spare their
    # fetches (most of a replicated cluster's) its bookkeeping.
    lso = partition.last_stable_offset if replica_id < 0 else -1
    limit = min(p.partition_max_bytes, budget)
    if limit <= 0 and not first:
        return _PartitionRead(topic, index, ErrorCode.none, hw, start, _EMPTY, 0, False, lso)
    # Followers read up to the LEO; consumers only what the ISR has (below the HW), and
    # read_committed consumers only what every transaction has decided (below the LSO).
    max_offset = None if replica_id >= 0 else (lso if read_committed else hw)
    throttled = replica_id >= 0 and throttle.throttled(topic, index, replica_id)
    min_one_batch = first or limit > 0
    if throttled:
        allowed = allowance.take(throttle)
        if allowed <= 0:
            return _PartitionRead(topic, index, ErrorCode.none, hw, start, _EMPTY, 0, False, lso)
        limit = min(limit, allowed)
        min_one_batch = True  # a batch larger than the allowance must still move
    try:
        slices = partition.read(
            p.fetch_offset, max(limit, 1), max_offset=max_offset, min_one_batch=min_one_batch
        )
    except OffsetOutOfRangeError:
        return _PartitionRead(topic, index, ErrorCode.offset_out_of_range, hw, start, _EMPTY, 0)
    except KafkaStorageError:
        # The replica just went offline here (Partition): never serve what it holds.
        return _PartitionRead(topic, index, ErrorCode.kafka_storage_error, -1, -1, _EMPTY, 0)
    if not slices:
        return _PartitionRead(topic, index, ErrorCode.none, hw, start, _EMPTY, 0, False, lso)
    region = RecordsRegion(slices)
    if throttled:
        allowance.remaining = (allowance.remaining or 0) - region.total
    aborted = None
    if read_committed:
        # Kafka's collectAbortedTransactions up to the LSO: the client drops the records of
        # these producers from each first offset until it meets their ABORT marker.
        found = partition.aborted_transactions(p.fetch_offset, lso)
        aborted = tuple((txn.producer_id, txn.first_offset) for txn in found)
    return _PartitionRead(
        topic,
        index,
        ErrorCode.none,
        hw,
        start,
        region,
        region.total,
        throttled=throttled,
        last_stable_offset=lso,
        aborted=aborted,
    )


async def _park(
    replicas: ReplicaManager,
    wanted: list[tuple[str, Any]],
    min_bytes: int,
    timeout: float,
    ctx: ConnectionContext,
    read_all: Callable[[], list[_PartitionRead]],
) -> list[_PartitionRead] | None:
    """Wait until the partitions hold ``min_bytes`` for this reader, or ``timeout``.

    Partitions notify on every LEO or HW movement; each notification re-reads (index
    lookups only, no data is read) and completes the request once enough is available,
    returning those reads (Kafka's DelayedFetch completing on a produce). None: the wait
    expired or the connection closed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    wake = asyncio.Event()

    def on_change() -> None:
        wake.set()

    partitions = []
    for topic, p in wanted:
        partition = replicas.get(topic, p.partition)
        if partition is not None:
            partition.add_waiter(on_change)
            partitions.append(partition)
    try:
        while not ctx.closed:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                async with asyncio.timeout(remaining):
                    await wake.wait()
            except TimeoutError:
                return None
            wake.clear()
            reads = read_all()
            if not _should_park(reads, min_bytes, 1.0, ctx):
                return reads
        return None
    finally:
        for partition in partitions:
            partition.remove_waiter(on_change)


def _response(request: Request, reads: list[_PartitionRead]) -> Any:
    types = types_of(request)
    return respond(
        request,
        session_id=0,
        responses=by_topic(
            (
                (
                    r.topic,
                    make(
                        types.PartitionData,
                        partition_index=r.index,
                        error_code=r.error,
                        high_watermark=r.high_watermark,
                        last_stable_offset=r.last_stable_offset,
                        log_start_offset=r.log_start_offset,
                        aborted_transactions=(
                            None
                            if r.aborted is None
                            else tuple(
                                make(
                                    types.AbortedTransaction,
                                    producer_id=producer_id,
                                    first_offset=first_offset,
                                )
                                for producer_id, first_offset in r.aborted
                            )
                        ),
                        preferred_read_replica=-1,
                        records=r.records,
                    ),
                )
                for r in reads
            ),
            lambda topic, parts: make(types.FetchableTopicResponse, topic=topic, partitions=parts),
        ),
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.FETCH: ((4, 12), handle),
}

"""Follower side of replication: pull batches from each leader with Kafka's Fetch.

Theory of operation
-------------------
``num.replica.fetchers`` ``LeaderFetcher`` tasks per leader broker this broker follows (Kafka's
fetcher threads; a partition goes to ``fetcher_id``, Kafka's hash), each with its own
connection (``BrokerClient``); fetchers left without partitions are stopped. A partition added
to a fetcher first *truncates*: it asks the leader, with OffsetForLeaderEpoch (KIP-101), where
its latest leader epoch ends on the leader, and cuts its own log there, so a tail written under
an old leader that the new leader never had does not survive. Then the fetcher loops: one Fetch
(``replica_id`` = this broker, fetch offset = the follower's LEO) for all its partitions,
long-polling on the leader; each partition's records are appended unchanged (offsets and epochs
as the leader wrote them) and its HW taken from the response. The fetch offset *is* the
follower's LEO report: that is how the leader learns it and moves the HW.

Truncation follows Kafka's rules including KIP-279: when the leader answers with an older
epoch than the one asked about (it never had our latest epoch), the follower first cuts its
log to where *it* ended that older epoch and asks again, so several leader changes in a row
cannot leave a divergent tail in the middle of the log.

Each Fetch carries the broker's ``replica.fetch.*`` configs, as Kafka's ReplicaFetcherThread
sends them (``FetchSettings``): ``replica.fetch.wait.max.ms`` (max_wait),
``replica.fetch.min.bytes`` (min_bytes), ``replica.fetch.response.max.bytes`` (max_bytes of the
whole response) and ``replica.fetch.max.bytes`` (each partition's partition_max_bytes); every
request to the leader times out after ``replica.socket.timeout.ms``. Kafka cannot change any of
them dynamically (all read-only), so they are read once, when the broker starts.

Kafka's follower throttle (``FollowerThrottle``): a partition whose topic lists this broker's
replica in ``follower.replication.throttled.replicas`` (or ``*``) and that is not in the ISR
(still catching up, e.g. a reassignment's new replica) is left out of the Fetch while this
broker's throttled traffic exceeds ``follower.replication.throttled.rate`` bytes per second;
the bytes it receives are charged to that budget. In-sync replication is never slowed. When
every ready partition is held back, the fetcher waits ``replica.fetch.backoff.ms``, as Kafka's
does with an empty fetch.

Errors are per partition: a leader that does not lead (yet) answers NOT_LEADER_OR_FOLLOWER or
FENCED / UNKNOWN_LEADER_EPOCH; the partition is backed off for ``replica.fetch.backoff.ms``
and retried, as Kafka's fetcher does, because the new leader may simply not have learned of
its election yet; metadata replaces it when the leader moves elsewhere. OFFSET_OUT_OF_RANGE
below the leader's log start restarts the follower log there. A failed request (a broken
connection, a timeout) is retried after ``replica.fetch.backoff.ms`` too, as Kafka's fetcher
waits ``fetchBackOffMs`` after one; nothing here can stop the broker.

Connections go to the leader's endpoint on the inter-broker listener
(``inter.broker.listener.name``) and are secured as that listener requires (``security``:
TLS and/or SASL login as the broker's own user, ``weir.security.client``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.offset_for_leader_epoch.v4.request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)

from weir.client import BrokerClient, BrokerClientError
from weir.log.errors import LogError, RecordBatchTooLargeError
from weir.replication.quota import ReplicationQuota, is_throttled
from weir.security.client import ClientSecurity

if TYPE_CHECKING:
    # Types only: the fetcher drives partitions it is given, and weir.partition itself
    # imports weir.replication (LeaderState).
    from weir.config import BrokerConfig, TopicConfig
    from weir.partition import Partition

__all__ = [
    "FetchSettings",
    "FollowerThrottle",
    "ReplicaFetcherManager",
    "fetch_request",
    "fetcher_id",
]

log = logging.getLogger("weir.fetcher")

UNDEFINED = -1


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """The follower's ``replica.fetch.*`` configs; the defaults are Kafka's."""

    max_wait_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    partition_max_bytes: int = 1024 * 1024  # replica.fetch.max.bytes
    response_max_bytes: int = 10 * 1024 * 1024  # replica.fetch.response.max.bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30_000  # replica.socket.timeout.ms

    @classmethod
    def from_config(cls, config: BrokerConfig) -> FetchSettings:
        return cls(
            max_wait_ms=int(config.get("replica.fetch.wait.max.ms")),
            min_bytes=int(config.get("replica.fetch.min.bytes")),
            partition_max_bytes=int(config.get("replica.fetch.max.bytes")),
            response_max_bytes=int(config.get("replica.fetch.response.max.bytes")),
            backoff_ms=int(config.get("replica.fetch.backoff.ms")),
            socket_timeout_ms=int(config.get("replica.socket.timeout.ms")),
        )

    @property
    def request_timeout_s(self) -> float:
        return self.socket_timeout_ms / 1000

    @property
    def backoff_s(self) -> float:
        return self.backoff_ms / 1000


@dataclass(eq=False, repr=False, kw_only=True)
class FollowerThrottle:
    """Kafka's follower replication throttle, shared by every fetcher of this broker."""

    broker_id: int
    topic_config: Callable[[str], TopicConfig]
    config: Callable[[], BrokerConfig]
    now_s: Callable[[], float]
    _quota: ReplicationQuota = field(init=False, default_factory=ReplicationQuota)

    def throttled(self, partition: Partition) -> bool:
        """Listed follower replica (this broker's) of a partition it is not in sync with."""
        if self.broker_id in partition.isr:
            return False
        listed = self.topic_config(partition.topic).follower_replication_throttled_replicas
        return is_throttled(listed, partition.index, self.broker_id)

    def _rate(self) -> int:
        return int(self.config().get("follower.replication.throttled.rate"))

    def exceeded(self) -> bool:
        """True while the throttled traffic has used up its budget."""
        return not self._quota.available(rate=self._rate(), now_s=self.now_s())

    def record(self, size: int) -> None:
        """Count ``size`` throttled bytes just received."""
        self._quota.record(size, rate=self._rate(), now_s=self.now_s())


@dataclass(slots=True)
class _Followed:
    partition: Partition
    leader_epoch: int
    truncated: bool = False
    # Wall-clock ms before which the partition is not fetched (its leader refused it).
    delayed_until_ms: int = 0
    refusals: int = 0
    # Why the last follower append failed ("" once one succeeds): logged when it changes.
    append_failure: str = ""


@dataclass(eq=False, repr=False, kw_only=True)
class LeaderFetcher:
    """Replicates every partition this broker follows from one leader."""

    leader_id: int
    broker_id: int
    endpoint: Callable[[int], tuple[str, int] | None]
    time_ms: Callable[[], int]
    security: ClientSecurity | None = None
    settings: FetchSettings = field(default_factory=FetchSettings)
    throttle: FollowerThrottle | None = None
    _client: BrokerClient | None = field(init=False, default=None)
    partitions: dict[tuple[str, int], _Followed] = field(init=False, default_factory=dict)
    _changed: asyncio.Event = field(init=False, default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = field(init=False, default=None)

    def add(self, partition: Partition) -> None:
        key = (partition.topic, partition.index)
        self.partitions[key] = _Followed(partition=partition, leader_epoch=partition.leader_epoch)
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"fetcher-{self.leader_id}")

    def remove(self, key: tuple[str, int]) -> None:
        self.partitions.pop(key, None)
        self._changed.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._client is not None:
            await self._client.close()

    def _connect(self) -> BrokerClient | None:
        endpoint = self.endpoint(self.leader_id)
        if endpoint is None:
            return None
        if self._client is None or (self._client.host, self._client.port) != endpoint:
            self._client = BrokerClient(
                endpoint[0],
                endpoint[1],
                client_id=f"weir-replica-{self.broker_id}",
                security=self.security,
            )
        return self._client

    async def _run(self) -> None:
        while True:
            now = self.time_ms()
            active = [f for f in self.partitions.values() if f.delayed_until_ms <= now]
            if not active:
                self._changed.clear()
                delays = [f.delayed_until_ms - now for f in self.partitions.values()]
                timeout = min(delays) / 1000 if delays else None
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(timeout):
                        await self._changed.wait()
                continue
            client = self._connect()
            if client is None:
                await asyncio.sleep(self.settings.backoff_s)
                continue
            try:
                pending = [f for f in active if not f.truncated]
                if pending:
                    await self._truncate(client, pending)
                now = self.time_ms()
                ready = [f for f in active if f.truncated and f.delayed_until_ms <= now]
                fetchable = self.fetchable(ready)
                if fetchable:
                    await self._fetch(client, fetchable)
                elif ready:  # all held back by the throttle: wait as on an empty fetch
                    await asyncio.sleep(self.settings.backoff_s)
            except BrokerClientError as exc:
                log.info("fetch from broker %d failed: %s", self.leader_id, exc)
                await asyncio.sleep(self.settings.backoff_s)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("replica fetcher for leader %d failed; retrying", self.leader_id)
                await asyncio.sleep(self.settings.backoff_s)

    async def _truncate(self, client: BrokerClient, pending: list[_Followed]) -> None:
        """KIP-101: cut each log where the leader says our latest epoch ends."""
        request = OffsetForLeaderEpochRequest(
            replica_id=self.broker_id,
            topics=tuple(
                OffsetForLeaderTopic(
                    topic=topic,
                    partitions=tuple(
                        OffsetForLeaderPartition(
                            partition=f.partition.index,
                            current_leader_epoch=f.leader_epoch,
                            leader_epoch=_latest_epoch(f.partition),
                        )
                        for f in items
                    ),
                )
                for topic, items in _by_topic(pending).items()
            ),
        )
        response = await client.request(request, timeout=self.settings.request_timeout_s)
        for topic_result in response.topics:
            for result in topic_result.partitions:
                followed = self.partitions.get((topic_result.topic, result.partition))
                if followed is None:
                    continue
                partition = followed.partition
                if result.error_code != ErrorCode.none:
                    self._back_off(followed, ErrorCode(result.error_code))
                    continue
                followed.refusals = 0
                complete = truncate_by_epoch(
                    partition, result.leader_epoch, result.end_offset, leader_id=self.leader_id
                )
                followed.truncated = complete

    def fetchable(self, ready: list[_Followed]) -> list[_Followed]:
        """``ready`` without the throttled partitions while the throttle budget is spent."""
        throttle = self.throttle
        if throttle is None or not throttle.exceeded():
            return ready
        return [f for f in ready if not throttle.throttled(f.partition)]

    async def _fetch(self, client: BrokerClient, ready: list[_Followed]) -> None:
        request = fetch_request(self.broker_id, ready, self.settings)
        # Kafka's bound: replica.socket.timeout.ms, at least replica.fetch.wait.max.ms (the
        # broker refuses to start otherwise), so a long poll on the leader never times out.
        response = await client.request(request, timeout=self.settings.request_timeout_s)
        if response.error_code != ErrorCode.none:
            raise BrokerClientError(f"fetch failed: {ErrorCode(response.error_code).name}")
        for topic_result in response.responses:
            for data in topic_result.partitions:
                followed = self.partitions.get((topic_result.topic, data.partition_index))
                if followed is None or not followed.truncated:
                    continue
                if self.throttle is not None and self.throttle.throttled(followed.partition):
                    self.throttle.record(len(data.records or b""))
                self._apply(followed, data)

    def _apply(self, followed: _Followed, data: object) -> None:
        partition = followed.partition
        error = ErrorCode(data.error_code)  # type: ignore[attr-defined]
        if error == ErrorCode.offset_out_of_range:
            leader_start = data.log_start_offset  # type: ignore[attr-defined]
            if leader_start > partition.log_end_offset:
                log.info(
                    "%s-%d: behind the leader's log start %d; restarting there",
                    partition.topic,
                    partition.index,
                    leader_start,
                )
                partition.log.truncate_fully_and_start_at(leader_start)
            else:
                followed.truncated = False  # diverged: truncate by epoch again
            return
        if error != ErrorCode.none:
            self._back_off(followed, error)
            return
        followed.refusals = 0
        records = data.records  # type: ignore[attr-defined]
        try:
            partition.append_as_follower(records or b"", data.high_watermark)  # type: ignore[attr-defined]
        except LogError as exc:
            self._append_failed(followed, exc)
            return
        if followed.append_failure:
            followed.append_failure = ""
            log.info("%s-%d: follower appends again", partition.topic, partition.index)
        # As Kafka's followers do: adopt the leader's log start (retention, DeleteRecords), so
        # whole segments below it go here too without waiting for the next retention run.
        leader_start = data.log_start_offset  # type: ignore[attr-defined]
        if partition.log_start_offset < leader_start <= partition.log_end_offset:
            partition.delete_records_before(leader_start)

    def _append_failed(self, followed: _Followed, exc: LogError) -> None:
        """A fetched batch this log refuses: retry after ``replica.fetch.backoff.ms``,
        logging once per reason rather than once per attempt.

        Kafka's follower refuses the same appends (``UnifiedLog.append`` checks
        ``segment.bytes`` for followers too, so a batch written before the topic's
        ``segment.bytes`` was lowered cannot be replicated) and its fetcher then stops
        fetching the partition until its leadership changes. Retrying after the back-off
        instead costs one fetch a second and recovers by itself once the cause is gone
        (``segment.bytes`` raised again); the replica stays out of the ISR meanwhile.
        """
        partition = followed.partition
        reason = str(exc)
        level = logging.DEBUG if reason == followed.append_failure else logging.ERROR
        log.log(
            level,
            "%s-%d: follower append failed: %s; retrying every %d ms",
            partition.topic,
            partition.index,
            reason,
            self.settings.backoff_ms,
        )
        followed.append_failure = reason
        followed.delayed_until_ms = self.time_ms() + self.settings.backoff_ms
        if not isinstance(exc, RecordBatchTooLargeError):
            followed.truncated = False  # the log may have diverged: ask where ours ends again

    def _back_off(self, followed: _Followed, error: ErrorCode) -> None:
        """Retry this partition after ``replica.fetch.backoff.ms``: its leader refused it."""
        followed.refusals += 1
        level = logging.INFO if followed.refusals == 1 else logging.DEBUG
        log.log(
            level,
            "%s-%d: leader %d answered %s; retrying in %d ms",
            followed.partition.topic,
            followed.partition.index,
            self.leader_id,
            error.name,
            self.settings.backoff_ms,
        )
        followed.delayed_until_ms = self.time_ms() + self.settings.backoff_ms
        if error in (ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch):
            followed.truncated = False  # the epochs moved: ask where ours ends again


def fetch_request(
    broker_id: int, ready: Iterable[_Followed], settings: FetchSettings
) -> FetchRequest:
    """One follower Fetch for ``ready`` partitions, from each one's LEO, as Kafka's
    ReplicaFetcherThread builds it from the ``replica.fetch.*`` configs."""
    return FetchRequest(
        replica_id=broker_id,
        max_wait=timedelta(milliseconds=settings.max_wait_ms),
        min_bytes=settings.min_bytes,
        max_bytes=settings.response_max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=tuple(
            FetchTopic(
                topic=topic,
                partitions=tuple(
                    FetchPartition(
                        partition=f.partition.index,
                        current_leader_epoch=f.leader_epoch,
                        fetch_offset=f.partition.log_end_offset,
                        last_fetched_epoch=-1,
                        log_start_offset=f.partition.log_start_offset,
                        partition_max_bytes=settings.partition_max_bytes,
                    )
                    for f in items
                ),
            )
            for topic, items in _by_topic(ready).items()
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def truncate_by_epoch(
    partition: Partition, leader_epoch: int, end_offset: int, *, leader_id: int
) -> bool:
    """Apply one OffsetForLeaderEpoch answer; True when truncation is complete."""
    offset, complete = _truncation_point(partition, leader_epoch, end_offset)
    if offset < partition.log_end_offset:
        log.info(
            "%s-%d: truncating from %d to %d (leader %d: epoch %d ends at %d)",
            partition.topic,
            partition.index,
            partition.log_end_offset,
            offset,
            leader_id,
            leader_epoch,
            end_offset,
        )
        partition.truncate_to(offset)
    elif not complete:
        # Nothing to cut but epochs the leader never had, started at our LEO: drop them so
        # the next round asks about an older epoch instead of the same one forever.
        partition.log.leader_epoch_cache.truncate_from_end(offset)
    return complete


def _truncation_point(partition: Partition, leader_epoch: int, end_offset: int) -> tuple[int, bool]:
    """Where to cut the follower's log after OffsetForLeaderEpoch, and whether that is final.

    Kafka's rules: a follower without epochs, or a leader that knows none of ours, falls back
    to the high watermark (committed data is never cut). When the leader answers with an epoch
    the follower also has, cut at the smaller of both ends of that epoch. When the follower
    does not have the leader's epoch (KIP-279), cut where the follower's largest epoch below it
    ends and ask again with the now latest epoch.
    """
    leo = partition.log_end_offset
    if _latest_epoch(partition) == UNDEFINED:
        return leo, True
    if leader_epoch == UNDEFINED or end_offset == UNDEFINED:
        return min(partition.high_watermark, leo), True
    own_epoch, own_end = partition.log.leader_epoch_cache.end_offset_for(leader_epoch, leo)
    if own_end == UNDEFINED:
        return min(partition.high_watermark, leo), True
    if own_epoch != leader_epoch:
        return min(own_end, leo), False
    return min(own_end, end_offset, leo), True


def _by_topic(followed: Iterable[_Followed]) -> dict[str, list[_Followed]]:
    """Partitions grouped by topic, as Fetch and OffsetForLeaderEpoch requests list them."""
    by_topic: dict[str, list[_Followed]] = {}
    for f in followed:
        by_topic.setdefault(f.partition.topic, []).append(f)
    return by_topic


def _latest_epoch(partition: Partition) -> int:
    epoch = partition.log.leader_epoch_cache.latest_epoch
    return -1 if epoch is None else epoch


def fetcher_id(topic: str, partition: int, fetchers: int) -> int:
    """Which of a leader's ``fetchers`` replicates ``topic``-``partition``: Kafka's
    ``AbstractFetcherManager.getFetcherId``, ``abs(31 * topic.hashCode + partition) % n`` in
    Java's 32-bit arithmetic, so a partition goes to the same fetcher as on a Kafka broker."""
    units = topic.encode("utf-16-be")  # Java's String.hashCode hashes UTF-16 code units
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i : i + 2], "big")) & 0xFFFFFFFF
    value = _int32((31 * _int32(h) + partition) & 0xFFFFFFFF)
    return (0 if value == -(2**31) else abs(value)) % fetchers  # Kafka's Utils.abs


def _int32(value: int) -> int:
    return value - 2**32 if value >= 2**31 else value


@dataclass(eq=False, repr=False, kw_only=True)
class ReplicaFetcherManager:
    """The LeaderFetchers of this broker, following metadata's role changes.

    ``num.replica.fetchers`` fetchers per leader, each with its own connection; a partition
    goes to ``fetcher_id``. ``resize`` applies a new count (the config is dynamic in Kafka):
    every followed partition is re-added where the new count puts it. ``shutdown_idle`` stops
    fetchers left without partitions (Kafka's ``shutdownIdleFetcherThreads``).
    """

    broker_id: int
    endpoint: Callable[[int], tuple[str, int] | None]
    time_ms: Callable[[], int]
    security: ClientSecurity | None = None
    settings: FetchSettings = field(default_factory=FetchSettings)
    throttle: FollowerThrottle | None = None
    num_fetchers: int = 1
    _fetchers: dict[tuple[int, int], LeaderFetcher] = field(init=False, default_factory=dict)
    _stopping: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def follow(self, partition: Partition) -> None:
        """(Re)start replicating ``partition`` from its current leader."""
        self.unfollow((partition.topic, partition.index))
        key = (
            partition.leader_id,
            fetcher_id(partition.topic, partition.index, self.num_fetchers),
        )
        fetcher = self._fetchers.get(key)
        if fetcher is None:
            fetcher = LeaderFetcher(
                leader_id=partition.leader_id,
                broker_id=self.broker_id,
                endpoint=self.endpoint,
                time_ms=self.time_ms,
                security=self.security,
                settings=self.settings,
                throttle=self.throttle,
            )
            self._fetchers[key] = fetcher
        fetcher.add(partition)

    def unfollow(self, key: tuple[str, int]) -> None:
        for fetcher in self._fetchers.values():
            fetcher.remove(key)

    def is_following(self, key: tuple[str, int]) -> bool:
        return any(key in f.partitions for f in self._fetchers.values())

    def assignment(self) -> dict[tuple[int, int], set[tuple[str, int]]]:
        """``(leader id, fetcher id)`` → the partitions that fetcher replicates."""
        return {key: set(f.partitions) for key, f in self._fetchers.items() if f.partitions}

    def resize(self, num_fetchers: int) -> None:
        """Use ``num_fetchers`` fetchers per leader from now on."""
        if num_fetchers == self.num_fetchers:
            return
        log.info("replica fetchers per leader: %d -> %d", self.num_fetchers, num_fetchers)
        self.num_fetchers = num_fetchers
        followed = [
            f.partition for fetcher in self._fetchers.values() for f in fetcher.partitions.values()
        ]
        for partition in followed:
            self.follow(partition)
        self.shutdown_idle()

    def shutdown_idle(self) -> None:
        """Stop the fetchers that replicate nothing (their connections close)."""
        for key in [k for k, f in self._fetchers.items() if not f.partitions]:
            task = asyncio.create_task(self._fetchers.pop(key).stop(), name="fetcher-stop")
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def stop(self) -> None:
        for fetcher in self._fetchers.values():
            await fetcher.stop()
        self._fetchers.clear()
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)

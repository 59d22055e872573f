"""``MetadataCache``: a broker's local, always-available copy of the cluster metadata.

Theory of operation
-------------------
``start()`` loads ``MetadataStore.snapshot()`` (the materialized state and the stream id it
corresponds to), then two tasks keep the image current:

* the *tail* task reads ``metadata_log`` with ``XREAD BLOCK`` from that id. Records are
  buffered until the entry marked ``end`` (the last of one atomic write), then the whole
  batch is applied to the immutable image (``ClusterImage.apply``, pure) and listeners are
  called with the new image;
* the *liveness* task polls, every second, which registered brokers hold a lease (``MGET
  broker:<id>...``) and which partitions each reports offline, who holds the controller
  lease, and the store's ``incarnation``.

When Redis cannot be reached the cache keeps serving the last image (``connected`` turns
False) and retries with backoff. Once Redis answers again it *re-snapshots* instead of
resuming the tail, because the log may have moved on or the store may have been wiped (the
``incarnation`` changes then; ``ImageDiff.between(old, new).reset`` tells listeners).

On a Sentinel deployment the cache applies a log entry only once it is committed (on a
majority of the Redis data nodes, ``weir.metadata.quorum``), so an isolated old primary cannot
make a broker act on a write it accepted alone.

Listeners are plain or async callables taking the new image; they run one after another in
the tail task. An exception in a listener is logged and does not stop the cache.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from weir.loop_task import StopFlag, stop_tasks
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.image import ClusterImage, ControllerLease
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import stream_order
from weir.metadata.records import Record, UnknownRecordError, record_from_fields
from weir.metadata.registration import offline_partitions_of, shutting_down_of
from weir.metadata.store import MetadataStore

__all__ = ["Listener", "MetadataCache"]

log = logging.getLogger("weir.metadata.cache")

Listener = Callable[[ClusterImage], Awaitable[None] | None]

# How long stop() waits for the loops to end.
STOP_TIMEOUT_S = 5.0

# How far back before an outage a broker seen alive still counts as alive through the grace.
DEFAULT_LIVE_WINDOW_S = 30.0
# Liveness polls this many intervals apart mean Redis was away in between.
OUTAGE_GAP_POLLS = 3

_REDIS_DOWN = (RedisError, OSError, MetadataUnavailableError)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class MetadataCache:
    """The latest metadata image, kept up to date from Redis."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        cluster_id: str,
        block_ms: int = 1000,
        poll_interval_s: float = 1.0,
        max_backoff_s: float = 2.0,
        batch_size: int = 1000,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = redis
        self.keys = KeyLayout(cluster_id)
        self.store = MetadataStore(redis, cluster_id=cluster_id)
        self.block_ms = block_ms
        self.poll_interval_s = poll_interval_s
        self.max_backoff_s = max_backoff_s
        self.batch_size = batch_size
        self.connected = False
        self._image = ClusterImage()
        self._listeners: list[Listener] = []
        self._pending: list[Record] = []
        self._read_id = "0-0"
        self._resync = asyncio.Event()
        self._changed = asyncio.Event()
        self._lock = asyncio.Lock()
        self._flag = StopFlag()
        self._tasks: list[asyncio.Task[None]] = []
        self._monotonic = monotonic
        # The brokers alive when Redis was last lost, and when it came back (monotonic):
        # the controller's grace period after an outage (weir.controller.Grace).
        self.live_before_outage: frozenset[int] = frozenset()
        self.reconnected_at: float | None = None
        self._last_poll_at: float | None = None
        self._in_outage = False
        # When each broker was last seen holding its lease (monotonic), and how far back
        # an outage looks for the brokers it must not declare dead (the broker sets it).
        self._live_seen: dict[int, float] = {}
        self.live_window_s = DEFAULT_LIVE_WINDOW_S

    @property
    def image(self) -> ClusterImage:
        return self._image

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Load the first image (listeners are not called for it) and start tailing.

        Raises MetadataUnavailableError when Redis cannot be reached.
        """
        self._install(await self.store.snapshot())
        self.connected = True
        self._flag = StopFlag()
        self._tasks = [
            asyncio.create_task(self._tail_loop(), name="metadata-tail"),
            asyncio.create_task(self._liveness_loop(), name="metadata-liveness"),
        ]

    async def stop(self) -> None:
        """End both loops for sure: they check ``_flag`` and are cancelled until they end
        (redis-py can swallow a cancellation, see weir.loop_task). A cancel interrupts the
        blocking XREAD at once, so a stop does not wait for its ``block_ms``."""
        tasks, self._tasks = self._tasks, []
        await stop_tasks(tasks, STOP_TIMEOUT_S, flag=self._flag)

    async def wait_for(
        self, predicate: Callable[[ClusterImage], bool], timeout: float
    ) -> ClusterImage:
        """Wait until ``predicate(image)`` holds; the image, or TimeoutError."""
        async with asyncio.timeout(timeout):
            while not predicate(self._image):
                await self._changed.wait()
        return self._image

    def request_resync(self) -> None:
        """Re-snapshot at the next opportunity (e.g. after a suspected reset)."""
        self._resync.set()

    # -- internals -------------------------------------------------------------------------
    def _install(self, image: ClusterImage) -> None:
        self._image = image
        self._read_id = image.stream_id
        self._pending = []

    async def _update(self, change: Callable[[ClusterImage], ClusterImage]) -> None:
        """Replace the image with ``change(image)`` and tell the listeners, one at a time."""
        async with self._lock:
            old = self._image
            image = change(old)
            if image is old or image == old:
                return
            self._image = image
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()
            for listener in list(self._listeners):
                try:
                    outcome = listener(image)
                    if inspect.isawaitable(outcome):
                        await outcome
                except Exception:
                    log.exception("metadata listener %r failed", listener)

    # -- outages, for the controller's grace (weir.controller.Grace) ------------------------
    @property
    def in_outage(self) -> bool:
        """Whether an outage began and has not ended yet."""
        return self._in_outage

    def outage_began(self, since: float | None = None) -> None:
        """Redis is away or refuses writes (also told by the broker's heartbeat, which may
        hear of it only a socket timeout late): remember who was alive, once per outage.

        Leases may already have expired by the time anyone notices, so "alive" is every
        broker seen alive in the ``live_window_s`` before the outage began (``since``)."""
        if not self._in_outage:
            self._in_outage = True
            start = self._monotonic() if since is None else since
            recent = {
                b for b, seen in self._live_seen.items() if seen >= start - self.live_window_s
            }
            self.live_before_outage = frozenset(recent) | self._image.live_broker_ids

    def outage_ended(self) -> None:
        """Redis answers (and takes writes) again: the grace starts now (again, when reads
        came back before writes did)."""
        self._in_outage = False
        self.reconnected_at = self._monotonic()

    def _went_down(self, exc: BaseException) -> None:
        self.outage_began()
        if self.connected:
            log.warning("metadata store unreachable, serving the last image: %s", exc)
        self.connected = False
        self._resync.set()

    async def _resync_now(self) -> None:
        snapshot = await self.store.snapshot()
        old = self._image
        self._pending = []
        self._read_id = snapshot.stream_id
        self._resync.clear()
        if not self.connected:
            log.info("metadata store reachable again; resynchronized at %s", snapshot.stream_id)
            self.outage_ended()
        self.connected = True
        if old.incarnation and snapshot.incarnation != old.incarnation:
            log.warning(
                "metadata store was reset (incarnation %s -> %s)",
                old.incarnation,
                snapshot.incarnation,
            )
        await self._update(lambda _old: snapshot)

    async def _tail_loop(self) -> None:
        backoff = 0.05
        while self._flag.running:
            try:
                if self._resync.is_set():
                    await self._resync_now()
                reply = await self.redis.xread(
                    {self.keys.metadata_log: self._read_id},
                    count=self.batch_size,
                    block=self.block_ms,
                )
                backoff = 0.05
                if reply:
                    if await self._missed_trimmed_entries():
                        continue
                    await self._apply_reply(reply)
            except _REDIS_DOWN as exc:
                self._went_down(exc)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff_s)

    async def _missed_trimmed_entries(self) -> bool:
        """Were entries this cache never read trimmed from the log? Then re-snapshot.

        Only a cache that stopped reading for longer than ``metadata.max.retention.ms``
        (a paused process) can fall behind the trimmed point.
        """
        trimmed = await self.redis.get(self.keys.metadata_log_trimmed)
        if trimmed is None or stream_order(self._read_id) >= stream_order(_text(trimmed)):
            return False
        log.warning(
            "metadata log was trimmed past %s (through %s); re-snapshotting",
            self._read_id,
            _text(trimmed),
        )
        self._resync.set()
        return True

    async def _apply_reply(self, reply: Any) -> None:
        # RESP2: [[stream, [(id, fields), ...]]]; RESP3: {stream: [[(id, fields), ...]]}
        if isinstance(reply, dict):
            streams = list(reply.values())
            entries = streams[0][0] if streams and streams[0] else []
        else:
            entries = reply[0][1]
        if entries:
            # Apply nothing a Redis failover could still take back (weir.metadata.quorum):
            # raises, and the loop re-snapshots, if a majority does not hold it.
            await self.store.quorum.ensure_committed(_text(entries[-1][0]))
        completed: list[Record] = []
        end_id = None
        for entry_id, fields in entries:
            self._read_id = _text(entry_id)
            try:
                self._pending.append(record_from_fields(fields))
            except UnknownRecordError as exc:
                log.warning("skipping metadata record %s: %s", self._read_id, exc)
            if any(_text(k) == "end" for k in fields):
                completed += self._pending
                self._pending = []
                end_id = self._read_id
        if end_id is not None:
            await self._update(lambda image: image.apply(completed, stream_id=end_id))

    async def refresh_liveness(self) -> None:
        """Read the leases now rather than at the next poll (Redis away: keep the image)."""
        try:
            await self._poll_liveness()
        except _REDIS_DOWN as exc:
            self._went_down(exc)

    async def _liveness_loop(self) -> None:
        while self._flag.running:
            await asyncio.sleep(self.poll_interval_s)
            try:
                await self._poll_liveness()
            except _REDIS_DOWN as exc:
                self._went_down(exc)

    async def _poll_liveness(self) -> None:
        image = self._image
        ids = sorted(image.registrations)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.get(self.keys.controller)
            pipe.get(self.keys.incarnation)
            if ids:
                pipe.mget([self.keys.broker_lease(i) for i in ids])
            replies = await pipe.execute()
        controller, incarnation = replies[0], replies[1]
        leases = replies[2] if ids else []
        if image.incarnation and (incarnation is None or _text(incarnation) != image.incarnation):
            self._resync.set()  # wiped or replaced underneath us
            return
        live = [i for i, lease in zip(ids, leases, strict=True) if lease is not None]
        offline = {
            i: offline_partitions_of(lease)
            for i, lease in zip(ids, leases, strict=True)
            if lease is not None
        }
        stopping = [
            i
            for i, lease in zip(ids, leases, strict=True)
            if lease is not None and shutting_down_of(lease)
        ]
        lease = ControllerLease.parse(controller)
        self._note_poll(live)
        await self._update(lambda current: current.with_liveness(live, lease, offline, stopping))

    def _note_poll(self, live: list[int]) -> None:
        """A liveness poll answered. If the one before answered long ago, Redis was away
        (even if the client's retries hid it): an outage for the controller's grace."""
        now = self._monotonic()
        last, self._last_poll_at = self._last_poll_at, now
        if last is not None and now - last > OUTAGE_GAP_POLLS * self.poll_interval_s:
            self.outage_began(since=last)
            self.outage_ended()
        for broker_id in live:
            self._live_seen[broker_id] = now

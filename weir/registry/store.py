"""The registry stored in the cluster: the compacted ``_schemas`` topic, shared by every web
process, with one writer at a time.

Theory of operation
-------------------
**Reading.** Each process (one :class:`KafkaStore` per web process) runs a reader thread: a
confluent-kafka ``Consumer`` assigned to ``_schemas`` partition 0 from the beginning (no
group, nothing committed) that applies every record, in offset order, to the process's
:class:`~weir.registry.state.RegistryState`. A record another process wrote reaches every
reader within a fetch round trip (``fetch.wait.max.ms`` is 100 ms), well inside a second.
:meth:`KafkaStore.open` returns once the reader has caught up with the end of the topic as it
was at start, so a restarted process answers from everything written before.

**Writing.** Ids must be allocated by one process at a time, so writes go through a lease in
Redis (``weir.registry.lease``): a process that has a write to make takes the lease itself
(waiting while another process holds it) rather than forwarding the request to the holder.
That is the simpler correct design here: web processes have no address of each other, the
lease is held only for the duration of a write (released at once unless more writes are
queued in this process), and the cost -- a marker record per acquisition -- is small next to
an HTTP hop. A process that dies holding the lease leaves it to expire (its TTL, 5 s).

**Fencing: why two writers never hand out one id twice.** Every record a writer produces
carries its lease epoch in the header ``weir.epoch``, and the state ignores a record whose
epoch is lower than one it has already applied -- the same deterministic rule in every
process, so all processes accept and ignore the same records. A writer that takes the lease
at epoch E:

1. produces a ``NOOP`` marker stamped E and waits until its own reader has applied it. From
   that offset on, every reader ignores records stamped below E, so nothing a previous
   (perhaps paused, "zombie") writer still gets into the log after the marker counts; and
   whatever it got in before the marker, this writer's state already holds.
2. decides on that state (next id = one above the state's highest id and the ``max-id`` every
   writer records in Redis, so ids of hard-deleted schemas are not reused after compaction
   dropped their records either),
3. renews the lease -- atomically checking in Redis that E is still the current epoch and
   recording the new ``max-id`` -- and only then produces, with ``acks=all``, idempotence, and
   a delivery timeout (2 s) well inside the lease's fresh TTL (5 s): while the lease is
   valid nobody else takes it, so normally nobody else writes at all;
4. waits until its own reader has applied its records (read-your-writes) and answers from
   what the reader decided: if a newer writer's marker got in first, the records were
   ignored everywhere and the caller gets a 50001 error, never an id nobody else sees.

So the lease and the timeouts keep writers from overlapping in practice, and the epoch in the
log makes an overlap harmless when it happens anyway (a writer paused past its TTL).

Compaction keeps only the newest ``NOOP``, so once a newer marker replaced the one that
fenced a zombie's record, a process reading the log from scratch would apply that record.
Hence the next writer *repairs*: every reader remembers the records it ignored, and a
writer, right after its marker, rewrites each one's key with what the state holds there
(:meth:`~weir.registry.state.RegistryState.current`), which compaction then keeps instead.
The repair is written after the newer marker in the same transaction, in the active
segment, which compaction does not touch.

The store takes a librdkafka client config (``bootstrap.servers`` and any security
settings), a ``redis.Redis`` client and the cluster id; it imports no Django.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

import redis
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from weir.registry import errors
from weir.registry.backend import Txn
from weir.registry.lease import RegistryLease
from weir.registry.records import EPOCH_HEADER, NoopRecord, Record, UnreadableRecord, decode, encode
from weir.registry.state import RegistryState

__all__ = ["SCHEMAS_TOPIC", "KafkaStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMAS_TOPIC = "_schemas"
DELIVERY_TIMEOUT_MS = 2000
LEASE_TTL_MS = 5000
# Must stay well below the lease TTL: a write that outlives its lease is fenced (see above).
assert DELIVERY_TIMEOUT_MS * 2 <= LEASE_TTL_MS


class KafkaStore:
    """A :class:`~weir.registry.backend.Backend` over the cluster's ``_schemas`` topic."""

    def __init__(
        self,
        kafka_config: dict[str, Any],
        redis_client: redis.Redis,
        cluster_id: str,
        *,
        topic: str = SCHEMAS_TOPIC,
        timeout_s: float = 30.0,
        lease_ttl_ms: int = LEASE_TTL_MS,
        delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS,
    ) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self.state = RegistryState()
        self.owner = uuid.uuid4().hex
        self.lease = RegistryLease(redis_client, cluster_id, ttl_ms=lease_ttl_ms, owner=self.owner)
        self._config = dict(kafka_config)
        self._delivery_timeout_ms = delivery_timeout_ms
        # Guards the state and the reader's progress; readers of the state hold it briefly.
        self._cond = threading.Condition(threading.RLock())
        self._applied = 0  # the offset after the last record the reader applied
        self._fenced: set[int] = set()  # offsets of records the state ignored
        self._to_repair: list[Record] = []  # fenced records the next writer overwrites
        # One write transaction at a time in this process; _waiting counts those queued.
        self._write_lock = threading.Lock()
        self._waiting = 0
        self._epoch: int | None = None
        self._id_floor = 0
        self._stop = threading.Event()
        self._reader: threading.Thread | None = None
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None
        self._reader_error: BaseException | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> KafkaStore:
        """Create ``_schemas`` if needed, start the reader and wait until it has read what
        the topic held at start. On failure everything started is closed again."""
        try:
            self._open()
        except BaseException:
            self.close()
            raise
        return self

    def _open(self) -> None:
        self._ensure_topic()
        self._producer = Producer(
            {
                **self._config,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 0,
                "message.timeout.ms": self._delivery_timeout_ms,
            }
        )
        self._consumer = Consumer(
            {
                **self._config,
                # assign() joins no group; librdkafka still wants an id.
                "group.id": f"weir-schema-registry-{self.owner}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "fetch.wait.max.ms": 100,
                "enable.partition.eof": True,
            }
        )
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        end = self._end_offset()
        self._reader = threading.Thread(
            target=self._read_loop, name=f"schema-registry-reader-{self.owner[:8]}", daemon=True
        )
        self._reader.start()
        self._wait_applied(end - 1)

    def close(self) -> None:
        """Stop reading, give the lease up (another process may write at once) and close
        the clients."""
        self._stop.set()
        if self._reader is not None:
            self._reader.join(self.timeout_s)
        with self._write_lock:
            if self._epoch is not None:
                self.lease.release(self._epoch)
                self._epoch = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        if self._producer is not None:
            self._producer.flush(self.timeout_s)
            self._producer = None

    def __enter__(self) -> KafkaStore:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_topic(self) -> None:
        admin = AdminClient(self._config)
        metadata = admin.list_topics(timeout=self.timeout_s)
        if self.topic in metadata.topics and not metadata.topics[self.topic].error:
            return
        replicas = min(3, len(metadata.brokers))
        new = NewTopic(
            self.topic,
            num_partitions=1,
            replication_factor=replicas,
            config={"cleanup.policy": "compact"},
        )
        future = admin.create_topics([new], operation_timeout=self.timeout_s)[self.topic]
        try:
            future.result(self.timeout_s)
        except Exception as exc:
            error = exc.args[0] if exc.args else None
            if not (
                isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
            ):
                raise errors.store_error(f"cannot create topic {self.topic}: {exc}") from exc
        log.info("schema registry topic %s ready (replication factor %d)", self.topic, replicas)

    def _end_offset(self) -> int:
        """The topic's end offset now (retrying while a new topic gets its leader)."""
        assert self._consumer is not None
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                _, high = self._consumer.get_watermark_offsets(
                    TopicPartition(self.topic, 0), timeout=1.0, cached=False
                )
                return int(high)
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise errors.store_error(f"cannot read {self.topic}: {exc}") from exc
                time.sleep(0.1)

    # -- reading ---------------------------------------------------------------------------

    def _read_loop(self) -> None:
        assert self._consumer is not None
        try:
            while not self._stop.is_set():
                # poll, not consume(n, timeout): a batch call waits out its timeout unless n
                # records arrive, and a writer waits for its own record.
                message = self._consumer.poll(0.1)
                if message is None:
                    continue
                if message.error():
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        # Caught up, even when the last offsets hold no record any more
                        # (compaction): count the end as read.
                        self._caught_up(message.offset())
                    else:
                        log.warning("reading %s: %s", self.topic, message.error())
                    continue
                self._apply(message.offset(), message.key(), message.value(), message.headers())
        except BaseException as exc:  # the store must say why it stopped, not hang callers
            log.exception("schema registry reader stopped")
            with self._cond:
                self._reader_error = exc
                self._cond.notify_all()

    def _apply(
        self,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes]] | None,
    ) -> None:
        epoch = None
        for name, raw in headers or ():
            if name == EPOCH_HEADER and raw:
                with suppress(ValueError):
                    epoch = int(raw)
        try:
            record = decode(key, value)
        except UnreadableRecord as exc:
            # Bad input never stops the reader: the record is skipped, as Karapace does.
            log.warning("%s offset %d: %s", self.topic, offset, exc)
            record = None
        with self._cond:
            if not self.state.apply(record, epoch):
                self._fenced.add(offset)
                if record is not None and not isinstance(record, NoopRecord):
                    self._to_repair.append(record)
            self._applied = offset + 1
            self._cond.notify_all()

    def _caught_up(self, end: int) -> None:
        with self._cond:
            if end > self._applied:
                self._applied = end
                self._cond.notify_all()

    def _wait_applied(self, offset: int) -> None:
        """Wait until the reader has applied the record at ``offset``."""
        with self._cond:
            done = self._cond.wait_for(
                lambda: self._applied > offset or self._reader_error is not None,
                self.timeout_s,
            )
            if self._reader_error is not None:
                raise errors.store_error(f"the {self.topic} reader stopped: {self._reader_error}")
            if not done:
                raise errors.operation_timeout(
                    f"timed out reading {self.topic} up to offset {offset}"
                )

    @contextmanager
    def read(self) -> Iterator[RegistryState]:
        with self._cond:
            yield self.state

    def wait_until(self, predicate: Callable[[RegistryState], bool], timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until ``predicate(state)`` holds; whether it did."""
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.state), timeout)

    # -- writing ---------------------------------------------------------------------------

    def transact(self, decide: Callable[[Txn], T]) -> T:
        with self._cond:
            self._waiting += 1
        with self._write_lock:
            with self._cond:
                self._waiting -= 1
            try:
                return self._transact(decide)
            finally:
                self._release_unless_queued()

    def _transact(self, decide: Callable[[Txn], T]) -> T:
        epoch = self._ensure_lease()
        self._repair(epoch)
        with self._cond:
            txn = Txn(self.state, self._id_floor)
            result = decide(txn)
        if not txn.records:
            return result
        try:
            renewed = self.lease.renew(epoch, txn.max_id)
        except redis.RedisError as exc:
            raise errors.store_error(f"Error while renewing the writer lease: {exc}") from exc
        if not renewed:
            self._epoch = None
            raise errors.store_error("Error while writing the schema: the writer lease was lost")
        self._write(txn.records, epoch)
        self._id_floor = max(self._id_floor, txn.max_id)
        return result

    def _ensure_lease(self) -> int:
        """The epoch this process writes with, after taking the lease (waiting while another
        process holds it) and catching up with everything written before."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                epoch = self.lease.acquire()
            except redis.RedisError as exc:
                raise errors.store_error(f"Error while taking the writer lease: {exc}") from exc
            if epoch is not None:
                break
            if time.monotonic() > deadline:
                raise errors.unknown_leader(
                    "Unknown leader: another schema registry process holds the writer lease"
                )
            time.sleep(0.01)
        if epoch != self._epoch:
            self._epoch = epoch
            self._write([NoopRecord()], epoch)
            try:
                self._id_floor = self.lease.max_id()
            except redis.RedisError as exc:
                raise errors.store_error(f"Error while reading the id floor: {exc}") from exc
        return epoch

    def _repair(self, epoch: int) -> None:
        """Overwrite every fenced record this process has seen with what the state holds
        under its key, so compaction removes it (see "Fencing" above)."""
        with self._cond:
            fenced, self._to_repair = self._to_repair, []
            repairs = [r for r in (self.state.current(f) for f in fenced) if r is not None]
        if repairs:
            log.warning("overwriting %d fenced record(s) in %s", len(repairs), self.topic)
            self._write(repairs, epoch)

    def _release_unless_queued(self) -> None:
        with self._cond:
            queued = self._waiting > 0
        if not queued and self._epoch is not None:
            self.lease.release(self._epoch)
            self._epoch = None

    def _write(self, records: list[Record], epoch: int) -> None:
        """Produce ``records`` stamped ``epoch``, wait until this process's reader applied
        them, and fail if the state ignored them (a newer writer fenced this one)."""
        assert self._producer is not None
        offsets: list[int] = []
        failures: list[str] = []

        def delivered(err: KafkaError | None, message: Any) -> None:
            if err is not None:
                failures.append(str(err))
            else:
                offsets.append(message.offset())

        headers = [(EPOCH_HEADER, str(epoch).encode())]
        try:
            for record in records:
                key, value = encode(record)
                self._producer.produce(
                    self.topic,
                    value=value,
                    key=key,
                    partition=0,
                    headers=headers,
                    on_delivery=delivered,
                )
            left = self._producer.flush(self._delivery_timeout_ms / 1000 + 1)
        except (KafkaException, BufferError) as exc:
            failures.append(str(exc))
            left = -1
        if failures or left or len(offsets) != len(records):
            self._epoch = None  # the next write starts over with a fresh lease and marker
            raise errors.store_error(
                f"Error while writing to {self.topic}: {'; '.join(failures) or 'not delivered'}"
            )
        self._wait_applied(max(offsets))
        with self._cond:
            fenced = self._fenced.intersection(offsets)
        if fenced:
            self._epoch = None
            raise errors.store_error(
                f"Error while writing to {self.topic}: a newer writer fenced epoch {epoch}"
            )

"""A partition replica hosted by this broker: its log plus its role in replication.

Theory of operation
-------------------
The ``Log`` knows offsets and files; ``Partition`` adds what replication gives meaning to:
the leader and leader epoch, the replica set, the ISR and the high watermark (HW).

* As **leader** it keeps a ``LeaderState`` (follower LEOs, HW = min LEO over the ISR). Its
  appends assign offsets and stamp the leader epoch; followers' fetches move the HW.
* As **follower** it appends the leader's batches unchanged and takes the HW the leader
  reports (capped at its own LEO). Before fetching from a new leader the fetcher truncates
  it by leader epoch (KIP-101).

A failure of the disk under this replica (an ``OSError`` such as ENOSPC, EIO, EROFS or
EFBIG, a corrupt batch found on read, any ``KafkaStorageError`` of the log) is reported to
``on_storage_error`` (the replica manager takes the replica offline on this broker) and
surfaces as ``KafkaStorageError`` (KAFKA_STORAGE_ERROR on the wire), as Kafka fails a log
on an offline log directory. The write that failed was never acknowledged: the log cut it
off (or the loader's tail recovery will, on the next start).

Consumers never read at or above the HW. Two kinds of waiters are woken here: parked
Fetch requests and ``acks=all`` produces (the purgatory), on every LEO or HW movement; each
waiter re-checks its own condition, so a notification is only a hint.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from weir.log.errors import KafkaStorageError
from weir.log.log import AppendResult, FileSlice, Log, LogConfig
from weir.log.transaction_index import AbortedTxn
from weir.protocol.records import BatchHeader, CorruptBatchError
from weir.replication.isr import LeaderState

__all__ = ["AppendOutcome", "Partition"]


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    """Offsets of an append; ``duplicate`` when an idempotent retry was recognised."""

    base_offset: int
    last_offset: int
    log_append_time: int
    duplicate: bool = False


@dataclass(eq=False, repr=False, kw_only=True)
class Partition:
    """One local replica of ``topic``-``index``."""

    broker_id: int
    topic: str
    index: int
    topic_id: str
    log: Log
    leader_id: int = field(init=False, default=-1)
    leader_epoch: int = field(init=False, default=-1)
    partition_epoch: int = field(init=False, default=-1)
    replicas: tuple[int, ...] = field(init=False, default=())
    isr: tuple[int, ...] = field(init=False, default=())
    leader_state: LeaderState | None = field(init=False, default=None)
    # A follower learns the HW from its leader's fetch responses; until then 0 is the
    # safe value (a replica that becomes leader re-derives the HW from the ISR's LEOs).
    _follower_hw: int = field(init=False, default=0)
    _waiters: set[Callable[[], None]] = field(init=False, default_factory=set)
    isr_change_pending: bool = field(init=False, default=False)
    # Told when this replica's disk fails (see the module docstring); the replica manager's.
    on_storage_error: Callable[[Partition, str], None] | None = None

    def __repr__(self) -> str:
        role = "leader" if self.is_leader else f"follower of {self.leader_id}"
        return f"Partition({self.topic}-{self.index}, epoch={self.leader_epoch}, {role})"

    # state from metadata -----------------------------------------------------------------
    @property
    def is_leader(self) -> bool:
        return self.leader_state is not None

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def high_watermark(self) -> int:
        if self.leader_state is not None:
            return self.leader_state.high_watermark
        return min(self._follower_hw, self.log.log_end_offset)

    def make_leader(
        self,
        *,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        now_ms: int,
    ) -> bool:
        """Lead at ``leader_epoch``; True when this is a new leadership (not an update)."""
        new_term = self.leader_state is None or leader_epoch != self.leader_epoch
        self.leader_id = self.broker_id
        self.replicas, self.isr, self.partition_epoch = replicas, isr, partition_epoch
        if new_term:
            leo = self.log.log_end_offset
            epochs = self.log.leader_epoch_cache
            latest = epochs.latest_epoch
            if latest is None or leader_epoch > latest:
                epochs.assign(leader_epoch, leo)
            self.leader_epoch = leader_epoch
            self.leader_state = LeaderState(
                broker_id=self.broker_id,
                replicas=replicas,
                isr=isr,
                leader_epoch=leader_epoch,
                epoch_start_offset=leo,
                high_watermark=self.high_watermark_as_follower(),
                now_ms=now_ms,
            )
            self.leader_state.maybe_advance_hw(leo)
        else:
            assert self.leader_state is not None
            self.leader_state.update_replicas(replicas, now_ms=now_ms)
            self.leader_state.update_isr(isr)
            self.leader_state.maybe_advance_hw(self.log.log_end_offset)
        self.isr_change_pending = False
        self.notify()
        return new_term

    def make_follower(
        self,
        *,
        leader_id: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
    ) -> bool:
        """Follow ``leader_id``; True when the fetcher must (re)start this partition."""
        was_leader = self.leader_state is not None
        if was_leader:
            self._follower_hw = self.leader_state.high_watermark  # type: ignore[union-attr]
        changed = was_leader or leader_id != self.leader_id or leader_epoch != self.leader_epoch
        self.leader_state = None
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.replicas, self.isr = replicas, isr
        self.notify()
        return changed

    def high_watermark_as_follower(self) -> int:
        return min(self._follower_hw, self.log.log_end_offset)

    def update_config(self, config: LogConfig) -> None:
        self.log.update_config(config)

    # leader path -------------------------------------------------------------------------
    def append(
        self, payload: bytearray | memoryview, batches: list[tuple[int, BatchHeader]]
    ) -> AppendOutcome:
        """Append a produce payload (a writable buffer, stamped in place) as leader; raises
        the log's errors (LogError)."""
        try:
            result: AppendResult = self.log.append(payload, batches, leader_epoch=self.leader_epoch)
        except (KafkaStorageError, OSError) as exc:
            raise self._disk_failed("append", exc) from exc
        return self._appended(result)

    def append_control_marker(
        self, *, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int
    ) -> AppendOutcome:
        """Append a transaction's COMMIT or ABORT marker as leader (WriteTxnMarkers); raises
        the log's errors (a stale producer or coordinator epoch)."""
        try:
            result = self.log.append_control_marker(
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                commit=commit,
                coordinator_epoch=coordinator_epoch,
                leader_epoch=self.leader_epoch,
            )
        except (KafkaStorageError, OSError) as exc:
            raise self._disk_failed("append", exc) from exc
        return self._appended(result)

    def _appended(self, result: AppendResult) -> AppendOutcome:
        """After a leader append: move the HW (a single-replica ISR commits at once) and wake
        the waiters; a retried batch the log recognised as a duplicate changes nothing."""
        if not result.duplicate:
            if self.leader_state is not None:
                self.leader_state.maybe_advance_hw(self.log.log_end_offset)
            self.notify()
        return AppendOutcome(
            base_offset=result.base_offset,
            last_offset=result.last_offset,
            log_append_time=result.log_append_time,
            duplicate=result.duplicate,
        )

    def on_follower_fetch(self, replica_id: int, fetch_offset: int, now_ms: int) -> None:
        """A follower fetched from ``fetch_offset`` (its LEO): move the HW if it can."""
        if self.leader_state is None:
            return
        if self.leader_state.on_follower_fetch(
            replica_id,
            fetch_offset=fetch_offset,
            leader_leo=self.log.log_end_offset,
            now_ms=now_ms,
        ):
            # Transactions completed below the new HW are stable now (weir.log: the list of
            # those waiting for it stays short on a leader no consumer reads).
            self.log.on_high_watermark(self.high_watermark)
            self.notify()

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None,
        min_one_batch: bool = True,
    ) -> list[FileSlice]:
        """``Log.read`` (whole, CRC-verified batches below ``max_offset``; None: the LEO)."""
        try:
            return self.log.read(
                offset, max_bytes, max_offset=max_offset, min_one_batch=min_one_batch
            )
        except (KafkaStorageError, CorruptBatchError, OSError) as exc:
            raise self._disk_failed("read", exc) from exc

    @property
    def last_stable_offset(self) -> int:
        """The LSO: read_committed consumers read below it (min of the first offset of an
        undecided transaction and the HW; ``Log.last_stable_offset``)."""
        return self.log.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start, upper bound): a read_committed Fetch's
        ``aborted_transactions`` (``Log.collect_aborted_transactions``)."""
        try:
            return self.log.collect_aborted_transactions(start_offset, upper_bound_offset)
        except (KafkaStorageError, OSError) as exc:
            raise self._disk_failed("transaction index read", exc) from exc

    # follower path -----------------------------------------------------------------------
    def append_as_follower(self, payload: bytearray, leader_hw: int) -> None:
        if payload:
            try:
                self.log.append_as_follower(payload)
            except (KafkaStorageError, OSError) as exc:
                raise self._disk_failed("follower append", exc) from exc
        self.update_follower_hw(leader_hw)

    def update_follower_hw(self, leader_hw: int) -> None:
        if leader_hw >= 0:
            self._follower_hw = min(leader_hw, self.log.log_end_offset)
            self.log.on_high_watermark(self._follower_hw)

    def truncate_to(self, offset: int) -> None:
        try:
            self.log.truncate_to(offset)
        except (KafkaStorageError, CorruptBatchError, OSError) as exc:
            raise self._disk_failed("truncation", exc) from exc
        self._follower_hw = min(self._follower_hw, self.log.log_end_offset)

    def _disk_failed(self, doing: str, exc: Exception) -> KafkaStorageError:
        """Report a failure of this replica's disk; the error to raise in its place."""
        detail = str(exc) if isinstance(exc, KafkaStorageError) else f"{type(exc).__name__}: {exc}"
        cause = f"{doing} failed: {detail}"
        if self.on_storage_error is not None:
            self.on_storage_error(self, cause)
        return KafkaStorageError(f"{self.topic}-{self.index}: {cause}")

    # waiters -----------------------------------------------------------------------------
    def add_waiter(self, waiter: Callable[[], None]) -> None:
        self._waiters.add(waiter)

    def remove_waiter(self, waiter: Callable[[], None]) -> None:
        self._waiters.discard(waiter)

    def notify(self) -> None:
        for waiter in list(self._waiters):
            waiter()

    def flush(self, *, only_if_due: bool = False) -> None:
        """fsync the log (``only_if_due``: when ``flush.ms`` says so). A failed fsync takes
        the replica offline: after one, the kernel may have dropped the unwritten pages, so
        what the log holds is no longer known (Kafka fails the log directory too)."""
        try:
            if only_if_due:
                self.log.flush_if_due()
            else:
                self.log.flush()
        except (KafkaStorageError, OSError) as exc:
            raise self._disk_failed("flush", exc) from exc

    # lifecycle ---------------------------------------------------------------------------
    def delete_records_before(self, offset: int) -> int:
        return self.log.delete_records_before(offset)

    def close(self) -> None:
        self.log.close()

    def delete(self) -> None:
        self.log.delete()

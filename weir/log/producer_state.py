"""Producer state of one partition: idempotent dedup and the open transactions.

Theory of operation
-------------------
For every producer id the partition remembers the producer epoch and the metadata of its
last five batches (first/last sequence, first/last offset, timestamp), as Kafka does: a
producer has at most five requests in flight per partition, so a retry is always one of
them. ``check`` applies Kafka's rules to a batch before it is appended:

* same epoch and sequences equal to a remembered batch -> ``DuplicateBatch`` (answer with
  the original offsets, append nothing);
* epoch older than the remembered one -> ``InvalidProducerEpochError``;
* newer epoch -> the batch must start at sequence 0, else ``OutOfOrderSequenceError``;
* same epoch -> ``base_sequence`` must be the last sequence + 1 (wrapping at int32 max),
  else ``OutOfOrderSequenceError``;
* unknown producer id -> accepted whatever its sequence. Since KIP-360 (Kafka 2.5) brokers
  accept this because the producer's state may have been legitimately removed (retention,
  DeleteRecords, expiration) while the producer kept its sequence; rejecting it would make
  such producers fail forever.

* a non-transactional batch from a producer with an open transaction ->
  ``InvalidTxnStateError`` (Kafka's ProducerAppendInfo does the same).

``update`` records a batch after it was appended (and during replay from the log, where no
check runs: the log is the truth).

Transactions
------------
A transactional batch (attributes bit 4) opens a transaction for its producer unless one is
open: the entry remembers ``current_txn_first_offset``. A transaction marker (a control
batch, see ``weir.protocol.control_records``) closes it: ``update`` with the decoded
``marker`` returns a ``CompletedTxn`` when a transaction was open (a marker for a producer
with none completes nothing, as in Kafka) and remembers the coordinator epoch.
``check_marker`` is the leader's check before writing one: a producer epoch older than the
producer's -> ``InvalidProducerEpochError``; a coordinator epoch older than the last
marker's -> ``TransactionCoordinatorFencedError``. Replicated and replayed markers are
never checked.

The *first unstable offset* is Kafka's: the first offset of the oldest transaction that is
open, or completed but with its marker not yet known to be below the high watermark
(``on_high_watermark`` forgets those). Consumers reading committed data stop there (the
LSO). A completed transaction also yields the LSO written into an aborted-transaction index
entry: the first offset of the oldest transaction of *another* producer still open, or the
marker's offset + 1.

Snapshot format
---------------
``<20-digit offset>.snapshot`` in the partition directory holds the state after every batch
below that offset (Weir's own layout, big-endian; Kafka cannot read it)::

    version        int16    2 (1 is still read: no transaction fields)
    crc            uint32   CRC-32C of everything after this field
    producerCount  int32
    producerCount * (producerId int64, producerEpoch int16, lastTimestamp int64,
                     coordinatorEpoch int32, currentTxnFirstOffset int64,   (version 2)
                     batchCount int8,
                     batchCount * (firstSeq int32, lastSeq int32, firstOffset int64,
                                   lastOffset int64, timestamp int64))

``currentTxnFirstOffset`` is -1 when no transaction is open; loading a snapshot reopens the
transactions it records. Completed transactions awaiting the high watermark are not kept:
after a restart the broker's HW is re-learned and the replay from the snapshot re-completes
any marker above it.

Snapshots are written on segment roll and on close (tmp file, fsync, rename, directory
fsync). On open the log loads the latest readable snapshot at or below its recovery point
and replays batch headers from there to the LEO; an unreadable snapshot is deleted and the
next older one tried.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import crc32c
from kio.schema.errors import ErrorCode

from weir.log.checkpoint import fsync_directory
from weir.log.errors import LogError
from weir.log.segment import offset_from_file_name, segment_file_stem
from weir.protocol.control_records import EndTxnMarker
from weir.protocol.records import BatchHeader

__all__ = [
    "ActiveProducer",
    "BatchMetadata",
    "CompletedTxn",
    "Duplicate",
    "DuplicateBatch",
    "InvalidProducerEpochError",
    "InvalidTxnStateError",
    "OutOfOrderSequenceError",
    "ProducerStateEntry",
    "ProducerStateError",
    "ProducerStateManager",
    "TransactionCoordinatorFencedError",
]

log = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1
NO_OFFSET = -1
NO_COORDINATOR_EPOCH = -1

_HEAD = struct.Struct(">hIi")
_VERSION_CRC = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_PRODUCER_V1 = struct.Struct(">qhqb")
_PRODUCER = struct.Struct(">qhqiqb")
_BATCH = struct.Struct(">iiqqq")


class ProducerStateError(LogError):
    """A batch the producer-state rules reject; ``error_code`` is the Kafka error."""


class OutOfOrderSequenceError(ProducerStateError):
    error_code = ErrorCode.out_of_order_sequence_number


class InvalidProducerEpochError(ProducerStateError):
    error_code = ErrorCode.invalid_producer_epoch


class InvalidTxnStateError(ProducerStateError):
    """A non-transactional batch from a producer whose transaction is open."""

    error_code = ErrorCode.invalid_txn_state


class TransactionCoordinatorFencedError(ProducerStateError):
    """A marker from a coordinator older than the one that wrote the last marker."""

    error_code = ErrorCode.transaction_coordinator_fenced


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(frozen=True, slots=True)
class DuplicateBatch:
    """``check``'s verdict for a retried batch: the offsets it was first written at."""

    base_offset: int
    last_offset: int
    timestamp: int


Duplicate = DuplicateBatch


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended: [first_offset, last_offset] (the marker's offset), and
    the LSO once it ended (what an aborted-transaction index entry records)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class ActiveProducer:
    """What DescribeProducers reports of one producer (Kafka's field names)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1: no open transaction


@dataclass(slots=True)
class ProducerStateEntry:
    """The remembered state of one producer id."""

    producer_id: int
    producer_epoch: int
    last_timestamp: int = -1
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    # The coordinator epoch of the last marker, and the first offset of the open
    # transaction (-1: none).
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    current_txn_first_offset: int = NO_OFFSET

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def describe(self) -> ActiveProducer:
        return ActiveProducer(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            last_sequence=self.last_seq,
            last_timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_start_offset=self.current_txn_first_offset,
        )

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class ProducerStateManager:
    """Producer id -> state for one partition, with snapshots in the partition directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._producers: dict[int, ProducerStateEntry] = {}
        # Every batch below this offset is reflected in the state.
        self.map_end_offset = 0
        # ``(first offset, producer id)`` of every open transaction, sorted.
        self._ongoing: list[tuple[int, int]] = []
        # Completed transactions whose marker the high watermark has not passed yet.
        self._unreplicated: list[CompletedTxn] = []

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        return self._producers

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    # -- checks ----------------------------------------------------------------------------

    def check(self, header: BatchHeader) -> DuplicateBatch | None:
        """Apply Kafka's idempotence rules to ``header``: None means append it."""
        if not header.has_producer_id:
            return None
        self._check_transactional(header, {})
        return self._check_sequence(header)

    def _check_sequence(self, header: BatchHeader) -> DuplicateBatch | None:
        if header.base_sequence < 0:
            return None
        entry = self._producers.get(header.producer_id)
        if entry is None:
            return None  # unknown producer: accept any sequence (see module docstring)
        return self._check_against(
            header, entry.producer_epoch, entry.last_seq, entry.find_duplicate
        )

    def check_batches(self, headers: Iterable[BatchHeader]) -> DuplicateBatch | None:
        """``check`` for a whole produce payload, where one producer may send several
        batches in a row: later ones are checked against the earlier ones."""
        pending: dict[int, tuple[int, int]] = {}
        in_txn: dict[int, bool] = {}
        for header in headers:
            if not header.has_producer_id:
                continue
            self._check_transactional(header, in_txn)
            if header.base_sequence < 0:
                continue
            previous = pending.get(header.producer_id)
            if previous is None:
                duplicate = self._check_sequence(header)
                if duplicate is not None:
                    return duplicate
            else:
                self._check_against(header, previous[0], previous[1], None)
            pending[header.producer_id] = (header.producer_epoch, header.last_sequence)
        return None

    def _check_transactional(self, header: BatchHeader, in_txn: dict[int, bool]) -> None:
        """A producer with an open transaction writes transactional batches only."""
        pid = header.producer_id
        is_open = in_txn.get(pid)
        if is_open is None:
            entry = self._producers.get(pid)
            is_open = entry is not None and entry.current_txn_first_offset != NO_OFFSET
        if is_open and not header.is_transactional:
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {pid}: its transaction is open"
            )
        in_txn[pid] = is_open or header.is_transactional

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """The leader's check of a transaction marker before it is written (Kafka's
        ``appendEndTxnMarker`` for a coordinator's request); see the module docstring."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"transaction marker for producer {producer_id} has epoch {producer_epoch}, "
                f"older than the current epoch {entry.producer_epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"transaction marker for producer {producer_id} has coordinator epoch "
                f"{coordinator_epoch} (zombie), older than {entry.coordinator_epoch} (current)"
            )

    @staticmethod
    def _check_against(
        header: BatchHeader,
        epoch: int,
        last_seq: int,
        find_duplicate: Callable[[int, int], BatchMetadata | None] | None,
    ) -> DuplicateBatch | None:
        if header.producer_epoch < epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than "
                f"the current epoch {epoch}"
            )
        if header.producer_epoch > epoch:
            if header.base_sequence != 0:
                raise OutOfOrderSequenceError(
                    f"producer {header.producer_id} started new epoch {header.producer_epoch} "
                    f"at sequence {header.base_sequence}, not 0"
                )
            return None
        if find_duplicate is not None:
            cached = find_duplicate(header.base_sequence, header.last_sequence)
            if cached is not None:
                return DuplicateBatch(cached.first_offset, cached.last_offset, cached.timestamp)
        if not _in_sequence(last_seq, header.base_sequence):
            raise OutOfOrderSequenceError(
                f"producer {header.producer_id} epoch {epoch} sent sequence "
                f"{header.base_sequence}, expected {(last_seq + 1) % (INT32_MAX + 1)}"
            )
        return None

    # -- updates ---------------------------------------------------------------------------

    def update(
        self,
        header: BatchHeader,
        base_offset: int,
        *,
        timestamp: int | None = None,
        marker: EndTxnMarker | None = None,
    ) -> CompletedTxn | None:
        """Record an appended batch (``base_offset`` as stamped; ``timestamp`` defaults to
        the header's max timestamp).

        A control batch is a transaction marker only with its decoded ``marker`` (None: a
        control batch of another kind, or one the cleaner emptied: nothing to record).
        Returns the transaction a marker completed, if one was open."""
        last_offset = base_offset + header.last_offset_delta
        self.map_end_offset = max(self.map_end_offset, last_offset + 1)
        if not header.has_producer_id or (header.is_control and marker is None):
            return None
        ts = header.max_timestamp if timestamp is None else timestamp
        entry = self._producers.get(header.producer_id)
        if entry is None:
            entry = ProducerStateEntry(header.producer_id, header.producer_epoch)
            self._producers[header.producer_id] = entry
        elif header.producer_epoch != entry.producer_epoch:
            entry.producer_epoch = header.producer_epoch
            entry.batches.clear()
        entry.last_timestamp = ts
        if marker is not None:
            return self._complete(entry, marker, last_offset)
        if header.base_sequence >= 0:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence, header.last_sequence, base_offset, last_offset, ts
                )
            )
        if header.is_transactional and entry.current_txn_first_offset == NO_OFFSET:
            entry.current_txn_first_offset = base_offset
            bisect.insort(self._ongoing, (base_offset, entry.producer_id))
        return None

    def _complete(
        self, entry: ProducerStateEntry, marker: EndTxnMarker, offset: int
    ) -> CompletedTxn | None:
        entry.coordinator_epoch = marker.coordinator_epoch
        first = entry.current_txn_first_offset
        if first == NO_OFFSET:
            return None  # nothing open: the marker completes nothing (Kafka: no CompletedTxn)
        entry.current_txn_first_offset = NO_OFFSET
        self._ongoing.remove((first, entry.producer_id))
        # The LSO right after this marker: the oldest transaction still open (the completed
        # one was just removed, and a producer has one transaction at a time).
        last_stable = self._ongoing[0][0] if self._ongoing else offset + 1
        completed = CompletedTxn(
            producer_id=entry.producer_id,
            first_offset=first,
            last_offset=offset,
            aborted=not marker.commit,
            last_stable_offset=last_stable,
        )
        self._unreplicated.append(completed)
        return completed

    # -- transactions ----------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest transaction open or completed above the high
        watermark (see the module docstring); None when there is none."""
        candidates = [txn.first_offset for txn in self._unreplicated]
        if self._ongoing:
            candidates.append(self._ongoing[0][0])
        return min(candidates, default=None)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below ``high_watermark``."""
        if self._unreplicated:
            self._unreplicated = [
                txn for txn in self._unreplicated if txn.last_offset >= high_watermark
            ]

    def ongoing_transactions(self) -> list[tuple[int, int]]:
        """``(first offset, producer id)`` of each open transaction, oldest first."""
        return list(self._ongoing)

    def remove_expired_producers(self, now_ms: int, max_age_ms: int) -> None:
        """Forget producers idle for longer than ``max_age_ms`` (producer.id.expiration.ms);
        a producer with an open transaction never expires (Kafka's rule)."""
        expired = [
            pid
            for pid, e in self._producers.items()
            if now_ms - e.last_timestamp >= max_age_ms and e.current_txn_first_offset == NO_OFFSET
        ]
        for pid in expired:
            del self._producers[pid]

    def clear(self, map_end_offset: int) -> None:
        self._set_producers({})
        self.map_end_offset = map_end_offset

    def _set_producers(self, producers: dict[int, ProducerStateEntry]) -> None:
        """Replace the state (a snapshot was loaded): its open transactions are reopened,
        nothing completed waits for the high watermark."""
        self._producers = producers
        self._ongoing = sorted(
            (e.current_txn_first_offset, pid)
            for pid, e in producers.items()
            if e.current_txn_first_offset != NO_OFFSET
        )
        self._unreplicated = []

    # -- snapshots -------------------------------------------------------------------------

    def _snapshot_path(self, offset: int) -> Path:
        return self.directory / f"{segment_file_stem(offset)}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for path in self.directory.glob(f"*{SNAPSHOT_SUFFIX}"):
            offset = offset_from_file_name(path.name)
            if offset is not None:
                offsets.append(offset)
        return sorted(offsets)

    def take_snapshot(self) -> Path:
        """Write the state as of ``map_end_offset``."""
        parts = [_COUNT.pack(len(self._producers))]
        for entry in self._producers.values():
            parts.append(
                _PRODUCER.pack(
                    entry.producer_id,
                    entry.producer_epoch,
                    entry.last_timestamp,
                    entry.coordinator_epoch,
                    entry.current_txn_first_offset,
                    len(entry.batches),
                )
            )
            parts.extend(
                _BATCH.pack(b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp)
                for b in entry.batches
            )
        body = b"".join(parts)
        data = _VERSION_CRC.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + body
        path = self._snapshot_path(self.map_end_offset)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_directory(self.directory)
        return path

    def _read_snapshot(self, path: Path) -> dict[int, ProducerStateEntry]:
        data = path.read_bytes()
        if len(data) < _HEAD.size:
            raise ValueError(f"snapshot {path} is truncated ({len(data)} bytes)")
        version, crc, count = _HEAD.unpack_from(data, 0)
        if version not in (1, SNAPSHOT_VERSION):
            raise ValueError(f"snapshot {path} has unknown version {version}")
        if crc32c.crc32c(memoryview(data)[6:]) != crc:
            raise ValueError(f"snapshot {path} failed its CRC-32C check")
        producers: dict[int, ProducerStateEntry] = {}
        pos = _HEAD.size
        try:
            for _ in range(count):
                if version == 1:
                    pid, epoch, last_ts, n = _PRODUCER_V1.unpack_from(data, pos)
                    pos += _PRODUCER_V1.size
                    entry = ProducerStateEntry(pid, epoch, last_ts)
                else:
                    pid, epoch, last_ts, coordinator_epoch, txn_first, n = _PRODUCER.unpack_from(
                        data, pos
                    )
                    pos += _PRODUCER.size
                    entry = ProducerStateEntry(
                        pid,
                        epoch,
                        last_ts,
                        coordinator_epoch=coordinator_epoch,
                        current_txn_first_offset=txn_first,
                    )
                for _ in range(n):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, pos)))
                    pos += _BATCH.size
                producers[pid] = entry
        except struct.error as exc:
            raise ValueError(f"snapshot {path} is truncated: {exc}") from exc
        if pos != len(data):
            raise ValueError(f"snapshot {path} has {len(data) - pos} trailing bytes")
        return producers

    def load_latest_snapshot(self, at_or_below: int) -> int | None:
        """Load the newest readable snapshot <= ``at_or_below``; returns its offset.

        With none, the state is empty and the caller replays the whole log.
        """
        for offset in reversed(self.snapshot_offsets()):
            if offset > at_or_below:
                continue
            path = self._snapshot_path(offset)
            try:
                self._set_producers(self._read_snapshot(path))
            except (OSError, ValueError) as exc:
                log.warning(
                    "deleting unreadable producer snapshot (%s); the producer state is "
                    "rebuilt from an older snapshot or the log",
                    exc,
                )
                path.unlink(missing_ok=True)
                continue
            self.map_end_offset = offset
            return offset
        self._set_producers({})
        self.map_end_offset = 0
        return None

    def delete_snapshots_after(self, offset: int) -> None:
        """Delete snapshots above ``offset`` (the log was truncated there)."""
        for snapshot in self.snapshot_offsets():
            if snapshot > offset:
                self._snapshot_path(snapshot).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        for snapshot in self.snapshot_offsets():
            if snapshot < offset:
                self._snapshot_path(snapshot).unlink(missing_ok=True)

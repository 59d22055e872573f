"""The log of one partition: a directory of segments with Kafka's offsets and files.

Theory of operation
-------------------
``<topic>-<partition>/`` holds segments named by base offset (``<20 digits>.log``,
``.index``, ``.timeindex``), producer-state snapshots (``<20 digits>.snapshot``) and the
``leader-epoch-checkpoint``. Offsets are dense as the leader assigns them:

* **log start offset** — the first offset a consumer may read (DeleteRecords moves it up;
  whole segments below it are deleted);
* **LEO** (log end offset) — the offset the next appended record gets;
* **recovery point** — every offset below it is fsynced; recovery after a crash
  CRC-scans from the segment holding it (see ``loader``).

The produce path does no per-record work and never re-reads what it wrote: ``append``
stamps ``baseOffset`` and ``partitionLeaderEpoch`` into each batch header in place (both
outside the CRC; LogAppendTime topics also rewrite ``maxTimestamp`` and the CRC), rolls the
active segment if Kafka's rule says so, writes the payload with one ``write()`` and updates
the indexes, the leader-epoch cache and the producer state from the headers it already has.
The one exception is a topic whose ``compression.type`` names a codec: a batch in another
codec is decompressed and recompressed first (``weir.protocol.deflate``), as Kafka does.

Flush policy, Kafka's: every write goes to the page cache; an append that leaves
``flush_messages`` (``flush.messages``) or more offsets above the recovery point fsyncs the
log at once, and ``flush_if_due`` -- called by the broker's flusher every
``log.flush.scheduler.interval.ms`` -- fsyncs a log not flushed for ``flush_ms``
(``flush.ms``). Both default to never (Long.MAX_VALUE): durability comes from replication,
and the periodic recovery-point checkpoint flushes too.

Transactions (KIP-98): transactional batches open a transaction for their producer and a
control batch (a COMMIT or ABORT marker, written by ``append_control_marker`` on the
coordinator's behalf or replicated) closes it; these are the only batches whose record is
ever decoded on an append path, and each holds one record. The producer state tracks the
open transactions, which give the *last stable offset* (``last_stable_offset``); each ABORT
marker adds an entry to its segment's ``.txnindex`` (``transaction_index``), from which
``collect_aborted_transactions`` answers read_committed fetches.

A write the disk refuses (ENOSPC, EIO, EROFS, EFBIG; a roll's new files included) raises
``KafkaStorageError`` with nothing of the payload left in the file and no offset moved
(``_write``); the partition above takes the replica offline.

Fetch gets ``FileSlice`` objects (whole batches) to send with ``sendfile``; a segment
CRC-checks bytes it did not append itself before their first read (``LogSegment.read``). A deleted
segment's data file stays open for ``file_delete_delay_ms`` so a slice being sent keeps
working, as Kafka's ``file.delete.delay.ms`` does.

A ``FileSlice``'s file object is shared by every reader of the segment: send it with
explicit offsets (``os.sendfile``/``os.pread``), never by seeking and reading, which two
concurrent senders would interleave.

Not thread-safe: the broker calls a ``Log`` from one thread (its event loop).
"""

from __future__ import annotations

import bisect
import logging
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from weir.log.checkpoint import fsync_directory
from weir.log.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    LogError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from weir.log.loader import (
    CLEAN_SHUTDOWN_FILE,
    SWAP_SUFFIX,
    LoadedLog,
    LogLoader,
    index_completed_txn,
    read_marker,
    replay_producer_state,
)
from weir.log.producer_state import ActiveProducer
from weir.log.segment import BatchInfo, FileSlice, LogSegment
from weir.log.time_index import NO_TIMESTAMP
from weir.log.transaction_index import AbortedTxn
from weir.protocol.batch_builder import end_txn_marker_batch
from weir.protocol.control_records import EndTxnMarker
from weir.protocol.deflate import CODEC_OF_COMPRESSION_TYPE, recompress_batches
from weir.protocol.inflate import iter_offsets_and_timestamps
from weir.protocol.records import (
    BatchHeader,
    CorruptBatchError,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batches,
)

__all__ = [
    "AbortedTxn",
    "ActiveProducer",
    "AppendResult",
    "FileSlice",
    "Log",
    "LogConfig",
    "LogError",
    "OffsetOutOfRangeError",
]

log = logging.getLogger(__name__)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
LONG_MAX = 2**63 - 1  # Kafka's "never" for flush.messages and flush.ms
# Draws each segment's roll jitter (segment.jitter.ms); tests pass a Random of their own.
_JITTER_RANDOM = random.Random()
PRODUCER_COMPRESSION = "producer"  # compression.type: keep the producer's codec


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs the log obeys (Kafka names: segment.bytes, segment.ms, ...)."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10485760
    message_timestamp_type: str = CREATE_TIME
    max_message_bytes: int = 1048588
    file_delete_delay_ms: int = 60000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    # Only read when the log is opened: a compacted log may have offset gaps between
    # segments, any other log must not (see ``LogLoader.check_offset_gaps``).
    cleanup_policy: tuple[str, ...] = ("delete",)
    compression_type: str = PRODUCER_COMPRESSION
    # Effective values (``TopicConfig``: the deprecated difference.max.ms folded in).
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX

    def __post_init__(self) -> None:
        if (
            self.compression_type != PRODUCER_COMPRESSION
            and self.compression_type not in CODEC_OF_COMPRESSION_TYPE
        ):
            raise ValueError(f"compression.type {self.compression_type!r} is not a codec")
        if self.message_timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
            raise ValueError(
                f"message.timestamp.type must be {CREATE_TIME} or {LOG_APPEND_TIME}, "
                f"not {self.message_timestamp_type!r}"
            )
        if self.segment_bytes < 14:
            raise ValueError(f"segment.bytes {self.segment_bytes} is below the minimum of 14")
        if self.segment_index_bytes < 24:
            raise ValueError(
                f"segment.index.bytes {self.segment_index_bytes} is below the minimum of 24"
            )
        if self.segment_ms < 1 or self.index_interval_bytes < 0 or self.max_message_bytes < 0:
            raise ValueError(
                "segment.ms, index.interval.bytes and max.message.bytes must be positive"
            )


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed. ``log_append_time`` is -1 for CreateTime topics;
    ``offset_of_max_timestamp`` is the last offset of the batch holding the max timestamp
    (the first offset for LogAppendTime). ``duplicate``: an idempotent retry, not written."""

    base_offset: int
    last_offset: int
    log_append_time: int
    max_timestamp: int
    offset_of_max_timestamp: int
    duplicate: bool = False


class Log:
    """One partition's log. Create with ``Log.open``."""

    def __init__(
        self,
        directory: Path,
        *,
        config: LogConfig,
        time_ms: Callable[[], int],
        loaded: LoadedLog,
        jitter_random: random.Random = _JITTER_RANDOM,
    ) -> None:
        """Take over what ``LogLoader`` recovered; the log mutates it from here on."""
        self.directory = directory
        self.config = config
        self._time_ms = time_ms
        self._segments = list(loaded.segments)
        self._bases = [s.base_offset for s in self._segments]
        self.log_start_offset = loaded.log_start_offset
        self.log_end_offset = loaded.log_end_offset
        self.recovery_point = loaded.recovery_point
        self.leader_epoch_cache = loaded.leader_epoch_cache
        self.producer_state = loaded.producer_state
        self.size_bytes = sum(s.size for s in self._segments)
        self._retired: list[tuple[int, BinaryIO]] = []
        self._dir_dirty = False
        self._closed = False
        # When the log was last fsynced, for flush.ms (Kafka starts counting at load).
        self.last_flush_ms = time_ms()
        # ``_sync_state()`` when every file of the active segment was last known fsynced
        # (a clean open, a brand-new log, a flush); None: unknown. Lets close skip fsyncs
        # of files that did not change since.
        self._synced: tuple[int, ...] | None = None
        self._jitter_random = jitter_random
        # The active segment's roll jitter, drawn when it became active (Kafka's
        # ``LogSegment.rollJitterMs``, drawn at creation and at load).
        self._roll_jitter_ms = self._draw_roll_jitter()

    @classmethod
    def open(
        cls,
        directory: Path,
        *,
        config: LogConfig,
        time_ms: Callable[[], int],
        recovery_point: int = 0,
        log_start_offset: int = 0,
        assume_unclean: bool = False,
        jitter_random: random.Random = _JITTER_RANDOM,
    ) -> Log:
        """Open (creating if missing) and recover the partition directory.

        ``assume_unclean``: CRC-scan from ``recovery_point`` even after a clean shutdown
        (the caller could not read the recovery-point checkpoint)."""
        # Both mean the files are on disk as they are (the loader removes the marker).
        synced = not directory.exists() or (directory / CLEAN_SHUTDOWN_FILE).exists()
        directory.mkdir(parents=True, exist_ok=True)
        loaded = LogLoader(
            directory,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            time_ms=time_ms,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            assume_unclean=assume_unclean,
            check_offset_gaps="compact" not in (p.lower() for p in config.cleanup_policy),
        ).load()
        opened = cls(
            directory,
            config=config,
            time_ms=time_ms,
            loaded=loaded,
            jitter_random=jitter_random,
        )
        if synced:
            opened._synced = opened._sync_state()
        return opened

    def __repr__(self) -> str:
        return (
            f"Log({self.directory}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def time_ms(self) -> Callable[[], int]:
        """The clock the log reads (segments built beside it, by the cleaner, share it)."""
        return self._time_ms

    # -- segments --------------------------------------------------------------------------

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def _floor_index(self, offset: int) -> int:
        """Index of the segment holding ``offset`` (0 if it is below every segment)."""
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    def _new_segment(self, base_offset: int) -> LogSegment:
        self._dir_dirty = True
        return LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_size=self.config.segment_index_bytes,
            time_ms=self._time_ms,
        )

    def _retire(self, segment: LogSegment) -> None:
        """Delete a segment's files, keeping its data file open for in-flight slices."""
        segment.delete(close_data_file=False)
        self._retired.append((self._time_ms() + self.config.file_delete_delay_ms, segment.file))
        self.size_bytes -= segment.size
        self._dir_dirty = True

    def _close_retired(self, *, everything: bool = False) -> None:
        if not self._retired:
            return
        now = self._time_ms()
        keep = []
        for deadline, file in self._retired:
            if everything or deadline <= now:
                file.close()
            else:
                keep.append((deadline, file))
        self._retired = keep

    def _roll(self, base_offset: int) -> None:
        old = self.active_segment
        if old.size == 0:
            # Only an append far above an empty segment's base gets here: replace it.
            self._segments.pop()
            self._bases.pop()
            self._retire(old)
        else:
            old.on_become_inactive()
        self._segments.append(self._new_segment(base_offset))
        self._bases.append(base_offset)
        self._roll_jitter_ms = self._draw_roll_jitter()
        self.producer_state.map_end_offset = self.log_end_offset
        self.producer_state.take_snapshot()
        log.debug("%s: rolled a new segment at offset %d", self.directory, base_offset)

    def _draw_roll_jitter(self) -> int:
        """Kafka's ``LogConfig.randomSegmentJitter``: uniform in
        ``[0, min(segment.jitter.ms, segment.ms))``, subtracted from ``segment.ms`` for one
        segment so that logs created together do not all roll at once."""
        jitter = self.config.segment_jitter_ms
        if jitter <= 0:
            return 0
        return self._jitter_random.randrange(min(jitter, self.config.segment_ms))

    def _maybe_roll(
        self, *, size: int, max_timestamp: int, first_offset: int, last_offset: int, now_ms: int
    ) -> None:
        if self.active_segment.should_roll(
            messages_size=size,
            max_timestamp_in_messages=max_timestamp,
            max_offset_in_messages=last_offset,
            now_ms=now_ms,
            segment_bytes=self.config.segment_bytes,
            segment_ms=self.config.segment_ms - self._roll_jitter_ms,
        ):
            self._roll(first_offset)

    def _check_open(self) -> None:
        if self._closed:
            raise LogError(f"log {self.directory} is closed")

    def replace_segments(
        self,
        new: LogSegment,
        old: Sequence[LogSegment],
        *,
        on_step: Callable[[str], None] | None = None,
    ) -> None:
        """Swap ``new`` in for ``old``, a run of inactive segments (Kafka's ``replaceSegments``).

        ``new`` is a finished segment whose fsynced files still carry a temporary suffix
        (the cleaner's ``.cleaned``); it starts at ``old[0]``'s base offset and holds no
        batch at or above the segment after ``old``. The steps are Kafka's, each one a state
        the loader can finish or undo after a crash:

        1. rename ``new``'s files to ``.swap`` and fsync the directory — from here on the
           loader completes the swap (``loader`` pass 1);
        2. drop ``old`` from the log and delete their files (data files stay open for
           in-flight FileSlices, as on any deletion);
        3. rename ``new``'s files to their final names, fsync the directory, install it.

        ``on_step`` (tests: a crash hook) is called after each step with ``"swap-renamed"``,
        ``"old-segment-deleted"`` (after each deletion) and ``"swap-completed"``.
        """
        self._check_open()
        if not old:
            raise ValueError("replace_segments needs at least one segment to replace")
        try:
            start = next(i for i, s in enumerate(self._segments) if s is old[0])
        except StopIteration:
            raise LogError(
                f"{self.directory}: segment at offset {old[0].base_offset} is no longer part "
                f"of the log"
            ) from None
        stop = start + len(old)
        if stop >= len(self._segments) or any(
            a is not b for a, b in zip(self._segments[start:stop], old, strict=True)
        ):
            raise LogError(
                f"{self.directory}: segments {[s.base_offset for s in old]} are not a run of "
                f"inactive segments of the log"
            )
        if new.base_offset != old[0].base_offset:
            raise LogError(
                f"{self.directory}: replacement segment starts at {new.base_offset}, the "
                f"replaced ones at {old[0].base_offset}"
            )
        step = on_step or (lambda _: None)
        if not new.txn_index.entries:
            # Until the cleaner removes aborted data (and writes its own entries), the new
            # segment keeps every marker of the old ones, so it keeps their entries too.
            for segment in old:
                for entry in segment.txn_index.entries:
                    new.txn_index.append(entry)
            new.txn_index.flush()
        new.change_file_suffix(SWAP_SUFFIX)
        fsync_directory(self.directory)
        step("swap-renamed")
        for segment in old:
            self._segments.pop(start)
            self._bases.pop(start)
            self._retire(segment)
            step("old-segment-deleted")
        new.change_file_suffix("")
        fsync_directory(self.directory)
        self._segments.insert(start, new)
        self._bases.insert(start, new.base_offset)
        self.size_bytes += new.size
        self._dir_dirty = False
        step("swap-completed")
        log.info(
            "%s: replaced %d segment(s) from offset %d with a %d-byte segment",
            self.directory,
            len(old),
            new.base_offset,
            new.size,
        )

    # -- configuration ---------------------------------------------------------------------

    def update_config(self, config: LogConfig) -> None:
        """New topic configs; index sizes apply to segments created from now on."""
        self.config = config
        for segment in self._segments:
            segment.index_interval_bytes = config.index_interval_bytes

    # -- appending -------------------------------------------------------------------------

    def _check_sizes(
        self,
        payload_size: int,
        headers: Sequence[BatchHeader],
        *,
        leader: bool,
        control_ok: bool = False,
    ) -> None:
        if payload_size > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"{payload_size}-byte append to {self.directory} exceeds segment.bytes "
                f"{self.config.segment_bytes}"
            )
        if not headers:
            raise InvalidRecordError(f"append to {self.directory} holds no record batch")
        if not leader:
            return
        for header in headers:
            if header.is_control and not control_ok:
                raise InvalidRecordError("clients may not write control batches")
            if header.size > self.config.max_message_bytes:
                # Clients see this message (MESSAGE_TOO_LARGE): no data directory in it.
                raise RecordTooLargeError(
                    f"batch of {header.size} bytes exceeds max.message.bytes "
                    f"{self.config.max_message_bytes}"
                )
            if header.records_count != header.last_offset_delta + 1:
                raise InvalidRecordError(
                    f"batch declares {header.records_count} records but a last offset delta "
                    f"of {header.last_offset_delta}"
                )

    def _write(
        self,
        payload: bytearray | memoryview,
        infos: list[BatchInfo],
        max_timestamp: int,
        first_offset: int,
        last_offset: int,
        now_ms: int,
    ) -> None:
        """Roll if due, then write ``payload`` to the active segment.

        A failing disk (ENOSPC, EIO, EROFS, EFBIG; creating a rolled segment's files
        included) raises KafkaStorageError with nothing of the payload left in the file and
        the log's offsets untouched; the caller takes the partition offline."""
        try:
            self._maybe_roll(
                size=len(payload),
                max_timestamp=max_timestamp,
                first_offset=first_offset,
                last_offset=last_offset,
                now_ms=now_ms,
            )
            self.active_segment.append(payload, infos)
        except OSError as exc:
            raise KafkaStorageError(
                f"{self.directory}: append at offset {first_offset} failed: {exc}"
            ) from exc

    def append(
        self,
        payload: bytearray | memoryview,
        batches: list[tuple[int, BatchHeader]],
        *,
        leader_epoch: int,
    ) -> AppendResult:
        """Append a produce payload as leader; ``batches`` from ``validate_batches``.

        ``payload`` is any writable buffer (the produce path passes a view of the request's
        frame): the broker's fields are stamped into it in place and it is written as is,
        unless the topic's ``compression.type`` makes the log recompress it into a new buffer.
        ``max.message.bytes`` and ``segment.bytes`` are checked here and nowhere else.

        Raises RecordTooLargeError / RecordBatchTooLargeError / InvalidRecordError and the
        producer-state errors; returns the original offsets for an idempotent retry.
        """
        return self._append_as_leader(payload, batches, leader_epoch=leader_epoch)

    def append_control_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        leader_epoch: int,
        timestamp_ms: int | None = None,
    ) -> AppendResult:
        """Write a COMMIT or ABORT marker ending ``producer_id``'s transaction (the
        leader's part of WriteTxnMarkers), through the leader's append path.

        Raises InvalidProducerEpochError for an epoch older than the producer's and
        TransactionCoordinatorFencedError for a coordinator epoch older than the last
        marker's. A producer with no open transaction still gets its marker (as in Kafka:
        the coordinator may resend one after a failover)."""
        self._check_open()
        self.producer_state.check_marker(producer_id, producer_epoch, coordinator_epoch)
        payload = end_txn_marker_batch(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp_ms=self._time_ms() if timestamp_ms is None else timestamp_ms,
        )
        batches = validate_batches(payload)
        marker = EndTxnMarker(commit=commit, coordinator_epoch=coordinator_epoch)
        return self._append_as_leader(payload, batches, leader_epoch=leader_epoch, marker=marker)

    def _append_as_leader(
        self,
        payload: bytearray | memoryview,
        batches: list[tuple[int, BatchHeader]],
        *,
        leader_epoch: int,
        marker: EndTxnMarker | None = None,
    ) -> AppendResult:
        """``append``; with ``marker``, ``payload`` is that marker's one control batch (the
        broker's own, so it is not recompressed)."""
        self._check_open()
        config = self.config
        headers = [header for _, header in batches]
        self._check_sizes(len(payload), headers, leader=True, control_ok=marker is not None)
        log_append_time = config.message_timestamp_type == LOG_APPEND_TIME
        if not log_append_time:
            self._check_timestamps(payload, batches)
        duplicate = self.producer_state.check_batches(headers)
        if duplicate is not None:
            return AppendResult(
                base_offset=duplicate.base_offset,
                last_offset=duplicate.last_offset,
                log_append_time=duplicate.timestamp if log_append_time else NO_TIMESTAMP,
                max_timestamp=duplicate.timestamp,
                offset_of_max_timestamp=duplicate.last_offset,
                duplicate=True,
            )
        if marker is None:
            payload, batches = self._recompressed(payload, batches)
            headers = [header for _, header in batches]
        self._close_retired()
        now = self._time_ms()
        first_offset = next_offset = self.log_end_offset
        max_timestamp, offset_of_max = NO_TIMESTAMP, first_offset
        infos = []
        for position, header in batches:
            set_base_offset(payload, position, next_offset)
            set_partition_leader_epoch(payload, position, leader_epoch)
            if log_append_time:
                set_log_append_time(payload, position, header.size, now)
                timestamp = now
            else:
                timestamp = header.max_timestamp
            last = next_offset + header.last_offset_delta
            if timestamp > max_timestamp:
                max_timestamp, offset_of_max = timestamp, last
            infos.append(BatchInfo(position, header.size, last, timestamp))
            next_offset = last + 1
        if log_append_time:
            offset_of_max = first_offset
        self._write(payload, infos, max_timestamp, first_offset, next_offset - 1, now)
        self.log_end_offset = next_offset
        self.size_bytes += len(payload)
        latest_epoch = self.leader_epoch_cache.latest_epoch
        if leader_epoch >= 0 and (latest_epoch is None or leader_epoch > latest_epoch):
            self.leader_epoch_cache.assign(leader_epoch, first_offset)
        for header, info in zip(headers, infos, strict=True):
            if header.has_producer_id:
                completed = self.producer_state.update(
                    header,
                    info.last_offset - header.last_offset_delta,
                    timestamp=info.max_timestamp,
                    marker=marker if header.is_control else None,
                )
                index_completed_txn(self.active_segment, completed)
        self.producer_state.map_end_offset = next_offset
        self._flush_if_many_unflushed()
        return AppendResult(
            base_offset=first_offset,
            last_offset=next_offset - 1,
            log_append_time=now if log_append_time else NO_TIMESTAMP,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max,
        )

    def _check_timestamps(
        self, payload: bytearray | memoryview, batches: list[tuple[int, BatchHeader]]
    ) -> None:
        """KIP-937: refuse a CreateTime record more than ``message.timestamp.before.max.ms``
        before or ``message.timestamp.after.max.ms`` after the broker's clock.

        Kafka's ``LogValidator.recordHasInvalidTimestamp``, record by record (a record may
        be older than its batch's base timestamp). With both limits at their default (never)
        nothing is decoded; records without a timestamp (-1) are never refused.
        """
        before = self.config.message_timestamp_before_max_ms
        after = self.config.message_timestamp_after_max_ms
        if before == LONG_MAX and after == LONG_MAX:
            return
        now = self._time_ms()
        try:
            for position, _ in batches:
                for offset, timestamp in iter_offsets_and_timestamps(payload, position):
                    difference = now - timestamp
                    if timestamp != NO_TIMESTAMP and (difference > before or -difference > after):
                        raise InvalidTimestampError(
                            f"Timestamp {timestamp} of message with offset {offset} is out of "
                            f"range. The timestamp should be within [{now - before}, "
                            f"{now + after}]"
                        )
        except CorruptBatchError as exc:
            raise InvalidRecordError(f"cannot read the produced records: {exc}") from exc

    def _recompressed(
        self, payload: bytearray | memoryview, batches: list[tuple[int, BatchHeader]]
    ) -> tuple[bytearray | memoryview, list[tuple[int, BatchHeader]]]:
        """The payload in the topic's ``compression.type`` (Kafka's LogValidator).

        ``producer``, or batches already in the topic's codec: the payload as it came, not
        decoded. Otherwise each other batch is recompressed and the sizes are checked again,
        as Kafka does when validation changed them (MESSAGE_TOO_LARGE after recompression).
        """
        codec = CODEC_OF_COMPRESSION_TYPE.get(self.config.compression_type)
        if codec is None or all(header.compression == codec for _, header in batches):
            return payload, batches
        try:
            rebuilt, batches = recompress_batches(payload, batches, codec)
        except CorruptBatchError as exc:
            raise InvalidRecordError(f"cannot recompress the produced records: {exc}") from exc
        self._check_sizes(len(rebuilt), [header for _, header in batches], leader=True)
        return rebuilt, batches

    def append_as_follower(self, payload: bytearray) -> AppendResult:
        """Append batches replicated from the leader, keeping their offsets and epochs."""
        self._check_open()
        batches = validate_batches(payload)
        headers = [header for _, header in batches]
        self._check_sizes(len(payload), headers, leader=False)
        expected = self.log_end_offset
        max_timestamp, offset_of_max = NO_TIMESTAMP, headers[0].base_offset
        infos = []
        for position, header in batches:
            if header.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"follower append to {self.directory} has a batch at offset "
                    f"{header.base_offset}, below the expected {expected}"
                )
            if header.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = header.max_timestamp, header.last_offset
            infos.append(BatchInfo(position, header.size, header.last_offset, header.max_timestamp))
            expected = header.next_offset
        self._close_retired()
        first_offset, last_offset = headers[0].base_offset, headers[-1].last_offset
        self._write(payload, infos, max_timestamp, first_offset, last_offset, self._time_ms())
        self.log_end_offset = last_offset + 1
        self.size_bytes += len(payload)
        for position, header in batches:
            epoch = header.partition_leader_epoch
            latest_epoch = self.leader_epoch_cache.latest_epoch
            if epoch >= 0 and (latest_epoch is None or epoch > latest_epoch):
                self.leader_epoch_cache.assign(epoch, header.base_offset)
            if header.has_producer_id:
                # A control batch (a marker) is the one kind whose record is decoded here.
                marker = read_marker(payload, position) if header.is_control else None
                completed = self.producer_state.update(header, header.base_offset, marker=marker)
                index_completed_txn(self.active_segment, completed)
        self.producer_state.map_end_offset = self.log_end_offset
        self._flush_if_many_unflushed()
        return AppendResult(
            base_offset=first_offset,
            last_offset=last_offset,
            log_append_time=NO_TIMESTAMP,
            max_timestamp=max_timestamp,
            offset_of_max_timestamp=offset_of_max,
        )

    # -- reading ---------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_batch: bool = True,
    ) -> list[FileSlice]:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` (but the
        first batch whole if ``min_one_batch``), none at or above ``max_offset``."""
        self._check_open()
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}] "
                f"of {self.directory}"
            )
        end_offset = (
            self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        )
        if offset >= end_offset:
            return []
        self._close_retired()
        # Where reading must stop: the start of the batch holding end_offset.
        last_index = len(self._segments) - 1
        if end_offset == self.log_end_offset:
            stop_position = self.active_segment.size
        else:
            last_index = self._floor_index(end_offset)
            found = self._segments[last_index].translate_offset(end_offset)
            stop_position = found[0] if found is not None else self._segments[last_index].size
        slices: list[FileSlice] = []
        remaining = max_bytes
        first = True
        for index in range(self._floor_index(offset), last_index + 1):
            segment = self._segments[index]
            limit = stop_position if index == last_index else segment.size
            start = offset if first else segment.base_offset
            piece = segment.read(start, remaining, limit, min_one_batch=first and min_one_batch)
            if piece is None:
                continue
            if piece.size == 0:
                break
            slices.append(piece)
            remaining -= piece.size
            first = False
            if remaining <= 0 or piece.position + piece.size < limit:
                break
        return slices

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record whose timestamp is >= ``timestamp_ms``
        (ListOffsets by time), at or above the log start offset; None if there is none."""
        self._check_open()
        first = self._floor_index(self.log_start_offset)
        for segment in self._segments[first:]:
            if segment.largest_timestamp >= timestamp_ms:
                found = segment.find_offset_by_timestamp(timestamp_ms, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the largest timestamp
        (ListOffsets MAX_TIMESTAMP); None for an empty log."""
        self._check_open()
        best: LogSegment | None = None
        for segment in self._segments:
            if best is None or segment.largest_timestamp > best.largest_timestamp:
                best = segment
        if best is None or best.largest_timestamp == NO_TIMESTAMP:
            return None
        return best.find_max_timestamp_record()

    # -- transactions ----------------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is open, or completed with its
        marker not yet below the high watermark last given to ``last_stable_offset``
        (Kafka's ``firstUnstableOffset``), never below the log start; None: no such one."""
        first = self.producer_state.first_unstable_offset()
        return None if first is None else max(first, self.log_start_offset)

    def on_high_watermark(self, high_watermark: int) -> None:
        """The partition's HW moved (leader and follower alike): completed transactions
        whose markers are below it become stable and are forgotten. Until it is called
        (here or through ``last_stable_offset``) they are kept, one small record each."""
        self.producer_state.on_high_watermark(high_watermark)

    def last_stable_offset(self, high_watermark: int) -> int:
        """The LSO: read_committed consumers read below it. ``high_watermark`` also tells
        the log which completed transactions are replicated (and so stable)."""
        self.on_high_watermark(high_watermark)
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """Every aborted transaction overlapping [start_offset, upper_bound_offset), oldest
        marker first: what a read_committed Fetch returns beside the data it reads
        (Kafka's ``collectAbortedTransactions``). Entries live with their markers, so the
        walk starts at the segment holding ``start_offset`` and goes on until an entry's
        LSO shows no later abort can overlap (see ``transaction_index``)."""
        self._check_open()
        found: list[AbortedTxn] = []
        for segment in self._segments[self._floor_index(start_offset) :]:
            entries, complete = segment.txn_index.collect(start_offset, upper_bound_offset)
            found.extend(entries)
            if complete:
                break
        return found

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer the partition remembers (DescribeProducers), by producer id."""
        return [entry.describe() for _, entry in sorted(self.producer_state.producers.items())]

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: ``(epoch, end offset)``, see ``LeaderEpochCache``."""
        return self.leader_epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # -- moving the ends -------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (DeleteRecords) and delete segments
        wholly below it; returns the log start offset."""
        self._check_open()
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {offset}: above the log end offset "
                f"{self.log_end_offset} of {self.directory}"
            )
        if offset <= self.log_start_offset:
            return self.log_start_offset
        self.log_start_offset = offset
        self.leader_epoch_cache.truncate_from_start(offset)
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            self._bases.pop(0)
            self._retire(self._segments.pop(0))
        self._close_retired()
        return offset

    def truncate_to(self, offset: int) -> None:
        """Remove every batch at or above ``offset`` (a follower diverged from its leader)."""
        self._check_open()
        if offset < 0:
            raise ValueError(f"cannot truncate {self.directory} to negative offset {offset}")
        if offset >= self.log_end_offset:
            return
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        while self._segments[-1].base_offset > offset:
            self._bases.pop()
            self._retire(self._segments.pop())
        active = self.active_segment
        removed = active.truncate_to(offset)
        self.size_bytes -= removed
        active.resize_indexes(self.config.segment_index_bytes)
        self.log_end_offset = active.read_next_offset()
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self._reload_producer_state()
        log.info("%s: truncated to offset %d", self.directory, self.log_end_offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start empty at ``offset``."""
        self._check_open()
        while self._segments:
            self._bases.pop()
            self._retire(self._segments.pop())
        self._segments.append(self._new_segment(offset))
        self._bases.append(offset)
        self.size_bytes = 0
        self.log_start_offset = self.log_end_offset = self.recovery_point = offset
        self.leader_epoch_cache.clear()
        self.producer_state.delete_snapshots_after(-1)
        self.producer_state.clear(offset)
        fsync_directory(self.directory)
        self._dir_dirty = False

    def _reload_producer_state(self) -> None:
        state = self.producer_state
        state.delete_snapshots_after(self.log_end_offset)
        snapshot = state.load_latest_snapshot(self.log_end_offset)
        start = self._segments[0].base_offset if snapshot is None else snapshot
        replay_producer_state(
            state, self._segments, from_offset=start, log_end_offset=self.log_end_offset
        )

    # -- durability and lifecycle ----------------------------------------------------------

    def _flush_if_many_unflushed(self) -> None:
        """``flush.messages``: fsync once that many offsets are above the recovery point."""
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()

    def flush_if_due(self) -> None:
        """``flush.ms``: fsync when the last flush is that old (Kafka's log flusher)."""
        if self._time_ms() - self.last_flush_ms >= self.config.flush_ms:
            self.flush()

    def flush(self) -> None:
        """fsync every segment holding unflushed data, then move the recovery point to LEO.

        A no-op on a closed log (closing flushed everything)."""
        if self._closed:
            return
        if self.recovery_point >= self.log_end_offset and not self._dir_dirty:
            return
        for segment in self._segments[self._floor_index(self.recovery_point) :]:
            segment.flush()
        if self._dir_dirty:
            fsync_directory(self.directory)
            self._dir_dirty = False
        self.recovery_point = self.log_end_offset
        self.last_flush_ms = self._time_ms()
        self._synced = self._sync_state()
        # Keep the newest snapshot a crash would load, and every later one.
        snapshots = self.producer_state.snapshot_offsets()
        loadable = [s for s in snapshots if s <= self.recovery_point]
        if loadable:
            self.producer_state.delete_snapshots_before(loadable[-1])

    def close(self) -> None:
        """Flush, record the max timestamp and trim the indexes, snapshot the producer
        state and mark the directory cleanly closed (the next open skips the CRC scan).

        Only what changed is fsynced (a stop closes every partition, most of them idle):
        data above the recovery point, an active segment changed since it was last synced
        (truncated, indexed), a producer state newer than its latest snapshot. The length
        the index trim sets is not synced on its own, as in Kafka: an untrimmed index fails
        the loader's sanity check and is rebuilt. The marker and the directory always are.
        """
        if self._closed:
            return
        active = self.active_segment
        active.on_become_inactive()
        if self.recovery_point < self.log_end_offset or self._dir_dirty:
            self.flush()  # every segment from the recovery point: the active one too
        elif self._synced != self._sync_state():
            active.flush()
        self._snapshot_producer_state()
        for segment in self._segments:
            segment.close()
        self._close_retired(everything=True)
        marker = self.directory / CLEAN_SHUTDOWN_FILE
        marker.touch()
        fsync_directory(self.directory)
        self._closed = True

    def _sync_state(self) -> tuple[int, ...]:
        """What differs once the active segment's files change: its size and index
        entries, the log end, which segment is active."""
        active = self.active_segment
        return (
            self.log_end_offset,
            active.base_offset,
            active.size,
            active.offset_index.entries,
            active.time_index.entries,
        )

    def _snapshot_producer_state(self) -> None:
        """Snapshot the producer state at the log end unless the disk already has it
        (Kafka's rule: only a map offset past the last snapshot is worth one): a snapshot
        at the log end, or an empty state over an empty log with none to load."""
        state = self.producer_state
        state.map_end_offset = self.log_end_offset
        offsets = state.snapshot_offsets()
        if offsets and offsets[-1] == self.log_end_offset:
            return
        if not offsets and not state.producers and self.size_bytes == 0:
            return
        state.take_snapshot()

    def close_handlers(self) -> None:
        """Close every file without flushing, trimming or snapshotting (Kafka's
        ``closeHandlers``: the directory is left as a crash would leave it)."""
        for segment in self._segments:
            segment.close_handlers()
        self._close_retired(everything=True)
        self._closed = True

    def delete(self) -> None:
        """Close every file and remove the partition directory."""
        for segment in self._segments:
            segment.close_handlers()
        self._close_retired(everything=True)
        self._segments.clear()
        self._bases.clear()
        self._closed = True
        shutil.rmtree(self.directory, ignore_errors=True)

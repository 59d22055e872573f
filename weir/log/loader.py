"""Opening a partition directory: Kafka's ``LogLoader``, written as numbered passes.

Theory of operation
-------------------
The loader turns whatever a clean shutdown or a crash left in ``<topic>-<partition>/`` into
a consistent set of segments, a log end offset (LEO), a leader-epoch cache that stops at the
LEO and a producer state that matches the log:

1. Remove leftovers of interrupted file operations: ``*.cleaned``, ``*.deleted`` and
   ``*.tmp`` files are deleted. A ``<base>.log.swap`` file is a finished replacement
   segment (Kafka's cleaner protocol renames to ``.swap`` only once the new segment is
   complete and may already have deleted the originals), so the swap is completed: the
   segments it covers are deleted and it is renamed to ``<base>.log``; its indexes are
   rebuilt later. One warning line lists what was deleted and completed.
2. Load the segments, sorted by base offset; delete index files without a ``.log``. Open
   the leader-epoch checkpoint; an unreadable one, or none beside data, is rebuilt in 6.
3. Check the segments pass 4 will not scan (below the recovery point, or all of them after
   a clean shutdown): a missing index, one that fails its sanity check (whole entries,
   first offset above the base, last position inside the log), or a time index naming an
   offset past the segment's end, is rebuilt from the log (one line for the partition);
   and the data after each segment's last index entry must be whole, CRC-valid
   batches whose offsets follow on (``LogSegment.check_tail``, one or two reads). A clean
   shutdown marker is a claim, not a proof: a disk that lied about a write or a data
   directory copied while in use still ends inside a batch, so the first segment whose
   tail fails the check is recovered by pass 4 as after a crash, with every segment after
   it.
4. Unless the partition was closed cleanly (and the caller trusts that: ``assume_unclean``),
   CRC-scan every segment from the one holding the recovery point (everything below it was
   fsynced), rebuilding its indexes; the first invalid batch truncates the segment there and
   every later segment is deleted (Kafka's rule: a log has no holes, so nothing after
   invalid data is kept). Then, unless the log is compacted, every segment must end where
   the next begins: a gap means a lost segment file, and the log refuses to open
   (``KafkaStorageError``; the replica manager takes the partition offline on this broker)
   rather than serve the hole as if those offsets never existed.
5. Load the producer state: the latest snapshot at or below the recovery point, then a
   replay of the batch headers from there to the LEO (an unreadable snapshot is deleted and
   the next older one tried); a control batch's one record is read too (commit or abort).
   The replay also rebuilds the aborted-transaction indexes (``.txnindex``) that may lack
   entries: those of the segments pass 4 scanned (written after the last flush) and of
   completed swaps, and any that failed pass 3's check (reset). Entries below the replay's
   start were fsynced before the recovery point passed them and are kept; a reset index
   makes the replay start at or below its segment's base offset, so every transaction it
   records is seen from its first batch (Kafka rebuilds the producer state as of the
   segment's base for the same reason).
6. Truncate the leader-epoch cache to [log start offset, LEO] (rebuilding it from the batch
   headers first if its checkpoint was unreadable or missing).

Whatever was truncated is reported in one warning per partition naming the file, the
position and offset of the first invalid batch, what was removed and the new LEO. After
damage the recovery point is at most the damaged segment's base offset, so a crash before
the next flush scans the repaired files again. Every repair is one warning line naming the
partition directory or file and what was done; what cannot be repaired raises, and only
that partition goes offline.

A clean close (``Log.close``) fsyncs everything and leaves a ``.clean_shutdown`` marker;
opening consumes it, so the next crash is recovered again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from itertools import pairwise
from pathlib import Path

from weir.log.checkpoint import fsync_directory
from weir.log.errors import CheckpointError, CorruptIndexError, KafkaStorageError
from weir.log.leader_epoch import LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochCache
from weir.log.producer_state import CompletedTxn, ProducerStateManager
from weir.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    offset_from_file_name,
    segment_file_stem,
)
from weir.log.transaction_index import TXN_INDEX_SUFFIX, AbortedTxn
from weir.protocol.control_records import EndTxnMarker, parse_end_txn_marker
from weir.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    parse_header,
)

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LoadedLog",
    "LogLoader",
    "index_completed_txn",
    "read_marker",
    "replay_producer_state",
]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".clean_shutdown"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
TMP_SUFFIX = ".tmp"
# Every file a segment may have beside its data file.
SEGMENT_INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)


@dataclass(frozen=True, slots=True)
class LoadedLog:
    """What ``Log`` starts from."""

    segments: tuple[LogSegment, ...]
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    leader_epoch_cache: LeaderEpochCache
    producer_state: ProducerStateManager


def index_completed_txn(segment: LogSegment, completed: CompletedTxn | None) -> None:
    """Kafka's ``LogSegment.updateTxnIndex``: index ``completed`` in ``segment`` (the one
    holding its marker) if it was aborted."""
    if completed is not None and completed.aborted:
        segment.txn_index.append(
            AbortedTxn(
                completed.producer_id,
                completed.first_offset,
                completed.last_offset,
                completed.last_stable_offset,
            )
        )


def read_marker(batch: bytes | bytearray | memoryview, position: int = 0) -> EndTxnMarker | None:
    """The transaction marker of a stored control batch; None (with a warning) when its
    record is not one: such a batch completes nothing, as an emptied one does in Kafka."""
    try:
        return parse_end_txn_marker(batch, position)
    except CorruptBatchError as exc:
        log.warning("ignoring a control batch that is not a transaction marker: %s", exc)
        return None


def replay_producer_state(
    producer_state: ProducerStateManager,
    segments: tuple[LogSegment, ...] | list[LogSegment],
    *,
    from_offset: int,
    log_end_offset: int,
    rebuild_txn_indexes: frozenset[int] = frozenset(),
) -> None:
    """Feed every batch in [from_offset, LEO) to the producer state: the headers, and the
    one record of each control batch. The segments whose base offsets are in
    ``rebuild_txn_indexes`` get a transaction index entry for each abort replayed."""
    for segment in segments:
        if segment.size == 0:
            continue
        start = 0
        if from_offset > segment.base_offset:
            found = segment.translate_offset(from_offset)
            if found is None:
                continue  # every batch of this segment is below from_offset
            start = found[0]
        rebuild = segment.base_offset in rebuild_txn_indexes
        for position, header in segment.iter_headers(start):
            if not header.has_producer_id or header.last_offset < from_offset:
                continue
            marker = None
            if header.is_control:
                marker = read_marker(segment.read_batch(position, header))
            completed = producer_state.update(header, header.base_offset, marker=marker)
            if rebuild:
                index_completed_txn(segment, completed)
    producer_state.map_end_offset = log_end_offset


def _next_offset_of_file(path: Path, base_offset: int) -> int:
    """The offset after the last whole batch of a raw segment file."""
    next_offset = base_offset
    with open(path, "rb") as f:
        position = 0
        while True:
            head = os.pread(f.fileno(), BATCH_HEADER_SIZE, position)
            if len(head) < BATCH_HEADER_SIZE:
                return next_offset
            try:
                header = parse_header(head)
            except CorruptBatchError:
                return next_offset
            next_offset = header.next_offset
            position += header.size


def _shows_compaction(segments: list[LogSegment]) -> bool:
    """Whether any segment skips offsets between or within its batches, which only
    compaction does (appends are dense)."""
    for segment in segments:
        expected = segment.base_offset
        for _, header in segment.iter_headers():
            if (
                header.base_offset != expected
                or header.records_count != header.last_offset_delta + 1
            ):
                return True
            expected = header.next_offset
    return False


@dataclass(eq=False, repr=False)
class LogLoader:
    """Recovers one partition directory; see the module docstring for the passes."""

    directory: Path
    _: KW_ONLY
    index_interval_bytes: int
    max_index_size: int
    time_ms: Callable[[], int]
    recovery_point: int
    log_start_offset: int
    # Distrust the clean-shutdown marker: CRC-scan from the recovery point anyway (the data
    # directory's recovery-point checkpoint was unreadable, so the disk lied about something).
    assume_unclean: bool = False
    # Refuse a log whose segments leave an offset gap (a segment file went missing). Off for
    # compacted logs, where the cleaner leaves gaps between segments by design.
    check_offset_gaps: bool = True
    # Base offset of the first segment found damaged (truncated or failing its tail check).
    _damaged_from: int | None = field(init=False, default=None)
    # Pass 3's finding on a segment it hands to pass 4, and whether pass 4 truncated.
    _tail_problem: str | None = field(init=False, default=None)
    _truncated_any: bool = field(init=False, default=False)
    # Pass 3's index rebuilds, ``(file, why)``, reported in one line.
    _rebuilt_indexes: list[tuple[Path, str]] = field(init=False, default_factory=list)
    # Base offsets of segments pass 1 renamed from a ``.swap``: their indexes are rebuilt
    # as part of finishing the swap, not as damage.
    _swapped: set[int] = field(init=False, default_factory=set)
    # Every segment opened, so a failed load closes them all.
    _opened: list[LogSegment] = field(init=False, default_factory=list)
    # Base offsets of segments whose transaction index pass 5 completes from the replay
    # start on, and of those whose index was reset (rebuilt from their base offset).
    _txn_rebuild: set[int] = field(init=False, default_factory=set)
    _txn_reset: set[int] = field(init=False, default_factory=set)

    def _new_segment(self, base_offset: int) -> LogSegment:
        segment = LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.index_interval_bytes,
            max_index_size=self.max_index_size,
            time_ms=self.time_ms,
        )
        self._opened.append(segment)
        return segment

    def load(self) -> LoadedLog:
        """Run the passes; on any error close every file opened so far, then raise (the
        partition goes offline and must not hold descriptors or mappings)."""
        try:
            return self._load()
        except BaseException:
            for segment in self._opened:
                segment.close_handlers()
            raise

    def _load(self) -> LoadedLog:
        marker = self.directory / CLEAN_SHUTDOWN_FILE
        clean = marker.exists() and not self.assume_unclean
        self._pass1_remove_temp_files_and_complete_swaps()
        segments = self._pass2_load_segments()
        cache, epochs_lost = self._open_leader_epoch_cache(segments)
        first_unflushed = (
            len(segments) if clean else self._floor_index(segments, self.recovery_point)
        )
        segments, first_unflushed = self._pass3_check_segments(segments, first_unflushed)
        if self._rebuilt_indexes:
            path, reason = self._rebuilt_indexes[0]
            more = len(self._rebuilt_indexes) - 1
            log.warning(
                "%s: rebuilt the indexes of %d segment(s) from their data (%s: %s%s)",
                self.directory,
                len(self._rebuilt_indexes),
                path.name,
                reason,
                f"; and {more} more" if more else "",
            )
        segments = self._pass4_recover(segments, first_unflushed, cache)
        if self._tail_problem is not None and not self._truncated_any:
            log.warning(
                "%s, but a CRC scan from offset %d found only valid batches; indexes rebuilt",
                self._tail_problem,
                self._damaged_from,
            )
        if self.check_offset_gaps:
            self._check_offset_gaps(segments)
        if not segments:
            segments = [self._new_segment(self.log_start_offset)]
        log_end_offset = segments[-1].read_next_offset()
        log_start_offset = max(self.log_start_offset, segments[0].base_offset)
        if log_start_offset > log_end_offset:
            log.warning(
                "%s: log start offset %d is above the log end offset %d; emptying the log",
                self.directory,
                log_start_offset,
                log_end_offset,
            )
            for segment in segments:
                segment.close_handlers()
                segment.delete()
            segments = [self._new_segment(log_start_offset)]
            log_end_offset = log_start_offset
        recovery_point = log_end_offset if clean else min(self.recovery_point, log_end_offset)
        if self._damaged_from is not None:
            recovery_point = min(recovery_point, self._damaged_from)
        producer_state = self._pass5_load_producer_state(segments, recovery_point, log_end_offset)
        self._pass6_truncate_leader_epochs(
            cache, epochs_lost, segments, log_start_offset, log_end_offset
        )
        for segment in segments[:-1]:
            segment.trim_indexes()
        segments[-1].resize_indexes(self.max_index_size)
        if clean:
            marker.unlink()
            fsync_directory(self.directory)
        return LoadedLog(
            segments=tuple(segments),
            log_start_offset=log_start_offset,
            log_end_offset=log_end_offset,
            recovery_point=recovery_point,
            leader_epoch_cache=cache,
            producer_state=producer_state,
        )

    def _open_leader_epoch_cache(
        self, segments: list[LogSegment]
    ) -> tuple[LeaderEpochCache, str | None]:
        """The partition's leader-epoch cache, and why it must be rebuilt from the batches
        (None: its checkpoint is trustworthy). A checkpoint that is unreadable, or missing
        beside data (every batch carries its leader epoch, so a log with data had one), is
        replaced by an empty one that pass 6 refills."""
        path = self.directory / LEADER_EPOCH_CHECKPOINT_FILE
        try:
            cache = LeaderEpochCache(self.directory)
        except CheckpointError as exc:
            path.unlink(missing_ok=True)
            cache = LeaderEpochCache(self.directory)
            return cache, str(exc)
        if not path.exists() and any(segment.size for segment in segments):
            return cache, f"{path} is missing"
        return cache, None

    def _check_offset_gaps(self, segments: list[LogSegment]) -> None:
        """Raise KafkaStorageError if a segment does not end where the next one starts and
        the log shows no sign of compaction.

        Appends roll a segment at the log end offset, so consecutive segments of a log that
        was never compacted are contiguous; a gap there means a segment file was lost
        (deleted by hand, a partial restore). Kafka loads such a log and serves the hole as
        if those offsets never existed; Weir refuses to, so the partition goes offline on
        this broker and a replica that has the data leads. The message says how to refetch.

        Compaction leaves gaps between segments legitimately (the cleaner drops a segment's
        last batches; a follower rolls at the first offset the leader sends). Compacted
        logs skip this check (``check_offset_gaps``); a log whose topic was compacted
        before its policy changed still shows it inside its segments (offsets skipped
        between or within batches), so a gap is only an error when a header scan of the
        whole log (done only once a gap is found) finds no such sign.
        """
        gaps = []
        for segment, following in pairwise(segments):
            end = segment.checked_next_offset
            if end is None:
                end = segment.read_next_offset()
                segment.release_indexes()
            if end != following.base_offset:
                gaps.append((segment, end, following))
        if not gaps:
            return
        segment, end, following = gaps[0]
        where = (
            f"{segment.log_path.name} ends at offset {end} but the next segment "
            f"{following.log_path.name} starts at {following.base_offset}"
        )
        if _shows_compaction(segments):
            log.info(
                "%s: %s (%d such gap(s)); the log was compacted, so this is not a lost file",
                self.directory,
                where,
                len(gaps),
            )
            return
        raise KafkaStorageError(
            f"{where}: offsets {min(end, following.base_offset)} to "
            f"{max(end, following.base_offset) - 1} are missing (a lost segment file?); to "
            "refetch the partition from its leader, stop the broker, delete the partition "
            "directory and restart"
        )

    @staticmethod
    def _floor_index(segments: list[LogSegment], offset: int) -> int:
        """Index of the segment holding ``offset`` (0 when it is below them all)."""
        index = 0
        for i, segment in enumerate(segments):
            if segment.base_offset <= offset:
                index = i
        return index

    # -- pass 1 ----------------------------------------------------------------------------

    def _pass1_remove_temp_files_and_complete_swaps(self) -> None:
        swaps: list[tuple[int, Path]] = []
        deleted: list[str] = []
        for path in self.directory.iterdir():
            name = path.name
            if name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX, TMP_SUFFIX)):
                deleted.append(name)
                path.unlink()
            elif name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
                base = offset_from_file_name(name)
                if base is None:
                    raise KafkaStorageError(f"cannot parse the base offset of swap file {path}")
                swaps.append((base, path))
            elif name.endswith(SWAP_SUFFIX):
                deleted.append(name)
                path.unlink()  # index swaps: indexes are rebuilt from the log (pass 3, 5)
        completed: list[str] = []
        for base, swap in sorted(swaps):
            end = _next_offset_of_file(swap, base)
            replaced = []
            for path in list(self.directory.glob(f"*{LOG_SUFFIX}")):
                offset = offset_from_file_name(path.name)
                if offset is not None and base <= offset < max(end, base + 1):
                    replaced.append(path.name)
                    stem = segment_file_stem(offset)
                    for suffix in (LOG_SUFFIX, *SEGMENT_INDEX_SUFFIXES):
                        (self.directory / f"{stem}{suffix}").unlink(missing_ok=True)
            target = self.directory / f"{segment_file_stem(base)}{LOG_SUFFIX}"
            for suffix in SEGMENT_INDEX_SUFFIXES:
                (self.directory / f"{segment_file_stem(base)}{suffix}").unlink(missing_ok=True)
            os.replace(swap, target)
            self._swapped.add(base)
            self._txn_reset.add(base)
            completed.append(
                f"{swap.name} -> {target.name} (replacing {', '.join(sorted(replaced)) or 'none'})"
            )
        if deleted or completed:
            # Routine after a crash during a delete or a compaction; one line says what the
            # interrupted operation left and how it was finished.
            log.warning(
                "%s: finished an interrupted delete or compaction: %s%s",
                self.directory,
                f"deleted {', '.join(sorted(deleted))}" if deleted else "",
                ("; " if deleted and completed else "")
                + (f"completed swap {'; '.join(completed)}" if completed else ""),
            )

    # -- pass 2 ----------------------------------------------------------------------------

    def _pass2_load_segments(self) -> list[LogSegment]:
        bases: list[int] = []
        indexes: list[Path] = []
        for path in self.directory.iterdir():
            name = path.name
            if name.endswith(LOG_SUFFIX):
                base = offset_from_file_name(name)
                if base is None or name != f"{segment_file_stem(base)}{LOG_SUFFIX}":
                    raise KafkaStorageError(f"cannot parse the base offset of segment {path}")
                bases.append(base)
            elif name.endswith(SEGMENT_INDEX_SUFFIXES):
                indexes.append(path)
        known = {segment_file_stem(b) for b in bases}
        for path in indexes:
            if path.name.split(".", 1)[0] not in known:
                log.warning("deleting orphaned index file %s", path)
                path.unlink()
        return [self._new_segment(base) for base in sorted(bases)]

    def _truncated(self, segments: list[LogSegment], i: int, truncated: int) -> list[LogSegment]:
        """Segment ``i`` lost ``truncated`` bytes of invalid data: delete every later
        segment and log the one line an operator sees; returns the segments kept."""
        self._truncated_any = True
        segment = segments[i]
        later = segments[i + 1 :]
        for dropped in later:
            dropped.close_handlers()
            dropped.delete()
        self._damaged_from = min(self._damaged_from or segment.base_offset, segment.base_offset)
        deleted = (
            f"; deleted {len(later)} later segment(s) from offset {later[0].base_offset} "
            f"to {later[-1].base_offset}"
            if later
            else ""
        )
        log.warning(
            "%s: %s; truncated %d bytes at position %d%s; log now ends at offset %d",
            segment.log_path,
            segment.recovery_problem or "invalid data",
            truncated,
            segment.size,
            deleted,
            segment.read_next_offset(),
        )
        return segments[: i + 1]

    # -- pass 3 ----------------------------------------------------------------------------

    def _pass3_check_segments(
        self, segments: list[LogSegment], first_unflushed: int
    ) -> tuple[list[LogSegment], int]:
        """Check the indexes and tails of ``segments[:first_unflushed]``; returns the
        segments kept and the index pass 4 scans from."""
        for i, segment in enumerate(segments[:first_unflushed]):
            self._check_txn_index(segment)
            missing = segment.offset_index.newly_created or segment.time_index.newly_created
            if missing:
                if segment.size == 0:
                    continue
                reason = "missing index files"
            else:
                try:
                    segment.sanity_check()
                except CorruptIndexError as exc:
                    reason = str(exc)
                else:
                    problem = segment.check_tail()
                    if problem is not None:
                        # Pass 4 recovers from here; ``load`` logs the outcome.
                        self._tail_problem = f"{segment.log_path}: {problem}"
                        self._damaged_from = segment.base_offset
                        return segments, i
                    reason = self._time_index_problem(segment)
                    if reason is None:
                        # Checked: release the mappings until someone reads the indexes.
                        segment.release_indexes()
                        continue
            if segment.base_offset not in self._swapped:
                self._rebuilt_indexes.append((segment.log_path, reason))
            truncated = segment.recover()
            self._txn_rebuild.add(segment.base_offset)
            if truncated:
                return self._truncated(segments, i, truncated), i + 1
        return segments, first_unflushed

    def _check_txn_index(self, segment: LogSegment, *, torn_tail_ok: bool = False) -> None:
        """Reset a transaction index that fails its check; pass 5 rebuilds it whole.
        ``torn_tail_ok``: a partial last entry is no fault (an unflushed index)."""
        try:
            segment.txn_index.sanity_check(torn_tail_ok=torn_tail_ok)
        except CorruptIndexError as exc:
            self._rebuilt_indexes.append((segment.txn_index.path, str(exc)))
            segment.txn_index.reset()
            self._txn_reset.add(segment.base_offset)

    @staticmethod
    def _time_index_problem(segment: LogSegment) -> str | None:
        """Why the time index of a segment whose tail checked out cannot be right: its last
        entry names an offset the segment does not hold (Kafka's "last offset" check)."""
        if segment.time_index.entries == 0:
            return None
        _, offset = segment.time_index.last_entry
        end = segment.checked_next_offset
        if end is not None and offset >= end:
            return (
                f"time index file {segment.time_index.path} names offset {offset}, "
                f"past the segment's end at {end}"
            )
        return None

    # -- pass 4 ----------------------------------------------------------------------------

    def _pass4_recover(
        self, segments: list[LogSegment], first: int, cache: LeaderEpochCache
    ) -> list[LogSegment]:
        def on_batch(header: BatchHeader) -> None:
            epoch = header.partition_leader_epoch
            latest = cache.latest_epoch
            if epoch >= 0 and (latest is None or epoch > latest):
                cache.assign(epoch, header.base_offset)

        for i in range(first, len(segments)):
            truncated = segments[i].recover(on_batch)
            self._txn_rebuild.add(segments[i].base_offset)
            if truncated:
                return self._truncated(segments, i, truncated)
        return segments

    # -- pass 5 ----------------------------------------------------------------------------

    def _pass5_load_producer_state(
        self, segments: list[LogSegment], recovery_point: int, log_end_offset: int
    ) -> ProducerStateManager:
        state = ProducerStateManager(self.directory)
        state.delete_snapshots_after(log_end_offset)
        rebuild = [s for s in segments if s.base_offset in self._txn_rebuild | self._txn_reset]
        for segment in rebuild:
            if segment.base_offset not in self._txn_reset:
                self._check_txn_index(segment, torn_tail_ok=True)
        reset = [s.base_offset for s in rebuild if s.base_offset in self._txn_reset]
        snapshot = state.load_latest_snapshot(min([recovery_point, *reset]))
        start = segments[0].base_offset if snapshot is None else snapshot
        for segment in rebuild:
            segment.txn_index.truncate_to(start)
        replay_producer_state(
            state,
            segments,
            from_offset=start,
            log_end_offset=log_end_offset,
            rebuild_txn_indexes=frozenset(s.base_offset for s in rebuild),
        )
        return state

    # -- pass 6 ----------------------------------------------------------------------------

    def _pass6_truncate_leader_epochs(
        self,
        cache: LeaderEpochCache,
        epochs_lost: str | None,
        segments: list[LogSegment],
        log_start_offset: int,
        log_end_offset: int,
    ) -> None:
        if epochs_lost is not None:
            # Kafka's rebuild: each epoch starts at the first batch stamped with it. The
            # clear writes an empty checkpoint, so a log without epochs is not rebuilt again.
            cache.clear()
            for segment in segments:
                for _, header in segment.iter_headers():
                    latest = cache.latest_epoch
                    epoch = header.partition_leader_epoch
                    if epoch >= 0 and (latest is None or epoch > latest):
                        cache.assign(epoch, header.base_offset)
        cache.truncate_from_end(log_end_offset)
        cache.truncate_from_start(log_start_offset)
        if epochs_lost is not None:
            log.warning(
                "%s; rebuilt it from the batches' partition leader epochs: %d entries up to "
                "offset %d",
                epochs_lost,
                len(cache.entries),
                log_end_offset,
            )

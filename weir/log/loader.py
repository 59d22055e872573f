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
   rebuilt later.
2. Load the segments, sorted by base offset; delete index files without a ``.log``.
3. Check the segments pass 4 will not scan (below the recovery point, or all of them after
   a clean shutdown): a missing index, or one that fails its sanity check, is rebuilt from
   the log; and the data after each segment's last index entry must be whole, CRC-valid
   batches whose offsets follow on (``LogSegment.check_tail``, one or two reads). A clean
   shutdown marker is a claim, not a proof: a disk that lied about a write or a data
   directory copied while in use still ends inside a batch, so the first segment whose
   tail fails the check is recovered by pass 4 as after a crash, with every segment after
   it.
4. Unless the partition was closed cleanly, CRC-scan every segment from the one holding the
   recovery point (everything below it was fsynced), rebuilding its indexes; the first
   invalid batch truncates the segment there and every later segment is deleted (Kafka's
   rule: a log has no holes, so nothing after invalid data is kept).
5. Load the producer state: the latest snapshot at or below the recovery point, then a
   replay of the batch headers from there to the LEO.
6. Truncate the leader-epoch cache to [log start offset, LEO] (rebuilding it from the batch
   headers if its checkpoint was unreadable).

Whatever was truncated is reported in one warning per partition naming the file, the
position and offset of the first invalid batch, what was removed and the new LEO. After
damage the recovery point is at most the damaged segment's base offset, so a crash before
the next flush scans the repaired files again.

A clean close (``Log.close``) fsyncs everything and leaves a ``.clean_shutdown`` marker;
opening consumes it, so the next crash is recovered again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path

from weir.log.checkpoint import fsync_directory
from weir.log.errors import CheckpointError, CorruptIndexError, KafkaStorageError
from weir.log.leader_epoch import LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochCache
from weir.log.producer_state import ProducerStateManager
from weir.log.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    offset_from_file_name,
    segment_file_stem,
)
from weir.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    parse_header,
)

__all__ = ["CLEAN_SHUTDOWN_FILE", "LoadedLog", "LogLoader", "replay_producer_state"]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = ".clean_shutdown"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
TMP_SUFFIX = ".tmp"


@dataclass(frozen=True, slots=True)
class LoadedLog:
    """What ``Log`` starts from."""

    segments: tuple[LogSegment, ...]
    log_start_offset: int
    log_end_offset: int
    recovery_point: int
    leader_epoch_cache: LeaderEpochCache
    producer_state: ProducerStateManager


def replay_producer_state(
    producer_state: ProducerStateManager,
    segments: tuple[LogSegment, ...] | list[LogSegment],
    *,
    from_offset: int,
    log_end_offset: int,
) -> None:
    """Feed every batch header in [from_offset, LEO) to the producer state."""
    for segment in segments:
        if segment.size == 0:
            continue
        start = 0
        if from_offset > segment.base_offset:
            found = segment.translate_offset(from_offset)
            if found is None:
                continue  # every batch of this segment is below from_offset
            start = found[0]
        for _, header in segment.iter_headers(start):
            if header.has_producer_id and header.last_offset >= from_offset:
                producer_state.update(header, header.base_offset)
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
    # Base offset of the first segment found damaged (truncated or failing its tail check).
    _damaged_from: int | None = field(init=False, default=None)
    # Pass 3's finding on a segment it hands to pass 4, and whether pass 4 truncated.
    _tail_problem: str | None = field(init=False, default=None)
    _truncated_any: bool = field(init=False, default=False)

    def _new_segment(self, base_offset: int) -> LogSegment:
        return LogSegment(
            self.directory,
            base_offset,
            index_interval_bytes=self.index_interval_bytes,
            max_index_size=self.max_index_size,
            time_ms=self.time_ms,
        )

    def load(self) -> LoadedLog:
        marker = self.directory / CLEAN_SHUTDOWN_FILE
        clean = marker.exists()
        self._pass1_remove_temp_files_and_complete_swaps()
        segments = self._pass2_load_segments()
        try:
            cache = LeaderEpochCache(self.directory)
            cache_lost = False
        except CheckpointError as exc:
            log.warning("rebuilding the leader epoch cache from the log: %s", exc)
            (self.directory / LEADER_EPOCH_CHECKPOINT_FILE).unlink(missing_ok=True)
            cache = LeaderEpochCache(self.directory)
            cache_lost = True
        first_unflushed = (
            len(segments) if clean else self._floor_index(segments, self.recovery_point)
        )
        segments, first_unflushed = self._pass3_check_segments(segments, first_unflushed)
        segments = self._pass4_recover(segments, first_unflushed, cache)
        if self._tail_problem is not None and not self._truncated_any:
            log.warning(
                "%s, but a CRC scan from offset %d found only valid batches; indexes rebuilt",
                self._tail_problem,
                self._damaged_from,
            )
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
            cache, cache_lost, segments, log_start_offset, log_end_offset
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
        for path in self.directory.iterdir():
            name = path.name
            if name.endswith((CLEANED_SUFFIX, DELETED_SUFFIX, TMP_SUFFIX)):
                log.info("deleting leftover file %s", path)
                path.unlink()
            elif name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
                base = offset_from_file_name(name)
                if base is None:
                    raise KafkaStorageError(f"cannot parse the base offset of swap file {path}")
                swaps.append((base, path))
            elif name.endswith(SWAP_SUFFIX):
                path.unlink()  # index swaps: indexes are rebuilt from the log
        for base, swap in sorted(swaps):
            end = _next_offset_of_file(swap, base)
            for path in list(self.directory.glob(f"*{LOG_SUFFIX}")):
                offset = offset_from_file_name(path.name)
                if offset is not None and base <= offset < max(end, base + 1):
                    log.info("deleting %s, replaced by %s", path, swap)
                    stem = segment_file_stem(offset)
                    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                        (self.directory / f"{stem}{suffix}").unlink(missing_ok=True)
            target = self.directory / f"{segment_file_stem(base)}{LOG_SUFFIX}"
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                (self.directory / f"{segment_file_stem(base)}{suffix}").unlink(missing_ok=True)
            os.replace(swap, target)
            log.info("completed swap %s -> %s", swap, target)

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
            elif name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX)):
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
                    # Checked: release the mappings until someone reads the indexes.
                    segment.release_indexes()
                    continue
            log.warning("rebuilding the indexes of %s: %s", segment.log_path, reason)
            truncated = segment.recover()
            if truncated:
                return self._truncated(segments, i, truncated), i + 1
        return segments, first_unflushed

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
            if truncated:
                return self._truncated(segments, i, truncated)
        return segments

    # -- pass 5 ----------------------------------------------------------------------------

    def _pass5_load_producer_state(
        self, segments: list[LogSegment], recovery_point: int, log_end_offset: int
    ) -> ProducerStateManager:
        state = ProducerStateManager(self.directory)
        state.delete_snapshots_after(log_end_offset)
        snapshot = state.load_latest_snapshot(recovery_point)
        start = segments[0].base_offset if snapshot is None else snapshot
        replay_producer_state(state, segments, from_offset=start, log_end_offset=log_end_offset)
        return state

    # -- pass 6 ----------------------------------------------------------------------------

    def _pass6_truncate_leader_epochs(
        self,
        cache: LeaderEpochCache,
        cache_lost: bool,
        segments: list[LogSegment],
        log_start_offset: int,
        log_end_offset: int,
    ) -> None:
        if cache_lost:
            for segment in segments:
                for _, header in segment.iter_headers():
                    latest = cache.latest_epoch
                    epoch = header.partition_leader_epoch
                    if epoch >= 0 and (latest is None or epoch > latest):
                        cache.assign(epoch, header.base_offset)
        cache.truncate_from_end(log_end_offset)
        cache.truncate_from_start(log_start_offset)

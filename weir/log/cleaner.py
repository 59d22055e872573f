"""Kafka's log cleaner for one partition: compaction by key, crash-safe by ``.cleaned``/``.swap``.

Theory of operation
-------------------
A compacted topic keeps, for every key, at least its latest record. The cleaner works on the
*inactive* segments below an end offset the caller chooses (``cleanable_range``: below the
high watermark and the active segment, and older than ``min.compaction.lag.ms``); the
active segment is never read or written. Everything below the cleaner checkpoint
(``clean_offset``) was compacted before and is the *clean* part; the rest is *dirty*.

``prepare_clean`` (safe on a worker thread) does the reading and writing:

1. **Capture** the inactive segments wholly below the end offset, opening read handles of
   its own, so nothing the broker's loop later does to a ``LogSegment`` (closing it,
   deleting it) can pull a file away mid-read.
2. **Offset map**: decode the dirty records and map each key (compared as bytes) to the
   offset of its latest record.
3. **Rewrite** the captured segments in groups (consecutive segments whose sizes add up to
   at most ``segment.bytes``, as Kafka's ``groupSegmentsBySize`` does, so cleaning also
   merges segments it shrank earlier) into ``<base>.log.cleaned`` files with their indexes
   rebuilt by the ordinary append path. A record is dropped when a later record of its key
   is in the map, or when it is a tombstone (null value) in the clean part whose segment's
   largest timestamp is at least ``delete.retention.ms`` old; tombstones in the dirty part
   survive this pass, so consumers get ``delete.retention.ms`` to see them. Records without
   a key are kept. Records keep their offsets: a batch keeps its base offset, last offset
   delta, base timestamp, producer id/epoch, base sequence, leader epoch and attributes;
   only the record count, the records (recompressed with the batch's own codec, snappy
   in its own framing), ``maxTimestamp`` (CreateTime: the largest kept) and the CRC-32C
   change. A batch left without records is dropped, a batch that lost nothing is copied
   byte for byte, and control batches are always copied.

``commit_clean`` (on the loop thread) checks that the captured segments are still the
log's, then swaps each group in, oldest first, with ``Log.replace_segments``: ``.cleaned``
-> ``.swap`` (the commit point; the loader finishes a swap it finds), delete the replaced
segments, ``.swap`` -> ``.log``.

Why every crash leaves each key's latest record readable: before a group's ``.swap``
exists the old segments are intact (the loader deletes ``.cleaned`` files); after it, the
loader finishes the swap. Groups commit oldest first, so a record missing from a committed
group is either superseded by a record at a higher offset (all of which are still there,
cleaned or not) or a tombstone whose key has no older record left below it. Old segments
of a group that lie wholly above the last kept batch held nothing worth keeping; if a
crash leaves them behind (the loader cannot tell them from their neighbours), they only
show records that the compacted view already hides.

Producer state: the in-memory state and the snapshots are untouched (they describe what
producers wrote, not what is left). A snapshot is taken at every roll, so reopening a log
replays only the active segment; without a snapshot the state is rebuilt from the batches
that remain, which keep their sequence numbers.

Not supported (as in Weir's other paths): aborted transactional data is compacted like any
other data, and control batches are never removed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from weir.log.checkpoint import fsync_directory
from weir.log.errors import KafkaStorageError, LogError
from weir.log.loader import CLEANED_SUFFIX
from weir.log.log import Log
from weir.log.offset_index import INT32_MAX
from weir.log.segment import BatchInfo, LogSegment
from weir.protocol.deflate import compress, frame_batch, is_xerial_snappy
from weir.protocol.inflate import (
    RecordPlace,
    read_varint,
    records_section,
    walk_records,
)
from weir.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    compute_crc,
    parse_header,
)

__all__ = [
    "CleanAbortedError",
    "CleanStats",
    "PreparedClean",
    "cleanable_range",
    "commit_clean",
    "dirty_ratio",
    "max_compaction_delay",
    "prepare_clean",
]

# Not ``log``: every function here takes the partition's ``Log`` under that name.
logger = logging.getLogger(__name__)

# Segments are read this much at a time (a larger batch is read whole).
READ_CHUNK = 1024 * 1024
# Kept batches are written to the cleaned segment in appends of about this size.
WRITE_CHUNK = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CleanStats:
    """What one clean did; ``first_dirty_offset`` is the cleaner checkpoint to store."""

    segments_cleaned: int
    bytes_before: int
    bytes_after: int
    records_read: int
    records_kept: int
    tombstones_removed: int
    first_dirty_offset: int


class CleanAbortedError(LogError):
    """The log changed (or closed) between ``prepare_clean`` and ``commit_clean``, or a
    captured segment vanished while it was read; the cleaned files were deleted."""


# -- choosing what to clean ----------------------------------------------------------------


def _floor_base(segments: Sequence[LogSegment], offset: int) -> int:
    """Base offset of the segment holding ``offset`` (the first base if below them all)."""
    base = segments[0].base_offset
    for segment in segments:
        if segment.base_offset > offset:
            break
        base = segment.base_offset
    return base


def _first_dirty(log: Log, segments: Sequence[LogSegment], clean_offset: int) -> int:
    """The checkpoint, or the first offset of the log when it is out of range (as Kafka
    resets a checkpoint left behind by retention or truncation)."""
    if segments[0].base_offset <= clean_offset <= log.log_end_offset:
        return clean_offset
    return segments[0].base_offset


def _uncleanable_from(segments: Sequence[LogSegment], high_watermark: int) -> int:
    """The first offset the cleaner must not touch: the active segment, and the segment
    holding the high watermark (a segment is cleaned whole or not at all)."""
    return min(segments[-1].base_offset, _floor_base(segments, high_watermark))


def cleanable_range(
    log: Log,
    *,
    clean_offset: int,
    high_watermark: int,
    now_ms: int,
    min_compaction_lag_ms: int,
) -> tuple[int, int]:
    """``[first, end)``: the dirty offsets a clean may take in. ``end`` is a segment base:
    the active segment, the segment holding the high watermark, and the first dirty
    segment holding a record younger than ``min.compaction.lag.ms`` are excluded, with
    everything after them. Empty (``first == end``) when there is nothing to clean."""
    segments = log.segments
    first = _first_dirty(log, segments, clean_offset)
    end = _uncleanable_from(segments, high_watermark)
    if min_compaction_lag_ms > 0:
        horizon = now_ms - min_compaction_lag_ms
        for i, segment in enumerate(segments[:-1]):
            if segments[i + 1].base_offset <= first or segment.base_offset >= end:
                continue
            if segment.largest_timestamp > horizon:
                end = min(end, segment.base_offset)
                break
    return first, max(first, end)


def dirty_ratio(log: Log, *, clean_offset: int, high_watermark: int) -> tuple[int, int, float]:
    """``(dirty bytes, cleanable bytes, dirty / cleanable)`` over the inactive segments
    below the high watermark; a segment is clean when it lies wholly below
    ``clean_offset``. The broker compares the ratio with ``min.cleanable.dirty.ratio``."""
    segments = log.segments
    first = _first_dirty(log, segments, clean_offset)
    end = _uncleanable_from(segments, high_watermark)
    dirty = total = 0
    for i, segment in enumerate(segments[:-1]):
        next_base = segments[i + 1].base_offset
        if next_base > end:
            break
        total += segment.size
        if next_base > first:
            dirty += segment.size
    return dirty, total, (dirty / total if total else 0.0)


def max_compaction_delay(
    log: Log, *, clean_offset: int, now_ms: int, max_compaction_lag_ms: int
) -> int:
    """How long past ``max.compaction.lag.ms`` the oldest dirty record is (0: not yet), as
    Kafka's ``LogCleanerManager.maxCompactionDelay``: the earliest first-batch timestamp
    of the inactive segments from the first dirty offset on (timestamps not above 0 do not
    count) against ``now_ms - max.compaction.lag.ms``. A positive delay makes the log due for
    cleaning whatever its dirty ratio."""
    segments = log.segments
    first = _first_dirty(log, segments, clean_offset)
    earliest = None
    for i, segment in enumerate(segments[:-1]):
        if segments[i + 1].base_offset <= first:
            continue
        header = next((h for _, h in segment.iter_headers()), None)
        if header is not None and header.max_timestamp > 0:
            stamp = header.max_timestamp
            earliest = stamp if earliest is None else min(earliest, stamp)
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    if earliest is None or earliest >= clean_until:
        return 0
    return clean_until - earliest


# -- reading -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Source:
    """A captured inactive segment: its own read handle and what was known at capture."""

    segment: LogSegment
    fd: int
    size: int
    next_base: int
    largest_timestamp: int

    @property
    def base_offset(self) -> int:
        return self.segment.base_offset


def _iter_batches(source: _Source) -> Iterator[tuple[BatchHeader, memoryview]]:
    """Every batch of a captured segment, CRC-checked (corruption is never copied)."""
    path, fd, size = source.segment.log_path, source.fd, source.size
    pos = buf_start = 0
    buf = b""
    while pos < size:
        at = pos - buf_start
        if at + BATCH_HEADER_SIZE > len(buf):
            buf, buf_start, at = os.pread(fd, min(READ_CHUNK, size - pos), pos), pos, 0
        try:
            header = parse_header(buf, at)
        except CorruptBatchError as exc:
            raise KafkaStorageError(f"{path} at position {pos}: {exc}") from exc
        if at + header.size > len(buf):
            buf = os.pread(fd, min(max(READ_CHUNK, header.size), size - pos), pos)
            buf_start, at = pos, 0
            if header.size > len(buf):
                raise KafkaStorageError(
                    f"{path}: batch at position {pos} (offset {header.base_offset}) runs past "
                    f"the end of the segment"
                )
        if compute_crc(buf, at, header.size) != header.crc:
            raise KafkaStorageError(
                f"{path}: batch at position {pos} (offset {header.base_offset}) failed its "
                f"CRC-32C check"
            )
        yield header, memoryview(buf)[at : at + header.size]
        pos += header.size


@dataclass(frozen=True, slots=True)
class _RawRecord:
    """One record as the cleaner needs it: its bytes stay as they are if it is kept."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    is_tombstone: bool
    start: int
    end: int


def _iter_raw_records(data: bytes, header: BatchHeader) -> Iterator[_RawRecord]:
    """Walk a decompressed records section, decoding only what compaction looks at."""
    try:
        yield from walk_records(data, header, _raw_record)
    except (IndexError, CorruptBatchError) as exc:
        raise CorruptBatchError(
            f"records of the batch at offset {header.base_offset} are malformed: {exc}"
        ) from exc


def _raw_record(place: RecordPlace) -> _RawRecord:
    data, at, end = place.data, place.at, place.end
    key_length, at = read_varint(data, at)
    key = None
    if key_length >= 0:
        key, at = data[at : at + key_length], at + key_length
    value_length, at = read_varint(data, at)
    if end > len(data) or at > end:
        raise CorruptBatchError("a record overruns its batch")
    return _RawRecord(
        place.offset_delta, place.timestamp_delta, key, value_length < 0, place.start, end
    )


# -- writing -------------------------------------------------------------------------------


def _rebuild_batch(
    header: BatchHeader, batch: memoryview, data: bytes, kept: Sequence[_RawRecord]
) -> tuple[bytes, int]:
    """The batch with only ``kept`` records; returns ``(bytes, max timestamp)``."""
    records = b"".join(data[r.start : r.end] for r in kept)
    xerial = is_xerial_snappy(batch[BATCH_HEADER_SIZE:])
    body = compress(header.compression, records, xerial=xerial)
    if header.is_log_append_time:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(header.base_timestamp + r.timestamp_delta for r in kept)
    # The batch keeps its offset range (last offset delta) and sequences.
    rebuilt = frame_batch(
        header,
        body,
        attributes=header.attributes,
        records_count=len(kept),
        max_timestamp=max_timestamp,
    )
    return rebuilt, max_timestamp


# -- prepare and commit --------------------------------------------------------------------


@dataclass(slots=True)
class _Group:
    """Consecutive captured segments and the ``.cleaned`` segment that replaces them."""

    sources: list[_Source]
    cleaned: LogSegment | None = None


@dataclass(slots=True)
class _Counters:
    records_read: int = 0
    records_kept: int = 0
    tombstones_removed: int = 0


@dataclass(slots=True)
class PreparedClean:
    """The ``.cleaned`` segments written by ``prepare_clean``, for ``commit_clean``.

    ``discard()`` deletes them (when the caller gives up on the clean)."""

    directory: Path
    captured: tuple[LogSegment, ...]
    first_dirty_offset: int
    counters: _Counters
    groups: list[_Group] = field(default_factory=list)
    state: str = "prepared"  # -> "committed" | "discarded"

    @property
    def cleaned_files(self) -> list[Path]:
        """Data files of the cleaned segments (tests look at them)."""
        return [g.cleaned.log_path for g in self.groups if g.cleaned is not None]

    def discard(self) -> None:
        for group in self.groups:
            if group.cleaned is not None:
                group.cleaned.close_handlers()
                group.cleaned.delete()
                group.cleaned = None
        self.state = "discarded"


def _capture(log: Log, end_offset: int) -> list[_Source]:
    segments = log.segments
    sources: list[_Source] = []
    for i, segment in enumerate(segments[:-1]):
        next_base = segments[i + 1].base_offset
        if next_base > end_offset:
            break
        try:
            fd = os.open(segment.log_path, os.O_RDONLY)
            largest = segment.largest_timestamp
        except (OSError, ValueError) as exc:
            for source in sources:
                os.close(source.fd)
            raise CleanAbortedError(
                f"{log.directory}: segment {segment.log_path} went away before cleaning: {exc}"
            ) from exc
        sources.append(_Source(segment, fd, segment.size, next_base, largest))
    return sources


def _group(sources: list[_Source], segment_bytes: int) -> list[_Group]:
    """Kafka's grouping: runs whose total size fits a segment and whose offsets fit int32."""
    groups: list[_Group] = []
    size = 0
    for source in sources:
        if groups:
            current = groups[-1].sources
            if (
                size + source.size <= segment_bytes
                and source.next_base - 1 - current[0].base_offset <= INT32_MAX
            ):
                current.append(source)
                size += source.size
                continue
        groups.append(_Group([source]))
        size = source.size
    return groups


def _build_offset_map(
    sources: list[_Source], first_dirty: int, tick: Callable[[int], None]
) -> dict[bytes, int]:
    offset_map: dict[bytes, int] = {}
    for source in sources:
        if source.next_base <= first_dirty:
            continue
        for header, batch in _iter_batches(source):
            if header.is_control or header.last_offset < first_dirty:
                continue
            data = records_section(batch, header)
            for record in _iter_raw_records(data, header):
                offset = header.base_offset + record.offset_delta
                if record.key is not None and offset >= first_dirty:
                    offset_map[record.key] = offset
        tick(source.size)
    return offset_map


def _clean_group(
    log: Log,
    group: _Group,
    offset_map: dict[bytes, int],
    *,
    first_dirty: int,
    now_ms: int,
    delete_retention_ms: int,
    counters: _Counters,
    tick: Callable[[int], None],
) -> bool:
    """Write the group's ``.cleaned`` segment; returns whether it differs from the group."""
    base = group.sources[0].base_offset
    for stale in log.directory.glob(f"{base:020d}.*{CLEANED_SUFFIX}"):
        stale.unlink()  # left by an earlier prepare that was never committed or discarded
    cleaned = LogSegment(
        log.directory,
        base,
        index_interval_bytes=log.config.index_interval_bytes,
        max_index_size=log.config.segment_index_bytes,
        time_ms=log.time_ms,
        file_suffix=CLEANED_SUFFIX,
    )
    group.cleaned = cleaned
    changed = len(group.sources) > 1
    out = bytearray()
    infos: list[BatchInfo] = []

    def keep(batch: bytes | memoryview, last_offset: int, max_timestamp: int) -> None:
        infos.append(BatchInfo(len(out), len(batch), last_offset, max_timestamp))
        out.extend(batch)
        if len(out) >= WRITE_CHUNK:
            cleaned.append(out, infos)
            out.clear()
            infos.clear()

    for source in group.sources:
        tombstones_expire = now_ms - source.largest_timestamp >= delete_retention_ms
        for header, batch in _iter_batches(source):
            if header.is_control:
                keep(batch, header.last_offset, header.max_timestamp)
                continue
            data = records_section(batch, header)
            kept: list[_RawRecord] = []
            for record in _iter_raw_records(data, header):
                counters.records_read += 1
                offset = header.base_offset + record.offset_delta
                if record.key is not None:
                    if offset < offset_map.get(record.key, -1):
                        continue  # a later record of the key exists
                    if record.is_tombstone and offset < first_dirty and tombstones_expire:
                        counters.tombstones_removed += 1
                        continue
                kept.append(record)
            counters.records_kept += len(kept)
            if len(kept) == header.records_count:
                keep(batch, header.last_offset, header.max_timestamp)
            elif kept:
                rebuilt, max_timestamp = _rebuild_batch(header, batch, data, kept)
                keep(rebuilt, header.last_offset, max_timestamp)
                changed = True
            else:
                changed = True
        tick(source.size)
    if out:
        cleaned.append(out, infos)
    cleaned.on_become_inactive()
    cleaned.flush()
    return changed


def prepare_clean(
    log: Log,
    *,
    clean_offset: int,
    end_offset: int,
    now_ms: int,
    delete_retention_ms: int,
    progress: Callable[[float], None] | None = None,
    on_step: Callable[[str], None] | None = None,
) -> PreparedClean:
    """Write the cleaned segments for the inactive segments wholly below ``end_offset``
    (see the module docstring); nothing in the log changes until ``commit_clean``.

    Safe to run on a worker thread while the loop serves the log. ``progress`` gets the
    fraction done; ``on_step("cleaned-written")`` runs once every file is fsynced (tests
    use it as a crash point). Raises CleanAbortedError if a captured segment disappears
    and KafkaStorageError if one holds corrupt data; no ``.cleaned`` file is left then.
    """
    sources = _capture(log, end_offset)
    segments = [s.segment for s in sources]
    first_dirty = _first_dirty(log, log.segments, clean_offset)
    end = sources[-1].next_base if sources else first_dirty
    prepared = PreparedClean(
        directory=log.directory,
        captured=tuple(segments),
        first_dirty_offset=max(first_dirty, end),
        counters=_Counters(),
    )
    if not sources:
        return prepared
    dirty_bytes = sum(s.size for s in sources if s.next_base > first_dirty)
    total = max(1, dirty_bytes + sum(s.size for s in sources))
    done = 0

    def tick(size: int) -> None:
        nonlocal done
        done += size
        if progress is not None:
            progress(min(1.0, done / total))

    try:
        offset_map = _build_offset_map(sources, first_dirty, tick)
        groups = _group(sources, log.config.segment_bytes)
        for group in groups:
            prepared.groups.append(group)
            changed = _clean_group(
                log,
                group,
                offset_map,
                first_dirty=first_dirty,
                now_ms=now_ms,
                delete_retention_ms=delete_retention_ms,
                counters=prepared.counters,
                tick=tick,
            )
            if not changed and group.cleaned is not None:
                # Already compact: leave the segment alone rather than rewrite it as is.
                prepared.groups.pop()
                group.cleaned.close_handlers()
                group.cleaned.delete()
        fsync_directory(log.directory)
    except CorruptBatchError as exc:
        prepared.discard()
        raise KafkaStorageError(f"{log.directory}: cannot clean: {exc}") from exc
    except BaseException:
        prepared.discard()
        raise
    finally:
        for source in sources:
            os.close(source.fd)
    if on_step is not None:
        on_step("cleaned-written")
    return prepared


def _still_captured(log: Log, captured: tuple[LogSegment, ...]) -> bool:
    """The captured segments are still a run of inactive segments of ``log``."""
    segments = log.segments
    for i, segment in enumerate(segments[:-1]):
        if segment is captured[0]:
            run = segments[i : i + len(captured)]
            return (
                len(run) == len(captured)
                and i + len(captured) < len(segments)
                and all(a is b for a, b in zip(run, captured, strict=True))
            )
    return False


def commit_clean(
    log: Log, prepared: PreparedClean, *, on_step: Callable[[str], None] | None = None
) -> CleanStats:
    """Swap the prepared segments into ``log`` (on the loop thread), oldest group first.

    Raises CleanAbortedError (after deleting the ``.cleaned`` files) if the log closed or
    its segments changed since ``prepare_clean``. ``on_step`` is passed to
    ``Log.replace_segments`` (crash points for tests).
    """
    if prepared.state != "prepared":
        raise LogError(f"{prepared.directory}: this prepared clean was already {prepared.state}")
    counters = prepared.counters
    if prepared.captured and (
        log.closed
        or log.directory != prepared.directory
        or not _still_captured(log, prepared.captured)
    ):
        prepared.discard()
        raise CleanAbortedError(
            f"{prepared.directory}: segments changed since the clean was prepared; "
            f"discarded the cleaned segments from offset {prepared.captured[0].base_offset}"
        )
    segments_cleaned = bytes_before = bytes_after = 0
    for i, group in enumerate(prepared.groups):
        cleaned = group.cleaned
        assert cleaned is not None
        old = [s.segment for s in group.sources]
        try:
            log.replace_segments(cleaned, old, on_step=on_step)
        except BaseException as exc:
            # This group's files are left as the failure left them (the loader finishes or
            # undoes the swap on the next open); the groups after it are dropped.
            group.cleaned = None
            for later in prepared.groups[i + 1 :]:
                if later.cleaned is not None:
                    later.cleaned.close_handlers()
                    later.cleaned.delete()
                    later.cleaned = None
            prepared.state = "discarded"
            if isinstance(exc, OSError):
                raise KafkaStorageError(
                    f"{log.directory}: swapping in the cleaned segment at offset "
                    f"{cleaned.base_offset} failed: {exc}"
                ) from exc
            raise
        group.cleaned = None  # installed: the log owns it now
        segments_cleaned += len(old)
        bytes_before += sum(s.size for s in group.sources)
        bytes_after += cleaned.size
    prepared.state = "committed"
    stats = CleanStats(
        segments_cleaned=segments_cleaned,
        bytes_before=bytes_before,
        bytes_after=bytes_after,
        records_read=counters.records_read,
        records_kept=counters.records_kept,
        tombstones_removed=counters.tombstones_removed,
        first_dirty_offset=prepared.first_dirty_offset,
    )
    logger.info(
        "%s: cleaned %d segment(s), %d -> %d bytes, kept %d of %d records; checkpoint %d",
        log.directory,
        stats.segments_cleaned,
        stats.bytes_before,
        stats.bytes_after,
        stats.records_kept,
        stats.records_read,
        stats.first_dirty_offset,
    )
    return stats

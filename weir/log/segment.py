"""A log segment: one ``.log`` file of record batches plus its offset and time indexes.

Disk format
-----------
``<base offset as 20 digits>.log`` holds v2 record batches back to back, byte for byte as
the producer (or the leader) sent them, except for the fields the broker stamps
(``baseOffset``, ``partitionLeaderEpoch`` and, for LogAppendTime topics, ``maxTimestamp``).
Beside it live ``<base>.index`` (offset -> position), ``<base>.timeindex``
(timestamp -> offset) and, once the segment holds an ABORT marker, ``<base>.txnindex``
(the aborted transactions it ended); see ``offset_index``, ``time_index`` and
``transaction_index``.
A segment being built by the cleaner carries a suffix after each name (``.cleaned``, then
``.swap``) until ``Log.replace_segments`` renames it into place (``change_file_suffix``).

Invariants
----------
* Batch offsets strictly increase, all are >= the base offset and within int32 of it (the
  indexes store relative offsets); positions fit int32.
* Offsets are dense as appended; after compaction they are sparse (records and whole
  batches are gone, a batch may hold fewer records than its offset range), so every lookup
  finds "the first batch ending at or after" an offset rather than computing positions.
* The file holds whole batches only: appends write whole batches, and ``recover`` truncates
  a torn or corrupt tail.
* The indexes get an entry for the batch that starts after more than ``index.interval.bytes``
  were appended since the last entry, so lookups scan at most about that many bytes of
  headers. They never index the first batch.
* The data file is opened with O_APPEND and only ever read with ``pread``/``sendfile`` at
  explicit positions, so a file position moved by a sender never affects a writer.

Serving only valid bytes
------------------------
Fetch sends file regions as they are (``sendfile``), so a region must be checked before
its first send: everything this process appended was validated when it was produced (or
replicated), but what was on disk at open (and not CRC-scanned by recovery) is trusted only
once ``read`` has CRC-checked it. The segment remembers where its own appends began
(``_written_from``) and which older byte ranges were checked (``_verified``); a read that
reaches unchecked bytes checks them first (one CRC pass over a cold region, none after) and
a corrupt batch there raises ``KafkaStorageError`` instead of being served.

Rolling follows Kafka: a segment is full when the next append would push it past
``segment.bytes``, when ``segment.ms`` passed since its first batch's timestamp (or, for
segments without timestamps, its creation time), or when an index is full.

Not thread-safe: the owning ``Log`` serializes access.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from weir.log.errors import KafkaStorageError
from weir.log.offset_index import INT32_MAX, OffsetIndex
from weir.log.time_index import NO_TIMESTAMP, TimeIndex
from weir.log.transaction_index import TXN_INDEX_SUFFIX, TransactionIndex
from weir.protocol.inflate import iter_offsets_and_timestamps
from weir.protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    CorruptBatchError,
    compute_crc,
    parse_header,
)

__all__ = [
    "BatchInfo",
    "FileSlice",
    "LogSegment",
    "offset_from_file_name",
    "segment_file_stem",
]

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
# Header scans read this much at a time: one read covers an index interval of small batches.
HEADER_SCAN_CHUNK = 16 * 1024
# Recovery reads (and CRC-checks) this much at a time.
RECOVERY_CHUNK = 8 * 1024 * 1024
# A read of bytes not checked yet CRC-checks them this much at a time.
VERIFY_CHUNK = 1024 * 1024


def segment_file_stem(offset: int) -> str:
    """Kafka's file name for ``offset``: 20 digits, zero padded."""
    return f"{offset:020d}"


def _merged(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` sorted, with overlapping and touching ones joined."""
    out: list[tuple[int, int]] = []
    for low, high in sorted(ranges):
        if out and low <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return out


def offset_from_file_name(name: str) -> int | None:
    """The offset a segment/snapshot file name starts with, or None if it has none."""
    stem = name.split(".", 1)[0]
    if len(stem) != 20 or not stem.isdigit():
        return None
    return int(stem)


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A byte range of a segment's open data file; what Fetch hands to ``sendfile``."""

    file: BinaryIO
    position: int
    size: int


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """What ``LogSegment.append`` needs to know about one (already stamped) batch."""

    position: int  # within the appended payload
    size: int
    last_offset: int
    max_timestamp: int


class LogSegment:
    """One segment: its data file, offset index and time index."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        time_ms: Callable[[], int],
        file_suffix: str = "",
    ) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.file_suffix = file_suffix
        stem = segment_file_stem(base_offset)
        self.log_path = directory / f"{stem}{LOG_SUFFIX}{file_suffix}"
        self.offset_index = OffsetIndex(
            directory / f"{stem}{INDEX_SUFFIX}{file_suffix}", base_offset, max_index_size
        )
        self.time_index = TimeIndex(
            directory / f"{stem}{TIME_INDEX_SUFFIX}{file_suffix}", base_offset, max_index_size
        )
        # Not rebuilt by ``recover``: its entries need the producer state, so the loader
        # rebuilds them while replaying it (see ``loader``).
        self.txn_index = TransactionIndex(
            directory / f"{stem}{TXN_INDEX_SUFFIX}{file_suffix}", base_offset
        )
        self.file: BinaryIO = open(self.log_path, "a+b", buffering=0)  # noqa: SIM115
        self._fd = self.file.fileno()
        self.size = os.fstat(self._fd).st_size
        self._time_ms = time_ms
        self.created_ms = time_ms()
        self._bytes_since_last_index_entry = 0
        # (largest timestamp, last offset of the batch that first reached it); loaded lazily.
        self._max_timestamp: tuple[int, int] | None = None
        # Timestamp of the first batch, which segment.ms counts from; loaded lazily.
        self._rolling_based_timestamp: int | None = None
        self._rolling_based_loaded = self.size == 0
        self._closed = False
        # What the last ``recover`` found wrong (None: every byte was a valid batch).
        self.recovery_problem: str | None = None
        # Every byte from here on was appended (validated) by this process; below it, the
        # ranges ``read`` has CRC-checked, sorted and disjoint ("Serving only valid bytes").
        self._written_from = self.size
        self._verified: list[tuple[int, int]] = []
        # The offset after the last batch, as the last ``check_tail`` or ``recover`` read
        # it (None: neither ran); the loader's offset-gap check uses it.
        self.checked_next_offset: int | None = None

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path}, size={self.size})"

    # -- reading headers -------------------------------------------------------------------

    def _pread(self, position: int, size: int) -> bytes:
        data = os.pread(self._fd, size, position)
        if len(data) != size:
            raise KafkaStorageError(
                f"{self.log_path}: short read of {len(data)} of {size} bytes at {position}"
            )
        return data

    def iter_headers(
        self, start: int = 0, end: int | None = None
    ) -> Iterator[tuple[int, BatchHeader]]:
        """Yield ``(position, header)`` of the batches in [start, end), without CRC checks."""
        end = self.size if end is None else end
        pos = start
        buf = b""
        buf_start = start
        while pos < end:
            at = pos - buf_start
            if at + BATCH_HEADER_SIZE > len(buf):
                buf = os.pread(self._fd, min(HEADER_SCAN_CHUNK, end - pos), pos)
                buf_start, at = pos, 0
            try:
                header = parse_header(buf, at)
            except CorruptBatchError as exc:
                raise CorruptBatchError(f"{self.log_path} at position {pos}: {exc}") from exc
            if pos + header.size > end:
                raise CorruptBatchError(
                    f"{self.log_path}: batch at position {pos} (offset {header.base_offset}) "
                    f"runs past position {end}"
                )
            yield pos, header
            pos += header.size

    def _iter_checked_batches(
        self, chunk_size: int, start: int = 0
    ) -> Iterator[tuple[int, BatchHeader]]:
        """Yield every whole batch from ``start`` with a valid CRC; CorruptBatchError at the
        first bad one."""
        end = os.fstat(self._fd).st_size
        chunk_size = max(chunk_size, BATCH_HEADER_SIZE)
        pos = start
        while pos < end:
            chunk = os.pread(self._fd, min(chunk_size, end - pos), pos)
            at = 0
            while at < len(chunk):
                if len(chunk) - at < BATCH_HEADER_SIZE and pos + at + BATCH_HEADER_SIZE <= end:
                    break  # header straddles the chunk: read on from here
                header = parse_header(chunk, at)
                size = header.size
                if at + size > len(chunk):
                    if pos + at + size > end:
                        raise CorruptBatchError(
                            f"batch at position {pos + at} is truncated "
                            f"({end - pos - at} of {size} bytes)"
                        )
                    if at == 0:  # a batch larger than the chunk: read it whole
                        chunk = self._pread(pos, size)
                        continue
                    break
                if compute_crc(chunk, at, size) != header.crc:
                    raise CorruptBatchError(
                        f"batch at position {pos + at} (offset {header.base_offset}) "
                        f"failed its CRC-32C check"
                    )
                yield pos + at, header
                at += size
            pos += at

    # -- lookups ---------------------------------------------------------------------------

    def translate_offset(
        self, offset: int, starting_position: int = 0
    ) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        _, position = self.offset_index.lookup(offset)
        for pos, header in self.iter_headers(max(position, starting_position)):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read_next_offset(self) -> int:
        """The offset after the last batch (the base offset when empty)."""
        _, position = self.offset_index.last_entry
        next_offset = self.base_offset
        for _, header in self.iter_headers(position):
            next_offset = header.next_offset
        return next_offset

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        *,
        min_one_batch: bool = True,
    ) -> FileSlice | None:
        """Whole batches from the one holding ``start_offset``, within ``max_size`` bytes and
        below ``max_position``; the first batch is whole even when larger than ``max_size``
        if ``min_one_batch``. None when no batch ends at or after ``start_offset``."""
        limit = self.size if max_position is None else min(max_position, self.size)
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        position, header = found
        first_end = position + header.size
        if first_end > limit:
            return FileSlice(self.file, position, 0)
        budget_end = position + max_size
        if budget_end >= limit:
            end = limit
        elif first_end > budget_end:
            end = first_end if min_one_batch else position
        else:
            end = self._last_boundary_before(first_end, budget_end)
        if position < self._written_from and end > position:
            self._verify(position, min(end, self._written_from))
        return FileSlice(self.file, position, end - position)

    # -- checking what is served ------------------------------------------------------------

    def _verify(self, start: int, end: int) -> None:
        """CRC-check the batches of [start, end) (batch boundaries) not checked before;
        KafkaStorageError at the first invalid one."""
        verified = self._verified
        if verified and verified[0][0] <= start and end <= verified[0][1]:
            return  # the usual case once a cold segment was read through
        gaps = []
        cursor = start
        for low, high in verified:
            if high <= cursor:
                continue
            if low >= end:
                break
            if low > cursor:
                gaps.append((cursor, low))
            cursor = high
            if cursor >= end:
                break
        if cursor < end:
            gaps.append((cursor, end))
        for low, high in gaps:
            self._check_batches(low, high)
            verified.append((low, high))
        if gaps:
            self._verified = _merged(verified)

    def _check_batches(self, start: int, end: int) -> None:
        """Raise KafkaStorageError unless [start, end) is whole batches with valid CRCs."""
        pos = start
        while pos < end:
            chunk = os.pread(self._fd, min(VERIFY_CHUNK, end - pos), pos)
            at = 0
            try:
                while len(chunk) - at >= BATCH_HEADER_SIZE:
                    header = parse_header(chunk, at)
                    size = header.size
                    if pos + at + size > end:
                        raise CorruptBatchError(
                            f"batch at position {pos + at} (offset {header.base_offset}) "
                            f"runs past position {end}"
                        )
                    if at + size > len(chunk):
                        if at:
                            break  # read on from this batch
                        chunk = self._pread(pos, size)  # one batch larger than the chunk
                    if compute_crc(chunk, at, size) != header.crc:
                        raise CorruptBatchError(
                            f"batch at position {pos + at} (offset {header.base_offset}) "
                            f"failed its CRC-32C check"
                        )
                    at += size
                if at == 0:
                    raise CorruptBatchError(
                        f"{len(chunk)} bytes at position {pos} are not a whole batch header"
                    )
            except CorruptBatchError as exc:
                raise KafkaStorageError(f"{self.log_path}: {exc}; not served") from exc
            pos += at

    def _last_boundary_before(self, start: int, limit: int) -> int:
        """The largest batch boundary <= ``limit``, given a boundary ``start`` <= limit."""
        _, indexed = self.offset_index.lookup_by_position(limit)
        end = max(start, indexed)
        for pos, header in self.iter_headers(end):
            if pos + header.size > limit:
                return pos
            end = pos + header.size
        return end

    def read_batch(self, position: int, header: BatchHeader) -> bytes:
        """The bytes of the batch at ``position`` (as ``iter_headers`` found it)."""
        return self._pread(position, header.size)

    @property
    def max_timestamp_and_offset(self) -> tuple[int, int]:
        """(largest batch timestamp, last offset of the first batch reaching it).

        Loaded from the time index's last entry, which roll, close and recovery all make
        the segment's maximum.
        """
        if self._max_timestamp is None:
            self._max_timestamp = self.time_index.last_entry
        return self._max_timestamp

    @property
    def largest_timestamp(self) -> int:
        return self.max_timestamp_and_offset[0]

    def _read_largest_timestamp(self) -> tuple[int, int]:
        """Scan for the true maximum: the time index's last entry, then the batches after it."""
        timestamp, offset = self.time_index.last_entry
        _, position = self.offset_index.lookup(offset)
        for _, header in self.iter_headers(position):
            if header.max_timestamp > timestamp:
                timestamp, offset = header.max_timestamp, header.last_offset
        return timestamp, offset

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int = 0
    ) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``starting_offset`` whose
        timestamp is >= ``timestamp``; decodes the records of one batch."""
        _, entry_offset = self.time_index.lookup(timestamp)
        _, position = self.offset_index.lookup(max(entry_offset, starting_offset))
        for pos, header in self.iter_headers(position):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            for offset, record_ts in iter_offsets_and_timestamps(self.read_batch(pos, header)):
                if record_ts >= timestamp and offset >= starting_offset:
                    return offset, record_ts
        return None

    def find_max_timestamp_record(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record carrying the segment's largest timestamp."""
        timestamp, offset = self.max_timestamp_and_offset
        if timestamp == NO_TIMESTAMP:
            return None
        _, position = self.offset_index.lookup(offset)
        for pos, header in self.iter_headers(position):
            if header.max_timestamp != timestamp:
                continue
            if header.is_log_append_time:
                return header.base_offset, timestamp
            for record_offset, record_ts in iter_offsets_and_timestamps(
                self.read_batch(pos, header)
            ):
                if record_ts == timestamp:
                    return record_offset, timestamp
            return header.last_offset, timestamp
        return None

    # -- appending -------------------------------------------------------------------------

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def _time_waited_for_roll(self, now_ms: int, max_timestamp_in_messages: int) -> int:
        if not self._rolling_based_loaded:
            self._rolling_based_loaded = True
            if self.size:
                self._rolling_based_timestamp = parse_header(
                    self._pread(0, BATCH_HEADER_SIZE)
                ).max_timestamp
        if self._rolling_based_timestamp is not None and self._rolling_based_timestamp >= 0:
            return max_timestamp_in_messages - self._rolling_based_timestamp
        return now_ms - self.created_ms

    def should_roll(
        self,
        *,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        now_ms: int,
        segment_bytes: int,
        segment_ms: int,
    ) -> bool:
        """Kafka's roll rule, checked before each append."""
        if not self.can_convert_to_relative_offset(max_offset_in_messages):
            return True
        if self.size == 0:
            return False
        return (
            self.size > segment_bytes - messages_size
            or self._time_waited_for_roll(now_ms, max_timestamp_in_messages) > segment_ms
            or self.offset_index.is_full
            or self.time_index.is_full
        )

    def append(self, payload: bytes | bytearray | memoryview, batches: Sequence[BatchInfo]) -> None:
        """Write ``payload`` (whole, stamped batches) with one write() and index it."""
        position = self.size
        if position == 0:
            self._rolling_based_loaded = True
            self._rolling_based_timestamp = max(b.max_timestamp for b in batches)
        view = memoryview(payload)
        try:
            # Index space first: a disk too full for an index entry fails here, before
            # any byte of the batch is written (see ``index_file``).
            self.offset_index.ensure_room(len(batches))
            self.time_index.ensure_room(len(batches))
        except OSError as exc:
            raise KafkaStorageError(
                f"{self.log_path}: no room for the index entries of an append at position "
                f"{position}: {exc}"
            ) from exc
        try:
            written = os.write(self._fd, view)
            while written < len(view):
                written += os.write(self._fd, view[written:])
        except OSError as exc:
            # Never leave half a write behind: the file must hold whole batches only.
            undone = "cut off"
            try:
                os.ftruncate(self._fd, position)
            except OSError as undo:
                # The next start's tail recovery cuts the torn batch instead.
                undone = f"not cut off ({undo}); recovery cuts it at the next start"
            raise KafkaStorageError(
                f"{self.log_path}: write at position {position} failed: {exc}; the partial "
                f"write was {undone}"
            ) from exc
        timestamp, offset = self.max_timestamp_and_offset
        since = self._bytes_since_last_index_entry
        offset_index, time_index = self.offset_index, self.time_index
        for batch in batches:
            if batch.max_timestamp > timestamp:
                timestamp, offset = batch.max_timestamp, batch.last_offset
            if since > self.index_interval_bytes:
                if not offset_index.is_full:
                    offset_index.append(batch.last_offset, position + batch.position)
                time_index.maybe_append(timestamp, offset)
                since = 0
            since += batch.size
        self._bytes_since_last_index_entry = since
        self._max_timestamp = (timestamp, offset)
        self.size = position + len(view)

    # -- recovery and truncation -----------------------------------------------------------

    def _offset_problem(self, position: int, header: BatchHeader, expected: int) -> str | None:
        """Why ``header`` cannot follow a batch ending before ``expected``, or None."""
        if header.base_offset < expected:
            return (
                f"batch at position {position} has offset {header.base_offset}, "
                f"below the expected {expected}"
            )
        if not self.can_convert_to_relative_offset(header.last_offset):
            return (
                f"batch at position {position} has offset {header.last_offset}, "
                f"too far above the base offset"
            )
        return None

    def check_tail(self) -> str | None:
        """Why the data after the offset index's last entry is not whole, valid batches
        (or None when it is).

        The loader's check of a segment it does not CRC-scan: a clean shutdown marker or a
        recovery point claims the file is whole, but a disk that lied about a write, or a
        data directory copied while in use, can still end inside a batch. The bytes after
        the last index entry are at most about ``index.interval.bytes`` plus one batch, so
        checking them (structure, offsets and CRC) costs one or two reads per segment.
        """
        offset, position = self.offset_index.last_entry
        # An index entry names a batch's last offset; the batch at its position must be
        # the one holding it, and the batches after it follow on.
        expected = self.base_offset
        first = position > 0
        try:
            for pos, header in self._iter_checked_batches(RECOVERY_CHUNK, position):
                if first and header.last_offset != offset:
                    return (
                        f"the last offset index entry (offset {offset}, position {pos}) "
                        f"points at a batch ending at offset {header.last_offset}"
                    )
                first = False
                problem = self._offset_problem(pos, header, expected)
                if problem is not None:
                    return problem
                expected = header.next_offset
        except CorruptBatchError as exc:
            return str(exc)
        self.checked_next_offset = expected
        return None

    def sanity_check(self) -> None:
        """Raise CorruptIndexError if either index is not a trimmed, valid index."""
        self.offset_index.sanity_check(self.size)
        self.time_index.sanity_check()

    def recover(
        self,
        on_batch: Callable[[BatchHeader], None] | None = None,
        *,
        chunk_size: int = RECOVERY_CHUNK,
    ) -> int:
        """Rebuild both indexes from a CRC-checked scan; truncate any invalid tail.

        ``on_batch`` sees each valid header (the log feeds its leader-epoch cache); the file
        is read ``chunk_size`` bytes at a time. Returns the number of bytes truncated.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.recovery_problem = None
        valid = since = 0
        timestamp, offset = NO_TIMESTAMP, self.base_offset
        next_offset = self.base_offset
        try:
            for pos, header in self._iter_checked_batches(chunk_size):
                problem = self._offset_problem(pos, header, next_offset)
                if problem is not None:
                    raise CorruptBatchError(problem)
                if header.max_timestamp > timestamp:
                    timestamp, offset = header.max_timestamp, header.last_offset
                if since > self.index_interval_bytes:
                    if not self.offset_index.is_full:
                        self.offset_index.append(header.last_offset, pos)
                    self.time_index.maybe_append(timestamp, offset)
                    since = 0
                since += header.size
                valid = pos + header.size
                next_offset = header.next_offset
                if on_batch is not None:
                    on_batch(header)
        except CorruptBatchError as exc:
            # The caller (the loader) logs the one line an operator sees.
            self.recovery_problem = str(exc)
            log.debug("%s: invalid data at position %d: %s", self.log_path, valid, exc)
        truncated = os.fstat(self._fd).st_size - valid
        if truncated:
            os.ftruncate(self._fd, valid)
        self.size = valid
        # Every byte left was CRC-checked just now: reads need not check it again.
        self._written_from = 0
        self._verified = []
        self.time_index.maybe_append(timestamp, offset, skip_full_check=True)
        self._max_timestamp = (timestamp, offset)
        self._bytes_since_last_index_entry = since
        self._rolling_based_loaded = valid == 0
        self._rolling_based_timestamp = None
        self.checked_next_offset = next_offset
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Drop the batch holding ``offset`` and everything after; returns bytes removed."""
        found = self.translate_offset(offset)
        if found is None:
            return 0
        position, _ = found
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        truncated = self.size - position
        os.ftruncate(self._fd, position)
        self.size = position
        # What is appended from here on is this process's own.
        self._written_from = min(self._written_from, position)
        self._verified = [
            (low, min(high, position)) for low, high in self._verified if low < position
        ]
        self._bytes_since_last_index_entry = 0
        if position == 0:
            self.created_ms = self._time_ms()
            self._rolling_based_loaded = True
            self._rolling_based_timestamp = None
        self._max_timestamp = self._read_largest_timestamp()
        return truncated

    # -- lifecycle -------------------------------------------------------------------------

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def trim_indexes(self) -> None:
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def release_indexes(self) -> None:
        """Unmap both indexes; they are mapped again on next use."""
        self.offset_index.close_handler()
        self.time_index.close_handler()

    def on_become_inactive(self) -> None:
        """The segment stops taking appends: record its max timestamp, trim the indexes."""
        timestamp, offset = self.max_timestamp_and_offset
        self.time_index.maybe_append(timestamp, offset, skip_full_check=True)
        self.trim_indexes()

    def flush(self) -> None:
        """fsync the data file and the indexes."""
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Record the max timestamp, trim the indexes, close every file."""
        if self._closed:
            return
        self._closed = True
        if self._max_timestamp is not None:
            self.time_index.maybe_append(*self._max_timestamp, skip_full_check=True)
        self.offset_index.close()
        self.time_index.close()
        self.file.close()

    def close_handlers(self) -> None:
        """Close files without touching them (a crash-like stop, and before deletion)."""
        if self._closed:
            return
        self._closed = True
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.file.close()

    def change_file_suffix(self, suffix: str) -> None:
        """Rename the segment's files to carry ``suffix`` after their usual names (Kafka's
        ``changeFileSuffixes``; the cleaner moves ``.cleaned`` -> ``.swap`` -> ``""``).

        The indexes go first and the data file last, so a ``.log`` under its final name
        means the rename finished. Open descriptors and mappings survive a rename.
        """
        stem = segment_file_stem(self.base_offset)
        directory = self.log_path.parent
        for index, suffix_of_kind in (
            (self.offset_index, INDEX_SUFFIX),
            (self.time_index, TIME_INDEX_SUFFIX),
        ):
            target = directory / f"{stem}{suffix_of_kind}{suffix}"
            os.replace(index.path, target)
            index.path = target
        self.txn_index.rename(directory / f"{stem}{TXN_INDEX_SUFFIX}{suffix}")
        target = directory / f"{stem}{LOG_SUFFIX}{suffix}"
        os.replace(self.log_path, target)
        self.log_path = target
        self.file_suffix = suffix

    def delete(self, *, close_data_file: bool = True) -> None:
        """Remove the segment's files. With ``close_data_file=False`` the open data file is
        left to the caller, so in-flight FileSlices stay readable until it closes it."""
        self._closed = True
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.log_path.unlink(missing_ok=True)
        if close_data_file:
            self.file.close()

"""The aborted-transaction index of one segment (Kafka's ``TransactionIndex``).

Disk format
-----------
``<base offset as 20 digits>.txnindex`` beside the segment's ``.log``: Kafka's layout, so
Kafka's tools read it. Entries of 34 bytes, big-endian, back to back, no header::

    version           int16   0
    producerId        int64
    firstOffset       int64   first offset of the aborted transaction (may lie in an
                              earlier segment)
    lastOffset        int64   offset of its ABORT marker, which this segment holds
    lastStableOffset  int64   the partition's LSO once the marker was written: the first
                              offset of the oldest transaction of another producer still
                              open, or lastOffset + 1 when none was

Invariants
----------
* One entry per ABORT marker in the segment that ended a non-empty transaction (a marker
  for a producer with no open transaction completes nothing and gets none), in log order:
  ``lastOffset`` strictly increases and is >= the segment's base offset.
* The file is created by the first entry; a missing file is an empty index (segments
  written before transactions existed have none). Unlike the offset and time indexes it is
  not preallocated or memory-mapped: aborts are rare, so each append is one small
  ``write`` with O_APPEND, and the entries are read once and kept in memory.
* Only whole entries count: a crash can leave a torn last entry, which reads ignore and
  ``truncate_to``/``reset`` cut off (recovery rebuilds the entries from the log, see
  ``loader``).

Reads: ``collect(fetch_offset, upper_bound_offset)`` is Kafka's ``collectAbortedTxns``:
the entries whose [firstOffset, lastOffset] overlaps [fetch_offset, upper_bound_offset),
and whether the search is complete. An entry whose lastStableOffset is at or above the
upper bound ends the search: a transaction aborted later (in this or a later segment) that
overlapped the range would have started below the upper bound and still been open when
that entry was written, so it would have held that LSO below its first offset.
``Log.collect_aborted_transactions`` walks segments until one says so.

Not thread-safe: the owning ``Log`` serializes access.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from weir.log.errors import CorruptIndexError, KafkaStorageError

__all__ = ["ABORTED_TXN_SIZE", "TXN_INDEX_SUFFIX", "AbortedTxn", "TransactionIndex"]

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: what Fetch reports to read_committed consumers
    (``producer_id``, ``first_offset``) plus where it ended and the LSO at that time."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TransactionIndex:
    """The ``.txnindex`` file of the segment starting at ``base_offset``."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        # The whole entries of the file, read on first use.
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path}, entries={len(self.entries)})"

    # -- reading ---------------------------------------------------------------------------

    def _read(self, *, strict: bool) -> list[AbortedTxn]:
        """The file's whole entries. ``strict``: CorruptIndexError on a torn tail too."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise KafkaStorageError(f"cannot read transaction index {self.path}: {exc}") from exc
        whole = len(data) - len(data) % ABORTED_TXN_SIZE
        if strict and whole != len(data):
            raise CorruptIndexError(
                f"transaction index {self.path} is {len(data)} bytes, not a whole number of "
                f"{ABORTED_TXN_SIZE}-byte entries"
            )
        entries: list[AbortedTxn] = []
        previous = self.base_offset - 1
        for position in range(0, whole, ABORTED_TXN_SIZE):
            version, *fields = _ENTRY.unpack_from(data, position)
            entry = AbortedTxn(*fields)
            if version != ABORTED_TXN_VERSION:
                raise CorruptIndexError(
                    f"transaction index {self.path} has an entry of version {version} at "
                    f"position {position}; only version {ABORTED_TXN_VERSION} is known"
                )
            if entry.last_offset <= previous or entry.first_offset > entry.last_offset:
                raise CorruptIndexError(
                    f"transaction index {self.path}: entry at position {position} "
                    f"({entry}) does not follow offset {previous} in segment "
                    f"{self.base_offset}"
                )
            previous = entry.last_offset
            entries.append(entry)
        return entries

    @property
    def entries(self) -> list[AbortedTxn]:
        """Every aborted transaction the segment ended, in log order (do not mutate)."""
        if self._entries is None:
            self._entries = self._read(strict=False)
        return self._entries

    def sanity_check(self, *, torn_tail_ok: bool = False) -> None:
        """Raise CorruptIndexError unless the file is whole, valid, ordered entries, all
        ending in this segment (Kafka's check, plus whole entries and order).
        ``torn_tail_ok``: a partial last entry (an unflushed file after a crash) is no fault."""
        self._entries = self._read(strict=not torn_tail_ok)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The entries overlapping [fetch_offset, upper_bound_offset), and whether no later
        segment can hold one (see the module docstring)."""
        found = []
        for entry in self.entries:
            if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
                found.append(entry)
            if entry.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    # -- writing ---------------------------------------------------------------------------

    def append(self, entry: AbortedTxn) -> None:
        """Add the entry of an ABORT marker this segment holds (after every earlier one)."""
        entries = self.entries
        last = entries[-1].last_offset if entries else self.base_offset - 1
        if entry.last_offset <= last:
            raise ValueError(
                f"transaction index {self.path}: aborted transaction ending at offset "
                f"{entry.last_offset} does not follow offset {last}"
            )
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                # A torn tail (crash) would shift every entry after it: start after it.
                size = os.fstat(fd).st_size
                if size != len(entries) * ABORTED_TXN_SIZE:
                    os.ftruncate(fd, len(entries) * ABORTED_TXN_SIZE)
                os.write(fd, entry.encode())
            finally:
                os.close(fd)
        except OSError as exc:
            raise KafkaStorageError(
                f"{self.path}: cannot index the aborted transaction ending at offset "
                f"{entry.last_offset}: {exc}"
            ) from exc
        entries.append(entry)
        self._dirty = True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of markers at or above ``offset`` (and any torn tail)."""
        entries = self.entries
        keep = len(entries)
        while keep and entries[keep - 1].last_offset >= offset:
            keep -= 1
        self._cut(keep)

    def reset(self) -> None:
        """Drop every entry (recovery rebuilds them from the log)."""
        self._entries = []
        self._cut(0)

    def _cut(self, keep: int) -> None:
        entries = self.entries
        size = keep * ABORTED_TXN_SIZE
        try:
            if self.path.exists() and self.path.stat().st_size != size:
                os.truncate(self.path, size)
                self._dirty = True
        except OSError as exc:
            raise KafkaStorageError(
                f"cannot truncate transaction index {self.path}: {exc}"
            ) from exc
        del entries[keep:]

    def flush(self) -> None:
        """fsync the file if it changed since the last flush."""
        if not self._dirty:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def rename(self, path: Path) -> None:
        """Move the file (if any) to ``path`` (the segment changed its file suffix)."""
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self._entries = []
        self._dirty = False

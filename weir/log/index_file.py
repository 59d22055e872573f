"""A memory-mapped file of fixed-width index entries (Kafka's ``AbstractIndex``).

Theory of operation
-------------------
An index belongs to one segment and maps keys to values through sorted, fixed-width,
big-endian entries. The active segment's index file is preallocated (sparsely, with
``ftruncate``) to ``segment.index.bytes`` rounded down to a whole number of entries and
memory-mapped, so appending an entry is a ``struct.pack_into`` with no system call. When a
segment stops being active, or on close, the file is trimmed to its valid entries; an index
of a cleanly closed segment is therefore exactly ``entries * entry_size`` bytes long.

A preallocated file is sparse, and a store into a mapped page the filesystem cannot back
(a full disk or tmpfs) kills the process with SIGBUS, not an error. So the pages an entry
will land on are reserved first with ``posix_fallocate``, ``RESERVE_BYTES`` at a time
(``ensure_room``; one system call per few thousand entries): a full disk then fails the
reservation with ENOSPC, an ordinary ``OSError`` the log turns into KAFKA_STORAGE_ERROR,
before anything was written. A filesystem without fallocate is left sparse, as before.

After a crash the active segment's index may still be preallocated with a zero tail; the
subclasses' ``sanity_check`` notices (a zero entry can never be valid at the end) and the
loader rebuilds the index from the log.

Files are mapped lazily, on first use: a partition with many old segments costs neither
memory mappings nor file descriptors for indexes nobody reads.

Not thread-safe: the owning ``Log`` serializes access.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from weir.log.errors import CorruptIndexError

__all__ = ["RESERVE_BYTES", "IndexFile"]

# Index file space reserved (allocated on disk) at a time, ahead of the entries.
RESERVE_BYTES = 64 * 1024
# fallocate errors that mean "not supported here": such a file stays sparse.
_NO_FALLOCATE = (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS)


class IndexFile:
    """Fixed-width sorted entries in a lazily memory-mapped file."""

    # The big-endian layout of one entry; ``entry_size`` is its size in bytes.
    entry_format: ClassVar[struct.Struct]
    entry_size: ClassVar[int]
    # What error messages call the file ("index file", "time index file").
    file_kind: ClassVar[str]

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.entry_size = cls.entry_format.size

    def __init__(self, path: Path, base_offset: int, max_index_size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        self._mm: mmap.mmap | None = None
        self.newly_created = not path.exists()
        if self.newly_created:
            length = self._round_down(max_index_size)
            with open(path, "wb") as f:
                f.truncate(length)
        else:
            length = path.stat().st_size
        self._file_length = length
        self._length = self._round_down(length)
        self._entries = 0 if self.newly_created else self._length // self.entry_size
        # Bytes from the file's start known to be allocated on disk (see ``ensure_room``):
        # the entries written, whose pages were necessarily backed.
        self._reserved = self._entries * self.entry_size

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path}, entries={self._entries})"

    def _round_down(self, size: int) -> int:
        return max(0, size) // self.entry_size * self.entry_size

    # -- size ------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._length // self.entry_size

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    @property
    def file_length(self) -> int:
        return self._file_length

    def resize(self, new_size: int) -> None:
        """Set the file length to ``new_size`` rounded down to whole entries."""
        length = self._round_down(new_size)
        if length == self._file_length:
            return
        self._unmap()
        os.truncate(self.path, length)
        self._file_length = self._length = length
        self._entries = min(self._entries, length // self.entry_size)
        self._reserved = min(self._reserved, length)

    def ensure_room(self, entries: int) -> None:
        """Allocate the disk space ``entries`` more entries will need (see the module
        docstring); OSError (ENOSPC, EFBIG, EIO) when the disk cannot give it."""
        need = min((self._entries + entries) * self.entry_size, self._length)
        if need <= self._reserved:
            return
        upto = min(self._length, max(need, self._reserved + RESERVE_BYTES))
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, self._reserved, upto - self._reserved)
        except OSError as exc:
            if exc.errno not in _NO_FALLOCATE:
                raise
            upto = self._length  # cannot reserve here: stay sparse
        finally:
            os.close(fd)
        self._reserved = upto

    def trim_to_valid_size(self) -> None:
        self.resize(self._entries * self.entry_size)

    def reset(self) -> None:
        """Drop every entry and zero the file (so no stale entry survives a crash)."""
        self._entries = 0
        self.resize(0)
        self.resize(self.max_index_size)

    def _truncate_to_entries(self, entries: int) -> None:
        self._entries = min(self._entries, entries)

    # -- mapping ---------------------------------------------------------------------------

    def _mapped(self) -> mmap.mmap:
        if self._mm is None:
            with open(self.path, "r+b") as f:
                self._mm = mmap.mmap(f.fileno(), self._length)
        return self._mm

    def _unmap(self) -> None:
        if self._mm is not None:
            self._mm.close()
            self._mm = None

    def _entry(self, slot: int) -> tuple[int, ...]:
        return self.entry_format.unpack_from(self._mapped(), slot * self.entry_size)

    def _field_at(self, slot: int, field: int) -> int:
        """One field of entry ``slot`` (a binary search's key)."""
        return self._entry(slot)[field]

    def _put(self, *values: int) -> None:
        if (self._entries + 1) * self.entry_size > self._reserved:
            self.ensure_room(1)
        self.entry_format.pack_into(self._mapped(), self._entries * self.entry_size, *values)
        self._entries += 1

    def _check_whole_entries(self) -> None:
        """Raise CorruptIndexError if the file's length is not a whole number of entries."""
        if self._file_length % self.entry_size:
            raise CorruptIndexError(
                f"{self.file_kind} {self.path} has length {self._file_length}, "
                f"not a multiple of {self.entry_size}"
            )

    # -- lookups ---------------------------------------------------------------------------

    def entry(self, slot: int) -> tuple[int, int]:
        """Entry ``slot`` in absolute terms (the subclass adds the base offset)."""
        raise NotImplementedError

    @property
    def empty_entry(self) -> tuple[int, int]:
        """What a lookup answers when no entry qualifies (the segment's start)."""
        raise NotImplementedError

    @property
    def last_entry(self) -> tuple[int, int]:
        """The last entry, or ``empty_entry`` when the index is empty."""
        if self._entries == 0:
            return self.empty_entry
        return self.entry(self._entries - 1)

    def _lookup(self, target: int, key: Callable[[int], int]) -> tuple[int, int]:
        """The largest entry whose ``key`` is <= ``target``, or ``empty_entry``."""
        slot = self._largest_lower_bound_slot(target, key)
        if slot < 0:
            return self.empty_entry
        return self.entry(slot)

    def _largest_lower_bound_slot(self, target: int, key: Callable[[int], int]) -> int:
        """Slot of the largest entry whose key is <= ``target``; -1 if there is none."""
        n = self._entries
        if n == 0 or key(0) > target:
            return -1
        lo, hi = 0, n - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if key(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # -- lifecycle -------------------------------------------------------------------------

    def flush(self) -> None:
        """Write dirty pages and the file length to disk."""
        if self._mm is not None:
            self._mm.flush()
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Trim to the valid entries and release the mapping."""
        self.trim_to_valid_size()
        self._unmap()

    def close_handler(self) -> None:
        """Release the mapping without touching the file."""
        self._unmap()

    def delete(self) -> None:
        self._unmap()
        self.path.unlink(missing_ok=True)

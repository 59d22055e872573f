"""The sparse time index of a segment: Kafka's ``.timeindex`` file.

Disk format
-----------
A sequence of 12-byte big-endian entries, no header::

    timestamp       int64   the largest batch timestamp seen so far in the segment
    relativeOffset  int32   offset - base offset of the last offset of the batch that
                            first reached that timestamp

Invariants
----------
* Timestamps strictly increase; offsets never decrease. An entry is appended only when the
  segment's running maximum timestamp grew, at the same moments the offset index gets one,
  plus once when the segment stops being active (so the last entry holds the segment's
  largest timestamp for cleanly rolled segments).
* Every record before an entry's offset has a timestamp below the entry's timestamp, so a
  search for the first record with timestamp >= T can start at the batch holding the offset
  of the largest entry whose timestamp is <= T.
* As in Kafka, the last slot of a preallocated file is reserved for the entry written when
  the segment rolls: ``is_full`` triggers a roll one entry early.
"""

from __future__ import annotations

import struct

from weir.log.errors import CorruptIndexError
from weir.log.index_file import IndexFile

__all__ = ["TimeIndex"]

NO_TIMESTAMP = -1


class TimeIndex(IndexFile):
    """Timestamp -> offset, sparse, binary-searched."""

    entry_format = struct.Struct(">qi")  # timestamp, relativeOffset
    file_kind = "time index file"

    def _timestamp_at(self, slot: int) -> int:
        return self._field_at(slot, 0)

    def _relative_offset_at(self, slot: int) -> int:
        return self._field_at(slot, 1)

    def entry(self, slot: int) -> tuple[int, int]:
        """``(timestamp, absolute offset)`` of entry ``slot``."""
        timestamp, relative = self._entry(slot)
        return timestamp, self.base_offset + relative

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries - 1

    @property
    def empty_entry(self) -> tuple[int, int]:
        """``(-1, base_offset)``: no timestamp seen yet, search from the segment's start."""
        return NO_TIMESTAMP, self.base_offset

    def lookup(self, target_timestamp: int) -> tuple[int, int]:
        """Largest entry with timestamp <= target, or ``(-1, base_offset)``."""
        return self._lookup(target_timestamp, self._timestamp_at)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Append ``(timestamp, offset)`` if the timestamp is larger than the last entry's.

        ``skip_full_check`` lets the roll-time entry use the reserved last slot; if even
        that is taken the entry is skipped (lookups stay correct, only less precise).
        """
        last_timestamp, last_offset = self.last_entry
        if self._entries and offset < last_offset:
            raise ValueError(
                f"time index entry ({timestamp}, {offset}) goes below the last offset "
                f"{last_offset} of {self.path}"
            )
        if timestamp <= last_timestamp:
            return
        if self._entries >= self.max_entries or (self.is_full and not skip_full_check):
            return
        self._put(timestamp, offset - self.base_offset)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        relative = offset - self.base_offset
        slot = self._largest_lower_bound_slot(relative, self._relative_offset_at)
        if slot < 0:
            keep = 0
        elif self._relative_offset_at(slot) == relative:
            # Entries may share an offset: keep only those strictly below it.
            keep = slot
            while keep > 0 and self._relative_offset_at(keep - 1) == relative:
                keep -= 1
        else:
            keep = slot + 1
        self._truncate_to_entries(keep)

    def sanity_check(self) -> None:
        """Raise CorruptIndexError unless the file looks like a trimmed, valid index."""
        self._check_whole_entries()
        if self._entries == 0:
            return
        first_timestamp, first_relative = self._entry(0)
        last_timestamp, last_relative = self._entry(self._entries - 1)
        if first_relative < 0:
            raise CorruptIndexError(
                f"time index file {self.path} is corrupt: first entry offset "
                f"{self.base_offset + first_relative} is below the base offset {self.base_offset}"
            )
        if last_timestamp < first_timestamp or last_relative < first_relative:
            raise CorruptIndexError(
                f"time index file {self.path} is corrupt: last entry "
                f"({last_timestamp}, {self.base_offset + last_relative}) is below the first "
                f"({first_timestamp}, {self.base_offset + first_relative})"
            )
        if self._entries > 1 and last_timestamp == first_timestamp:
            raise CorruptIndexError(
                f"time index file {self.path} is corrupt: repeated timestamp {last_timestamp}"
            )

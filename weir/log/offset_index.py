"""The sparse offset index of a segment: Kafka's ``.index`` file.

Disk format
-----------
A sequence of 8-byte big-endian entries, no header::

    relativeOffset  int32   offset - segment base offset (of the indexed batch's LAST offset)
    position        int32   byte position of that batch in the segment's ``.log``

Invariants
----------
* Entries are strictly increasing in both fields.
* An entry exists for at most one batch per ``index.interval.bytes`` of log appended, and
  never for the segment's first batch, so a relative offset of 0 is never valid; that is how
  a preallocated zero tail left by a crash is told apart from real entries.
* The entry's offset is the batch's last offset: looking up any offset ``t`` returns the
  largest entry ``<= t``; every batch before its position ends below ``t``, so a forward
  header scan from that position finds the batch holding ``t``.
"""

from __future__ import annotations

import struct

from weir.log.errors import CorruptIndexError
from weir.log.index_file import IndexFile

__all__ = ["OffsetIndex"]

INT32_MAX = 2**31 - 1


class OffsetIndex(IndexFile):
    """Offset -> file position, sparse, binary-searched."""

    entry_format = struct.Struct(">ii")  # relativeOffset, position
    file_kind = "index file"

    def _offset_at(self, slot: int) -> int:
        return self._field_at(slot, 0)

    def _position_at(self, slot: int) -> int:
        return self._field_at(slot, 1)

    def entry(self, slot: int) -> tuple[int, int]:
        """``(absolute offset, position)`` of entry ``slot``."""
        relative, position = self._entry(slot)
        return self.base_offset + relative, position

    @property
    def empty_entry(self) -> tuple[int, int]:
        """``(base_offset, 0)``: the segment's first batch is at its first byte."""
        return self.base_offset, 0

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``target_offset``, or ``(base_offset, 0)``."""
        relative = target_offset - self.base_offset
        return self._lookup(min(relative, INT32_MAX), self._offset_at)

    def lookup_by_position(self, position: int) -> tuple[int, int]:
        """Largest entry with position <= ``position``, or ``(base_offset, 0)``."""
        return self._lookup(position, self._position_at)

    def append(self, offset: int, position: int) -> None:
        """Add an entry; offsets and positions must grow and the index must have room."""
        relative = offset - self.base_offset
        if not 0 < relative <= INT32_MAX:
            raise ValueError(
                f"offset {offset} cannot be indexed in {self.path} (base {self.base_offset})"
            )
        if self._entries:
            last_offset, last_position = self.last_entry
            if offset <= last_offset or position <= last_position:
                raise ValueError(
                    f"index entry ({offset}, {position}) is not above the last entry "
                    f"({last_offset}, {last_position}) of {self.path}"
                )
        if self.is_full:
            raise ValueError(f"{self.path} is full ({self._entries} entries)")
        self._put(relative, position)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        relative = offset - self.base_offset
        slot = self._largest_lower_bound_slot(min(relative, INT32_MAX), self._offset_at)
        if slot < 0:
            keep = 0
        elif self._offset_at(slot) == relative:
            keep = slot
        else:
            keep = slot + 1
        self._truncate_to_entries(keep)

    def sanity_check(self, log_size: int) -> None:
        """Raise CorruptIndexError unless the file looks like a trimmed, valid index."""
        self._check_whole_entries()
        if self._entries == 0:
            return
        first_relative = self._offset_at(0)
        last_relative, last_position = self._entry(self._entries - 1)
        if first_relative <= 0 or last_relative < first_relative:
            raise CorruptIndexError(
                f"index file {self.path} is corrupt: first entry offset "
                f"{self.base_offset + first_relative}, last entry offset "
                f"{self.base_offset + last_relative}, base offset {self.base_offset}"
            )
        if not 0 < last_position < log_size:
            raise CorruptIndexError(
                f"index file {self.path} is corrupt: last entry points at byte "
                f"{last_position} of a {log_size}-byte log"
            )

"""TimeIndex: Kafka's .timeindex file (12-byte entries, increasing timestamps)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weir.log.errors import CorruptIndexError
from weir.log.time_index import TimeIndex

BASE = 50


@pytest.fixture
def index(new_index) -> TimeIndex:
    return new_index(TimeIndex, BASE, 12 * 10)


def test_maybe_append_keeps_only_increasing_timestamps(index: TimeIndex) -> None:
    index.maybe_append(1000, BASE + 1)
    index.maybe_append(1000, BASE + 2)  # same timestamp: no entry
    index.maybe_append(900, BASE + 3)  # lower timestamp: no entry
    index.maybe_append(1100, BASE + 4)
    assert index.entries == 2
    assert index.last_entry == (1100, BASE + 4)


def test_maybe_append_rejects_offset_going_backwards(index: TimeIndex) -> None:
    index.maybe_append(1000, BASE + 5)
    with pytest.raises(ValueError):
        index.maybe_append(2000, BASE + 4)


def test_lookup_returns_largest_entry_with_timestamp_at_or_below_target(index: TimeIndex) -> None:
    for i in range(1, 6):
        index.maybe_append(i * 100, BASE + i * 10)
    assert index.lookup(99) == (-1, BASE)
    assert index.lookup(100) == (100, BASE + 10)
    assert index.lookup(350) == (300, BASE + 30)
    assert index.lookup(10**12) == (500, BASE + 50)


def test_last_slot_is_reserved_for_the_roll_time_entry(index: TimeIndex) -> None:
    for i in range(1, 20):
        index.maybe_append(i, BASE + i)
    assert index.entries == index.max_entries - 1
    assert index.is_full
    index.maybe_append(1000, BASE + 1000, skip_full_check=True)
    assert index.entries == index.max_entries
    assert index.last_entry == (1000, BASE + 1000)
    index.maybe_append(2000, BASE + 2000, skip_full_check=True)  # no room left: skipped
    assert index.last_entry == (1000, BASE + 1000)


def test_truncate_to_removes_entries_at_or_above_offset(index: TimeIndex) -> None:
    for i in range(1, 6):
        index.maybe_append(i * 100, BASE + i * 10)
    index.truncate_to(BASE + 30)
    assert index.last_entry == (200, BASE + 20)
    index.truncate_to(BASE + 25)
    assert index.last_entry == (200, BASE + 20)
    index.truncate_to(BASE)
    assert index.entries == 0
    assert index.last_entry == (-1, BASE)


def test_disk_format_is_big_endian_timestamp_then_relative_offset(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000050.timeindex"
    index = TimeIndex(path, BASE, 120)
    index.maybe_append(0x0102030405, BASE + 7)
    index.close()
    assert path.read_bytes() == bytes.fromhex("000000010203040500000007")


def test_sanity_check_detects_untrimmed_zero_tail(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000050.timeindex"
    index = TimeIndex(path, BASE, 120)
    index.maybe_append(1_700_000_000_000, BASE + 1)
    index.close_handler()
    reopened = TimeIndex(path, BASE, 120)
    with pytest.raises(CorruptIndexError, match=re.escape(str(path))):
        reopened.sanity_check()
    reopened.close_handler()

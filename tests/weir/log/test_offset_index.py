"""OffsetIndex: Kafka's .index file (8-byte entries, sparse, binary-searched)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from weir.log.errors import CorruptIndexError
from weir.log.offset_index import OffsetIndex

BASE = 100


@pytest.fixture
def index(new_index) -> OffsetIndex:
    return new_index(OffsetIndex, BASE, 8 * 64)


def fill(index: OffsetIndex) -> None:
    for i in range(1, 11):
        index.append(BASE + i * 10, i * 1000)


def test_new_index_is_preallocated_and_empty(index: OffsetIndex) -> None:
    assert index.entries == 0
    assert index.max_entries == 64
    assert index.path.stat().st_size == 8 * 64


def test_lookup_returns_largest_entry_at_or_below_target(index: OffsetIndex) -> None:
    fill(index)
    assert index.lookup(BASE + 10) == (BASE + 10, 1000)
    assert index.lookup(BASE + 55) == (BASE + 50, 5000)
    assert index.lookup(BASE + 10_000) == (BASE + 100, 10_000)


def test_lookup_below_first_entry_returns_base_offset_and_position_zero(
    index: OffsetIndex,
) -> None:
    assert index.lookup(BASE + 5) == (BASE, 0)
    fill(index)
    assert index.lookup(BASE + 9) == (BASE, 0)
    assert index.lookup(0) == (BASE, 0)


def test_lookup_by_position_returns_largest_entry_at_or_below_position(
    index: OffsetIndex,
) -> None:
    fill(index)
    assert index.lookup_by_position(999) == (BASE, 0)
    assert index.lookup_by_position(3500) == (BASE + 30, 3000)


def test_append_rejects_entries_that_do_not_grow(index: OffsetIndex) -> None:
    index.append(BASE + 10, 1000)
    with pytest.raises(ValueError):
        index.append(BASE + 10, 2000)
    with pytest.raises(ValueError):
        index.append(BASE + 20, 1000)
    with pytest.raises(ValueError):
        index.append(BASE, 5000)  # relative offset 0 is never indexed


def test_append_refuses_when_full(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 16)
    index.append(1, 10)
    index.append(2, 20)
    assert index.is_full
    with pytest.raises(ValueError, match="full"):
        index.append(3, 30)
    index.close()


def test_truncate_to_removes_entries_at_or_above_offset(index: OffsetIndex) -> None:
    fill(index)
    index.truncate_to(BASE + 50)
    assert index.entries == 4
    assert index.last_entry == (BASE + 40, 4000)
    index.truncate_to(BASE + 35)
    assert index.last_entry == (BASE + 30, 3000)
    index.truncate_to(BASE)
    assert index.entries == 0
    index.append(BASE + 7, 700)  # appendable again after truncation
    assert index.lookup(BASE + 8) == (BASE + 7, 700)


def test_close_trims_file_and_reopen_sees_same_entries(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, BASE, 8 * 64)
    fill(index)
    index.close()
    assert path.stat().st_size == 10 * 8
    reopened = OffsetIndex(path, BASE, 8 * 64)
    assert not reopened.newly_created
    assert reopened.entries == 10
    reopened.sanity_check(log_size=20_000)
    assert reopened.lookup(BASE + 73) == (BASE + 70, 7000)
    reopened.close()


def test_disk_format_is_big_endian_relative_offset_then_position(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, BASE, 64)
    index.append(BASE + 3, 0x0102)
    index.close()
    assert path.read_bytes() == b"\x00\x00\x00\x03\x00\x00\x01\x02"


def test_sanity_check_detects_untrimmed_zero_tail_left_by_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, BASE, 8 * 64)
    fill(index)
    index.close_handler()  # crash: the file keeps its preallocated length
    reopened = OffsetIndex(path, BASE, 8 * 64)
    with pytest.raises(CorruptIndexError, match=re.escape(str(path))):
        reopened.sanity_check(log_size=20_000)
    reopened.close_handler()


def test_sanity_check_detects_length_not_a_multiple_of_entry_size(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000100.index"
    path.write_bytes(b"\x00\x00\x00\x03\x00\x00\x01\x02\x00")
    index = OffsetIndex(path, BASE, 64)
    with pytest.raises(CorruptIndexError, match="multiple"):
        index.sanity_check(log_size=1000)
    index.close_handler()


def test_sanity_check_detects_entry_pointing_past_the_log(index: OffsetIndex) -> None:
    fill(index)
    index.trim_to_valid_size()
    with pytest.raises(CorruptIndexError, match="points at byte 10000"):
        index.sanity_check(log_size=5000)


def test_reset_zeroes_the_file(index: OffsetIndex) -> None:
    fill(index)
    index.reset()
    assert index.entries == 0
    assert index.path.read_bytes() == bytes(8 * 64)

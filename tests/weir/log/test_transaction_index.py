"""The .txnindex file: Kafka's 34-byte entries, range collection, truncation, damage."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from weir.log.errors import CorruptIndexError
from weir.log.transaction_index import AbortedTxn, TransactionIndex

BASE = 100


def kafka_entry(pid: int, first: int, last: int, lso: int) -> bytes:
    """Kafka's AbortedTxn buffer: version int16 0, then four int64, big-endian."""
    return (
        (0).to_bytes(2, "big")
        + pid.to_bytes(8, "big")
        + first.to_bytes(8, "big")
        + last.to_bytes(8, "big")
        + lso.to_bytes(8, "big")
    )


@pytest.fixture
def index(tmp_path: Path) -> TransactionIndex:
    return TransactionIndex(tmp_path / f"{BASE:020d}.txnindex", BASE)


def test_entries_are_written_in_kafkas_34_byte_layout(index: TransactionIndex) -> None:
    assert not index.path.exists()  # created by the first entry only
    index.append(AbortedTxn(7, 90, 101, 102))
    index.append(AbortedTxn(2**40, 103, 110, 95))
    assert index.path.read_bytes() == kafka_entry(7, 90, 101, 102) + kafka_entry(
        2**40, 103, 110, 95
    )
    assert len(kafka_entry(0, 0, 0, 0)) == 34


def test_a_reopened_index_reads_the_entries_back(index: TransactionIndex) -> None:
    index.append(AbortedTxn(7, 90, 101, 102))
    index.flush()
    again = TransactionIndex(index.path, BASE)
    assert again.entries == [AbortedTxn(7, 90, 101, 102)]
    again.sanity_check()


def test_entries_must_follow_each_other_and_the_base_offset(index: TransactionIndex) -> None:
    with pytest.raises(ValueError, match="does not follow offset 99"):
        index.append(AbortedTxn(1, 50, 99, 100))
    index.append(AbortedTxn(1, 50, 105, 106))
    with pytest.raises(ValueError, match="ending at offset 105 does not follow offset 105"):
        index.append(AbortedTxn(2, 104, 105, 106))


def test_collect_returns_overlapping_entries_and_stops_at_a_high_enough_lso(
    index: TransactionIndex,
) -> None:
    a = AbortedTxn(1, 90, 101, 95)  # another transaction was open from 95
    b = AbortedTxn(2, 95, 104, 105)
    c = AbortedTxn(3, 106, 108, 109)
    for entry in (a, b, c):
        index.append(entry)
    # [100, 103): a and b overlap; b's LSO (105) proves nothing later overlaps.
    assert index.collect(100, 103) == ([a, b], True)
    # [102, 104): a ended at 101, before the range.
    assert index.collect(102, 104) == ([b], True)
    # [105, 106): nothing overlaps, and b's LSO already is past the range.
    assert index.collect(105, 106) == ([], True)
    # [105, 120): c overlaps; no entry's LSO reaches 120: the caller must look further.
    assert index.collect(105, 120) == ([c], False)
    # The upper bound is exclusive: a transaction starting at it is not in the range.
    assert index.collect(102, 106) == ([b], True)


def test_truncate_to_drops_the_entries_of_markers_at_or_above_the_offset(
    index: TransactionIndex,
) -> None:
    for entry in (AbortedTxn(1, 90, 101, 102), AbortedTxn(2, 95, 104, 105)):
        index.append(entry)
    index.truncate_to(104)
    assert index.entries == [AbortedTxn(1, 90, 101, 102)]
    assert index.path.read_bytes() == kafka_entry(1, 90, 101, 102)
    index.append(AbortedTxn(3, 103, 104, 105))  # the offsets can be written again
    index.reset()
    assert index.entries == [] and index.path.read_bytes() == b""


def test_a_torn_last_entry_is_ignored_by_reads_and_cut_by_the_next_append(
    index: TransactionIndex,
) -> None:
    index.path.write_bytes(kafka_entry(1, 90, 101, 102) + kafka_entry(2, 95, 104, 105)[:20])
    index = TransactionIndex(index.path, BASE)
    assert index.entries == [AbortedTxn(1, 90, 101, 102)]
    index.sanity_check(torn_tail_ok=True)
    with pytest.raises(CorruptIndexError, match="not a whole number of 34-byte entries"):
        index.sanity_check()
    index.append(AbortedTxn(3, 100, 107, 108))
    assert index.path.read_bytes() == kafka_entry(1, 90, 101, 102) + kafka_entry(3, 100, 107, 108)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (struct.pack(">hqqqq", 1, 1, 90, 101, 102), "version 1"),
        (kafka_entry(1, 90, 99, 100), "does not follow offset 99"),
        (kafka_entry(1, 90, 105, 106) + kafka_entry(2, 95, 104, 106), "does not follow"),
        (kafka_entry(1, 103, 102, 106), "does not follow"),
    ],
)
def test_sanity_check_names_the_file_and_the_bad_entry(
    index: TransactionIndex, data: bytes, problem: str
) -> None:
    index.path.write_bytes(data)
    with pytest.raises(CorruptIndexError, match=problem) as exc:
        TransactionIndex(index.path, BASE).sanity_check()
    assert str(index.path) in str(exc.value)


def test_rename_and_delete_move_and_remove_the_file(
    index: TransactionIndex, tmp_path: Path
) -> None:
    index.rename(tmp_path / "elsewhere.txnindex")  # no file yet: only the path moves
    assert index.path == tmp_path / "elsewhere.txnindex"
    index.append(AbortedTxn(1, 90, 101, 102))
    index.rename(tmp_path / "again.txnindex")
    assert index.path.read_bytes() == kafka_entry(1, 90, 101, 102)
    index.delete()
    assert not index.path.exists() and index.entries == []

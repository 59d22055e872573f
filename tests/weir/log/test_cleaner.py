"""The log cleaner: latest record per key at its offset, tombstones, batches, ranges, aborts.

Histories are written through ``Log.append`` with the test encoder (every codec) and read
back through ``Log.read`` and ``weir.protocol.inflate``, as Fetch would serve them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import crc32c
import pytest

from weir.log import (
    CleanAbortedError,
    CleanStats,
    Log,
    LogConfig,
    PreparedClean,
    cleanable_range,
    commit_clean,
    dirty_ratio,
    max_compaction_delay,
    prepare_clean,
)
from weir.protocol.inflate import iter_records
from weir.protocol.records import iter_batches

from .conftest import (
    COMPRESSORS,
    START_MS,
    FakeClock,
    LogFactory,
    append,
    disk_headers,
    make_batch,
    read_headers,
    slice_bytes,
)

CONFIG = LogConfig(segment_bytes=1200, index_interval_bytes=150)
DAY_MS = 86_400_000
# (offset, key, value) as a consumer sees each record.
Row = tuple[int, bytes | None, bytes | None]


def write_history(
    log: Log,
    history: Sequence[tuple[bytes | None, bytes | None]],
    *,
    codec: str = "none",
    batch_size: int = 3,
    clock: FakeClock | None = None,
    **batch_kw: object,
) -> list[Row]:
    """Append ``(key, value)`` records in batches; returns what was written, with offsets."""
    rows: list[Row] = []
    for start in range(0, len(history), batch_size):
        chunk = history[start : start + batch_size]
        now = clock.now if clock is not None else START_MS
        result = append(
            log,
            make_batch(
                [v for _, v in chunk],  # type: ignore[misc]
                keys=[k for k, _ in chunk],
                codec=codec,
                base_timestamp=now,
                **batch_kw,  # type: ignore[arg-type]
            ),
        )
        rows += [(result.base_offset + i, k, v) for i, (k, v) in enumerate(chunk)]
        if clock is not None:
            clock.advance(10)
    return rows


def read_rows(log: Log, start: int | None = None) -> list[Row]:
    """Every record from ``start`` (the log start offset) to the LEO, through Log.read."""
    offset = log.log_start_offset if start is None else start
    data = slice_bytes(log.read(offset, 1 << 30))
    rows = []
    for position, _ in iter_batches(data):
        rows += [(r.offset, r.key, r.value) for r in iter_records(data, position)]
    return rows


def latest_per_key(rows: Iterable[Row]) -> dict[bytes, Row]:
    latest: dict[bytes, Row] = {}
    for row in rows:
        if row[1] is not None:
            latest[row[1]] = row
    return latest


def prepare(
    log: Log,
    *,
    clean_offset: int = 0,
    end_offset: int | None = None,
    now_ms: int = START_MS,
    delete_retention_ms: int = DAY_MS,
    **hooks: Any,
) -> PreparedClean:
    """``prepare_clean`` up to the active segment unless told otherwise; ``hooks`` are its
    ``progress`` and ``on_step``."""
    return prepare_clean(
        log,
        clean_offset=clean_offset,
        end_offset=log.active_segment.base_offset if end_offset is None else end_offset,
        now_ms=now_ms,
        delete_retention_ms=delete_retention_ms,
        **hooks,
    )


def clean(log: Log, **options: Any) -> CleanStats:
    """``prepare`` (same options) and commit at once."""
    return commit_clean(log, prepare(log, **options))


def keyed_history(n: int, keys: int, *, value_size: int = 30) -> list[tuple[bytes, bytes]]:
    return [
        (f"key-{i % keys}".encode(), f"v{i}-".encode().ljust(value_size, b".")) for i in range(n)
    ]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap")))


# -- latest per key ------------------------------------------------------------------------


@pytest.mark.parametrize("codec", sorted(COMPRESSORS))
def test_latest_record_per_key_survives_at_its_original_offset(
    open_log: LogFactory, codec: str
) -> None:
    log = open_log(CONFIG)
    written = write_history(log, keyed_history(120, 7), codec=codec)
    assert len(log.segments) >= 4
    end = log.active_segment.base_offset
    expected = latest_per_key(written)
    stats = clean(log)
    rows = read_rows(log)
    # Below the end: exactly the latest record of each key there (the map covers [0, end)),
    # at its offset, in offset order.
    cleaned_rows = [r for r in rows if r[0] < end]
    assert cleaned_rows == sorted(latest_per_key(r for r in written if r[0] < end).values())
    assert latest_per_key(rows) == expected
    # At and above the end (the active segment) nothing changed.
    assert [r for r in rows if r[0] >= end] == [r for r in written if r[0] >= end]
    assert stats.first_dirty_offset == end
    assert stats.records_read == end
    assert stats.records_kept == len(cleaned_rows)
    assert stats.bytes_after < stats.bytes_before
    # Every batch keeps its codec and a valid CRC; the data survives a clean reopen.
    assert {h.compression for h in disk_headers(log)} == {COMPRESSORS[codec][0]}
    directory = log.directory
    log.close()
    log = open_log(CONFIG)
    assert read_rows(log) == rows
    assert leftovers(directory) == []


def test_keys_are_compared_as_bytes(open_log: LogFactory) -> None:
    """``__consumer_offsets``-style binary keys: non-UTF-8 bytes, NULs, prefixes."""
    log = open_log(CONFIG)
    keys = [b"\x00\x01group\x00", b"\x00\x01group", b"\xff\xfe", b"\x00\x01group\x00\x00"]
    history = [(keys[i % 4], struct.pack(">q", i)) for i in range(60)]
    written = write_history(log, history, batch_size=4)
    end = log.active_segment.base_offset
    clean(log)
    rows = read_rows(log)
    assert latest_per_key(rows) == latest_per_key(written)
    assert [r for r in rows if r[0] < end] == sorted(
        latest_per_key(r for r in written if r[0] < end).values()
    )


def test_records_without_a_key_are_kept(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    history = [(None if i % 5 == 0 else b"k", b"%d" % i) for i in range(60)]
    written = write_history(log, history)
    end = log.active_segment.base_offset
    clean(log)
    rows = read_rows(log)
    assert [r for r in rows if r[1] is None] == [r for r in written if r[1] is None]
    keyed_below = [r for r in written if r[1] == b"k" and r[0] < end]
    assert [r for r in rows if r[1] == b"k" and r[0] < end] == keyed_below[-1:]


def test_read_from_a_removed_offset_returns_the_next_surviving_batch(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    written = write_history(log, keyed_history(90, 4), batch_size=1)
    end = log.active_segment.base_offset
    clean(log)
    surviving = [r[0] for r in read_rows(log)]
    assert len(surviving) < len(written)
    for offset in range(0, end):
        headers = read_headers(log.read(offset, 1))  # min_one_batch: exactly one batch
        assert len(headers) == 1
        assert headers[0].base_offset == min(s for s in surviving if s >= offset)
    # A read capped at an offset that was removed stops before the next batch.
    gap = next(o for o in range(end) if o not in surviving)
    below = [o for o in surviving if o < gap]
    assert [r[0] for r in read_rows_upto(log, gap)] == below


def read_rows_upto(log: Log, max_offset: int) -> list[Row]:
    data = slice_bytes(log.read(log.log_start_offset, 1 << 30, max_offset=max_offset))
    rows = []
    for position, _ in iter_batches(data):
        rows += [(r.offset, r.key, r.value) for r in iter_records(data, position)]
    return rows


def index_entries(log: Log) -> list[tuple[list[tuple[int, int]], list[tuple[int, int]]]]:
    return [
        (
            [s.offset_index.entry(i) for i in range(s.offset_index.entries)],
            [s.time_index.entry(i) for i in range(s.time_index.entries)],
        )
        for s in log.segments
    ]


def test_cleaned_segments_have_the_indexes_a_rebuild_gives(
    open_log: LogFactory, clock: FakeClock
) -> None:
    config = LogConfig(segment_bytes=4000, index_interval_bytes=100)
    log = open_log(config)
    write_history(log, keyed_history(200, 40), clock=clock)
    clean(log, now_ms=clock.now)
    entries = index_entries(log)
    assert any(offsets for offsets, _ in entries[:-1])  # the cleaned segments are indexed
    largest = [s.largest_timestamp for s in log.segments]
    rows = read_rows(log)
    log.close()
    for segment in log.segments:
        segment.offset_index.path.unlink()
        segment.time_index.path.unlink()
    log = open_log(config)  # rebuilds every index from the log
    assert index_entries(log) == entries
    assert [s.largest_timestamp for s in log.segments] == largest
    # Lookups by time land on surviving records, at or after the requested time.
    for offset, _, _ in rows[:: max(1, len(rows) // 15)]:
        stamp = START_MS + (offset // 3) * 10
        found = log.offset_for_timestamp(stamp)
        assert found is not None
        assert found[1] >= stamp
        assert found[0] in {r[0] for r in rows}


# -- tombstones ----------------------------------------------------------------------------


def test_tombstones_stay_for_delete_retention_then_go(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    history = [*keyed_history(40, 4), (b"key-1", None), (b"key-2", None)]
    history += [(f"other-{i}".encode(), b"x" * 40) for i in range(40)]
    written = write_history(log, history)
    end = log.active_segment.base_offset
    tombstones = [r for r in written if r[2] is None]
    assert all(r[0] < end for r in tombstones)
    # First clean: the tombstones are dirty, so they stay whatever their age.
    stats = clean(log, now_ms=START_MS + 10 * DAY_MS, delete_retention_ms=1)
    assert stats.tombstones_removed == 0
    rows = read_rows(log)
    assert [r for r in rows if r[2] is None] == tombstones
    assert not [r for r in rows if r[1] in (b"key-1", b"key-2") and r[2] is not None]
    # Second clean, younger than delete.retention.ms: still there.
    checkpoint = stats.first_dirty_offset
    stats = clean(log, clean_offset=checkpoint, now_ms=START_MS + DAY_MS - 1)
    assert stats.tombstones_removed == 0
    assert [r for r in read_rows(log) if r[2] is None] == tombstones
    # Once the segment's largest timestamp is delete.retention.ms old, they go.
    stats = clean(log, clean_offset=checkpoint, now_ms=START_MS + DAY_MS + 1000)
    assert stats.tombstones_removed == 2
    rows = read_rows(log)
    assert not [r for r in rows if r[1] in (b"key-1", b"key-2")]
    expected = {k: r for k, r in latest_per_key(written).items() if r[2] is not None}
    assert latest_per_key(rows) == expected


# -- batches -------------------------------------------------------------------------------


def test_rewritten_batches_keep_their_header_fields(open_log: LogFactory) -> None:
    config = LogConfig(segment_bytes=1500, message_timestamp_type="LogAppendTime")
    log = open_log(config)
    keys, values = [b"a", b"b", b"a", b"c"], [b"1", b"2", b"3", b"4"]
    for i in range(2):  # offsets 0..3 and 4..7: the second batch supersedes the first
        batch = make_batch(
            values, keys=keys, codec="zstd", producer_id=7, producer_epoch=2, base_sequence=4 * i
        )
        append(log, batch, epoch=3)
    write_history(log, keyed_history(60, 3, value_size=60))  # roll past the first batches
    before = {h.base_offset: h for h in disk_headers(log)}
    clean(log)
    after = {h.base_offset: h for h in disk_headers(log)}  # every batch CRC-checked
    assert 0 not in after  # every record of the first batch was superseded
    old, new = before[4], after[4]
    assert new.records_count == 3  # a@4 went (a@6 is later); b@5, a@6, c@7 stay
    for name in (
        "last_offset_delta",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "partition_leader_epoch",
        "attributes",
        "base_timestamp",
        "max_timestamp",  # LogAppendTime: the append time
    ):
        assert getattr(new, name) == getattr(old, name), name
    assert new.is_log_append_time and new.compression == 4
    assert [r[0] for r in read_rows(log) if r[0] < 8] == [5, 6, 7]


def test_create_time_batches_get_the_max_timestamp_of_their_kept_records(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    stamps = [START_MS + 5, START_MS + 1, START_MS + 9]  # the max is the record that goes
    append(log, make_batch([b"1", b"2", b"3"], keys=[b"a", b"b", b"z"], timestamps=stamps))
    append(log, make_batch([b"4"], keys=[b"z"], timestamps=[START_MS + 20]))
    write_history(log, keyed_history(60, 3, value_size=60))
    clean(log)
    header = disk_headers(log)[0]
    assert (header.base_offset, header.records_count) == (0, 2)
    assert header.base_timestamp == START_MS + 5 and header.max_timestamp == START_MS + 5


def test_batches_that_lose_every_record_are_dropped_and_others_keep_offsets(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    write_history(log, [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")], batch_size=3)
    write_history(log, [(b"a", b"4"), (b"b", b"5")], batch_size=2)
    write_history(log, keyed_history(60, 5, value_size=50))
    clean(log)
    headers = {h.base_offset: h for h in disk_headers(log)}
    assert headers[0].records_count == 1 and headers[0].last_offset_delta == 2  # only c3
    assert [r for r in read_rows(log) if r[0] < 5] == [
        (2, b"c", b"3"),
        (3, b"a", b"4"),
        (4, b"b", b"5"),
    ]
    log.close()
    log2 = Log.open(log.directory, config=CONFIG, time_ms=FakeClock())
    try:
        assert [r for r in read_rows(log2) if r[0] < 5] == [
            (2, b"c", b"3"),
            (3, b"a", b"4"),
            (4, b"b", b"5"),
        ]
    finally:
        log2.close()


def control_batch(base_offset: int, *, producer_id: int = 9) -> bytes:
    """A COMMIT marker as a transaction coordinator writes it (attributes: control, txn)."""
    batch = bytearray(
        make_batch(
            [b"\x00\x00\x00\x00\x00\x00"],
            keys=[b"\x00\x00\x00\x01"],
            producer_id=producer_id,
            producer_epoch=0,
            base_offset=base_offset,
            leader_epoch=0,
        )
    )
    struct.pack_into(">h", batch, 21, 0x30)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_control_batches_are_kept_byte_for_byte(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    marker = control_batch(0)
    log.append_as_follower(bytearray(marker))
    for i in range(40):
        batch = bytearray(make_batch([b"v%d" % i] * 2, keys=[b"k", b"k"], base_offset=1 + 2 * i))
        log.append_as_follower(batch)
    assert len(log.segments) > 2
    clean(log)
    first = log.segments[0]
    assert first.log_path.read_bytes()[: len(marker)] == marker


def test_the_active_segment_and_segments_past_the_end_are_untouched(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    write_history(log, keyed_history(150, 3))
    assert len(log.segments) >= 5
    end = log.segments[2].base_offset + 1  # inside segment 2: only 0 and 1 are cleaned
    untouched = [(s.base_offset, s.log_path.read_bytes()) for s in log.segments[2:]]
    stats = clean(log, end_offset=end)
    assert stats.first_dirty_offset == log.segments[-len(untouched)].base_offset
    assert [(s.base_offset, s.log_path.read_bytes()) for s in log.segments[-len(untouched) :]] == (
        untouched
    )
    assert stats.segments_cleaned == 2


def test_idempotent_producers_continue_after_clean_and_reopen(
    open_log: LogFactory, log_dir: Path
) -> None:
    log = open_log(CONFIG)
    seq = 0
    for i in range(30):
        append(
            log,
            make_batch(
                [b"x" * 40] * 2,
                keys=[b"k%d" % (i % 3)] * 2,
                producer_id=5,
                producer_epoch=0,
                base_sequence=seq,
            ),
        )
        seq += 2
    clean(log)
    log.close()
    # With its snapshots, and without them (state rebuilt from the batches that remain).
    for drop_snapshots in (False, True):
        if drop_snapshots:
            for snapshot in log_dir.glob("*.snapshot"):
                snapshot.unlink()
        log = open_log(CONFIG)
        result = append(
            log,
            make_batch([b"y"], keys=[b"k0"], producer_id=5, producer_epoch=0, base_sequence=seq),
        )
        assert not result.duplicate
        seq += 1
        log.close()


# -- ranges, ratio, aborts, repeated cleans ------------------------------------------------


def test_cleanable_range_and_dirty_ratio(open_log: LogFactory, clock: FakeClock) -> None:
    log = open_log(CONFIG)
    write_history(log, keyed_history(150, 3), clock=clock)
    bases = [s.base_offset for s in log.segments]
    sizes = [s.size for s in log.segments]
    hw = log.log_end_offset
    now = clock.now
    assert cleanable_range(
        log, clean_offset=0, high_watermark=hw, now_ms=now, min_compaction_lag_ms=0
    ) == (0, bases[-1])
    # The high watermark inside segment 3 keeps segment 3 and later out.
    assert cleanable_range(
        log, clean_offset=0, high_watermark=bases[3] + 1, now_ms=now, min_compaction_lag_ms=0
    ) == (0, bases[3])
    # min.compaction.lag.ms: the first segment with a record younger than the lag stops it.
    young = log.segments[2].largest_timestamp
    lag = now - young + 1  # records with timestamps above `young - 1` are too young
    first, end = cleanable_range(
        log, clean_offset=0, high_watermark=hw, now_ms=now, min_compaction_lag_ms=lag
    )
    assert end <= bases[2] and first == 0
    # A checkpoint past the LEO (or below the log) resets to the start of the log.
    assert (
        cleanable_range(
            log, clean_offset=hw + 10, high_watermark=hw, now_ms=now, min_compaction_lag_ms=0
        )[0]
        == 0
    )
    dirty, total, ratio = dirty_ratio(log, clean_offset=bases[2], high_watermark=hw)
    assert total == sum(sizes[:-1])
    assert dirty == sum(sizes[2:-1])
    assert ratio == pytest.approx(dirty / total)
    assert dirty_ratio(log, clean_offset=bases[-1], high_watermark=hw)[0] == 0
    stats = clean(log)
    assert dirty_ratio(log, clean_offset=stats.first_dirty_offset, high_watermark=hw)[0] == 0


def test_max_compaction_delay_is_how_overdue_the_oldest_dirty_segment_is(
    open_log: LogFactory, clock: FakeClock
) -> None:
    """Kafka's ``maxCompactionDelay``: the first batch timestamp of the oldest dirty
    inactive segment against ``now - max.compaction.lag.ms``; the active segment and the
    clean part do not count."""
    log = open_log(CONFIG)
    write_history(log, keyed_history(150, 3), clock=clock)
    segments = log.segments
    first_stamp = [next(s.iter_headers())[1].max_timestamp for s in segments]
    now = clock.now

    def delay(clean_offset: int, lag: int) -> int:
        return max_compaction_delay(
            log, clean_offset=clean_offset, now_ms=now, max_compaction_lag_ms=lag
        )

    assert delay(0, 2**63 - 1) == 0  # the default: never overdue
    assert delay(0, now - first_stamp[0]) == 0  # exactly at the lag: not yet
    assert delay(0, now - first_stamp[0] - 7) == 7
    # Cleaned up to segment 2: its first batch is the oldest dirty one.
    assert delay(segments[2].base_offset, 0) == now - first_stamp[2]
    # Only the active segment is dirty: nothing the cleaner could take is overdue.
    assert delay(segments[-1].base_offset, 0) == 0


def test_commit_aborts_when_retention_deleted_a_captured_segment(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    written = write_history(log, keyed_history(150, 3))
    prepared = prepare(log)
    assert prepared.cleaned_files and all(p.exists() for p in prepared.cleaned_files)
    log.delete_records_before(log.segments[1].base_offset)
    with pytest.raises(CleanAbortedError):
        commit_clean(log, prepared)
    assert leftovers(log.directory) == []
    start = log.log_start_offset
    assert read_rows(log) == [r for r in written if r[0] >= start]


def test_commit_aborts_on_a_closed_log(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    write_history(log, keyed_history(100, 3))
    prepared = prepare(log)
    log.close()
    with pytest.raises(CleanAbortedError):
        commit_clean(log, prepared)
    assert leftovers(log.directory) == []


def test_progress_reaches_one(open_log: LogFactory) -> None:
    log = open_log(CONFIG)
    write_history(log, keyed_history(100, 3))
    seen: list[float] = []
    prepared = prepare(log, progress=seen.append)
    commit_clean(log, prepared)
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_repeated_cleans_merge_small_segments_and_change_nothing_else(
    open_log: LogFactory,
) -> None:
    log = open_log(CONFIG)
    written = write_history(log, keyed_history(200, 3))
    first = clean(log)
    rows = read_rows(log)
    segments = len(log.segments)
    # The first clean emptied most segments; the next one groups them (Kafka's grouping by
    # size is on the sizes before cleaning).
    second = clean(log, clean_offset=first.first_dirty_offset)
    assert len(log.segments) < segments
    assert read_rows(log) == rows
    assert second.segments_cleaned > 1
    third = clean(log, clean_offset=second.first_dirty_offset)
    assert third.segments_cleaned == 0 and read_rows(log) == rows  # already compact
    more = write_history(log, keyed_history(60, 3))
    fourth = clean(log, clean_offset=third.first_dirty_offset)
    assert fourth.first_dirty_offset == log.active_segment.base_offset
    assert latest_per_key(read_rows(log)) == latest_per_key(written + more)
    assert leftovers(log.directory) == []
    final = read_rows(log)
    log.close()
    assert read_rows(open_log(CONFIG)) == final

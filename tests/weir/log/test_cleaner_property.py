"""Property: over random keyed histories the cleaner matches a model of compaction.

Histories draw from a small key space (so keys are overwritten often), with tombstones and
records without a key, in batches of random sizes compressed with every codec, across
several segments (small ``segment.bytes``). Two cleans run: the first over everything
written (its tombstones are dirty, so they stay), the second after more writes, with the
first clean's checkpoint, at a time when tombstones are either still young or long
expired. After each, below the clean's end offset the log holds exactly, in offset order:
the latest record of every key written below that end (at its original offset, with its
value), every record without a key, and the tombstones the rules keep; at and above the end
nothing changed; every batch is CRC-valid and keeps its codec; a reopen reads the same.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weir.log.log import Log, LogConfig

from .conftest import COMPRESSORS, START_MS, FakeClock, disk_headers
from .test_cleaner import DAY_MS, Row, clean, read_rows, write_history

# Examples fsync a lot (every clean, close and roll); on tmpfs that costs nothing, and
# durability is the crash tests' business, not this one's.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None
KEYS = [b"k0", b"k1", b"\x00k2", b"k3\xff", b"k4"]

history = st.lists(
    st.tuples(
        st.sampled_from([*KEYS, None]) | st.sampled_from(KEYS),  # keyless about 1 in 11
        st.one_of(st.binary(min_size=0, max_size=40), st.none()),
    ),
    min_size=1,
    max_size=70,
)


def model(
    rows: list[Row], *, end: int, clean_part_end: int, drop_old_tombstones: bool
) -> list[Row]:
    """The rows a clean of [0, end) leaves below ``end``."""
    below = [r for r in rows if r[0] < end]
    latest: dict[bytes, int] = {}
    for offset, key, _ in below:
        if key is not None:
            latest[key] = offset
    kept = []
    for row in below:
        offset, key, value = row
        if key is None:
            kept.append(row)
        elif latest[key] == offset:
            if value is None and offset < clean_part_end and drop_old_tombstones:
                continue
            kept.append(row)
    return kept


def check(log: Log, written: list[Row], expected_below: list[Row], end: int, codec: int) -> None:
    rows = read_rows(log)
    assert [r for r in rows if r[0] < end] == expected_below
    assert [r for r in rows if r[0] >= end] == [r for r in written if r[0] >= end]
    assert {h.compression for h in disk_headers(log)} <= {codec}


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    codec=st.sampled_from(sorted(COMPRESSORS)),
    segment_bytes=st.sampled_from([250, 400, 700]),
    first=history,
    second=history,
    batch_size=st.integers(min_value=1, max_value=5),
    tombstones_expired=st.booleans(),
)
def test_cleaning_matches_the_model(
    codec: str,
    segment_bytes: int,
    first: list[tuple[bytes | None, bytes | None]],
    second: list[tuple[bytes | None, bytes | None]],
    batch_size: int,
    tombstones_expired: bool,
) -> None:
    config = LogConfig(
        segment_bytes=segment_bytes, index_interval_bytes=100, cleanup_policy=("compact",)
    )
    codec_id = COMPRESSORS[codec][0]
    with tempfile.TemporaryDirectory(dir=SCRATCH) as tmp:
        directory = Path(tmp) / "topic-0"
        log = Log.open(directory, config=config, time_ms=FakeClock())
        try:
            written = write_history(log, first, codec=codec, batch_size=batch_size)
            end1 = log.active_segment.base_offset
            stats = clean(log, now_ms=START_MS + 10 * DAY_MS, delete_retention_ms=1)
            assert stats.first_dirty_offset == end1
            # First clean: everything is dirty, so every latest tombstone stays.
            after_first = model(written, end=end1, clean_part_end=0, drop_old_tombstones=True)
            check(log, written, after_first, end1, codec_id)
            current = read_rows(log)
            more = write_history(log, second, codec=codec, batch_size=batch_size)
            written += more
            current += more
            end2 = log.active_segment.base_offset
            now = START_MS + (10 * DAY_MS if tombstones_expired else 1000)
            stats = clean(log, clean_offset=end1, now_ms=now, delete_retention_ms=DAY_MS)
            assert stats.first_dirty_offset == max(end1, end2)
            after_second = model(
                current, end=end2, clean_part_end=end1, drop_old_tombstones=tombstones_expired
            )
            check(log, written, after_second, end2, codec_id)
            rows = read_rows(log)
            log.close()
            log = Log.open(directory, config=config, time_ms=FakeClock())
            assert read_rows(log) == rows
        finally:
            log.close()

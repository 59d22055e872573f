"""kill -9 in the middle of a clean: ``Log.open`` finds every key's latest record.

A child process opens a prepared partition directory, cleans it and SIGKILLs itself at a
chosen step (the ``on_step`` hook of ``prepare_clean``/``commit_clean``/
``Log.replace_segments``). The test then opens the directory as the broker would after the
crash and checks: no ``.cleaned``/``.swap`` file is left, every batch is whole and
CRC-valid, every record is one that was written (same offset, key, value), the compacted
view (latest record per key, tombstones deleting) is the one before the clean, and a clean
run to the end gives exactly what a clean without a crash gives.

Run as ``python -m tests.weir.log.test_cleaner_crash DIR STEP N`` it is that child.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from weir.log.cleaner import commit_clean
from weir.log.log import Log, LogConfig

from .conftest import START_MS, FakeClock, disk_headers
from .test_cleaner import DAY_MS, Row, leftovers, prepare, read_rows, write_history

CONFIG = LogConfig(segment_bytes=1200, index_interval_bytes=150)
# Far past every record: tombstones in the clean part are removed, whatever segment
# grouping does to their segments' largest timestamps.
NOW_MS = START_MS + 30 * DAY_MS
REPO = Path(__file__).resolve().parents[3]
EXIT_NOT_KILLED = 3


def compacted_view(rows: list[Row]) -> dict[bytes, Row]:
    """What a consumer of the whole log ends up with: latest per key, tombstones delete."""
    view: dict[bytes, Row] = {}
    for row in rows:
        if row[1] is None:
            continue
        if row[2] is None:
            view.pop(row[1], None)
        else:
            view[row[1]] = row
    return view


def build(directory: Path) -> int:
    """A partition whose next clean replaces groups of several non-empty segments (the first
    clean leaves a third of every segment: a third of the keys are written once); returns
    the cleaner checkpoint."""
    log = Log.open(directory, config=CONFIG, time_ms=FakeClock())
    history: list[tuple[bytes, bytes | None]] = [
        (b"u-%d" % i if i % 3 == 0 else b"hot-%d" % (i % 5), b"first-%d" % i + b"." * 30)
        for i in range(160)
    ]
    history += [(b"u-%d" % i, None) for i in range(3, 160, 30)]
    write_history(log, history, batch_size=6)
    first = prepare(log)
    checkpoint = commit_clean(log, first).first_dirty_offset
    # Dirty part: overwrite some once-written keys all over the clean part, delete others,
    # add new keys.
    history = [(b"u-%d" % i, b"second-%d" % i) for i in range(0, 160, 9)]
    history += [(b"u-%d" % i, None) for i in range(6, 160, 21)]
    history += [(b"new-%d" % k, b"n" * 30) for k in range(40)]
    write_history(log, history)
    log.close()
    return checkpoint


def clean_in_child(directory: Path, checkpoint: int, step: str, occurrence: int) -> int:
    """Run the child; returns its exit status (negative: killed by that signal)."""
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.weir.log.test_cleaner_crash",
            str(directory),
            str(checkpoint),
            step,
            str(occurrence),
        ],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert child.returncode in (-signal.SIGKILL, EXIT_NOT_KILLED), child.stderr.decode()
    return child.returncode


def clean_to_the_end(directory: Path, checkpoint: int) -> list[Row]:
    log = Log.open(directory, config=CONFIG, time_ms=FakeClock(NOW_MS))
    try:
        prepared = prepare(log, clean_offset=checkpoint, now_ms=NOW_MS)
        commit_clean(log, prepared)
        return read_rows(log)
    finally:
        log.close()


@pytest.fixture(scope="module")
def prepared_partition(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, list[Row]]:
    directory = tmp_path_factory.mktemp("crash") / "orders-0"
    checkpoint = build(directory)
    log = Log.open(directory, config=CONFIG, time_ms=FakeClock())
    rows = read_rows(log)
    log.close()
    return directory, checkpoint, rows


@pytest.fixture(scope="module")
def reference(
    prepared_partition: tuple[Path, int, list[Row]], tmp_path_factory: pytest.TempPathFactory
) -> list[Row]:
    """The partition cleaned without a crash."""
    source, checkpoint, _ = prepared_partition
    directory = tmp_path_factory.mktemp("reference") / "orders-0"
    shutil.copytree(source, directory)
    return clean_to_the_end(directory, checkpoint)


@pytest.mark.parametrize(
    ("step", "occurrence"),
    [
        ("cleaned-written", 1),
        ("swap-renamed", 1),
        ("old-segment-deleted", 1),
        ("old-segment-deleted", 2),
        ("swap-completed", 1),
        ("swap-renamed", 2),
        ("old-segment-deleted", 4),
        ("swap-completed", 2),
    ],
)
def test_a_crash_mid_clean_loses_no_latest_value(
    prepared_partition: tuple[Path, int, list[Row]],
    reference: list[Row],
    tmp_path: Path,
    step: str,
    occurrence: int,
) -> None:
    source, checkpoint, before = prepared_partition
    directory = tmp_path / "orders-0"
    shutil.copytree(source, directory)
    assert clean_in_child(directory, checkpoint, step, occurrence) == -signal.SIGKILL
    log = Log.open(directory, config=CONFIG, time_ms=FakeClock(NOW_MS))
    try:
        assert leftovers(directory) == []
        disk_headers(log)  # every batch whole and CRC-valid
        rows = read_rows(log)
        assert set(rows) <= set(before)  # nothing invented, nothing moved
        assert compacted_view(rows) == compacted_view(before)
        assert log.log_end_offset == before[-1][0] + 1
    finally:
        log.close()
    assert clean_to_the_end(directory, checkpoint) == reference


def test_the_reference_clean_did_remove_records_and_tombstones(
    prepared_partition: tuple[Path, int, list[Row]], reference: list[Row]
) -> None:
    """Guards the crash test: its clean drops superseded records and expired tombstones."""
    _, _, before = prepared_partition
    assert len(reference) < len(before)
    assert compacted_view(reference) == compacted_view(before)
    tombstones_before = [r for r in before if r[2] is None]
    assert [r for r in reference if r[2] is None] != tombstones_before


def test_the_child_completes_without_a_crash_point(
    prepared_partition: tuple[Path, int, list[Row]], reference: list[Row], tmp_path: Path
) -> None:
    source, checkpoint, _ = prepared_partition
    directory = tmp_path / "orders-0"
    shutil.copytree(source, directory)
    assert clean_in_child(directory, checkpoint, "never", 1) == EXIT_NOT_KILLED
    log = Log.open(directory, config=CONFIG, time_ms=FakeClock(NOW_MS))
    try:
        assert read_rows(log) == reference
    finally:
        log.close()


def _child(directory: Path, checkpoint: int, step: str, occurrence: int) -> None:
    seen = 0

    def hook(name: str) -> None:
        nonlocal seen
        if name == step:
            seen += 1
            if seen == occurrence:
                os.kill(os.getpid(), signal.SIGKILL)

    log = Log.open(directory, config=CONFIG, time_ms=FakeClock(NOW_MS))
    prepared = prepare(log, clean_offset=checkpoint, now_ms=NOW_MS, on_step=hook)
    commit_clean(log, prepared, on_step=hook)
    log.close()
    sys.exit(EXIT_NOT_KILLED)


if __name__ == "__main__":
    _child(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))

"""Full and failing disks, and corrupt bytes found on read: the log's side (issue 16).

The errors are real, made by the test: a small tmpfs that fills up (ENOSPC; mounting needs
root, which the suite has; without it those tests fail saying so) and ``RLIMIT_FSIZE`` on
this process (EFBIG; CPython ignores SIGXFSZ, so the write fails instead of killing the
process, and lowering the soft limit needs no privilege). What must hold: a failed append
raises KafkaStorageError, leaves whole batches only (nothing of the failed write), keeps the
log's offsets, and a reopen finds every appended record; nothing invalid is ever served.
"""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from weir.log.errors import KafkaStorageError
from weir.log.log import Log, LogConfig
from weir.log.offset_index import OffsetIndex

from .conftest import FakeClock, append, corrupt_batch_at, disk_headers, make_batch, read_headers

SMALL_INDEX = LogConfig(segment_index_bytes=4096, index_interval_bytes=0)


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, unmounted afterwards.

    A real full disk needs a real small filesystem, and mounting one needs root
    (CAP_SYS_ADMIN), as the suite has on its machines (docs/testing.md). Where it cannot, the
    test fails saying so rather than skipping: a full disk is not something to stop proving.
    """
    mount_point = tmp_path / f"tmpfs-{uuid.uuid4().hex[:8]}"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            "the full-disk tests mount a 256 KiB tmpfs and need root (CAP_SYS_ADMIN): "
            f"mount said {done.stderr.decode().strip()!r}"
        )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def grow(mount_point: Path, size: str) -> None:
    """Space returns: the tmpfs is resized."""
    subprocess.run(
        ["mount", "-o", f"remount,size={size}", str(mount_point)], check=True, capture_output=True
    )


def fill_until_full(log: Log, value_size: int) -> int:
    """Append one-record batches until the disk refuses; the number appended."""
    appended = 0
    while True:
        try:
            append(log, make_batch(count=1, value_size=value_size))
        except KafkaStorageError:
            return appended
        appended += 1
        assert appended < 100_000, "the disk never filled"


def test_an_append_to_a_full_disk_fails_whole_and_the_log_reopens_with_every_record(
    tiny_fs: Path, clock: FakeClock
) -> None:
    directory = tiny_fs / "orders-0"
    log = Log.open(directory, config=SMALL_INDEX, time_ms=clock)
    appended = fill_until_full(log, value_size=1000)
    assert appended > 0 and log.log_end_offset == appended
    # Nothing of the failed batch is in the file, and the offsets were not moved.
    assert [h.base_offset for h in disk_headers(log)] == list(range(appended))
    with pytest.raises(KafkaStorageError, match="No space left on device"):
        append(log, make_batch(count=1, value_size=1000))
    assert log.log_end_offset == appended
    # What was appended is served, whole and valid.
    assert len(read_headers(log.read(0, 1 << 20))) == appended
    log.close_handlers()  # as the replica manager leaves a failed log: no clean shutdown
    grow(tiny_fs, "2m")
    reopened = Log.open(directory, config=SMALL_INDEX, time_ms=clock)
    try:
        assert reopened.log_end_offset == appended
        append(reopened, make_batch(count=1, value_size=1000))
        assert [h.base_offset for h in disk_headers(reopened)] == list(range(appended + 1))
    finally:
        reopened.close()


def test_an_index_entry_on_a_full_disk_is_an_error_not_a_sigbus(
    tiny_fs: Path, tmp_path: Path
) -> None:
    """The index file is sparse and mapped: a store into a page the full disk cannot back
    would kill the process with SIGBUS. The page is reserved first, so it is an OSError."""
    index = OffsetIndex(tiny_fs / "00000000000000000000.index", 0, 64 * 1024)
    filler = tiny_fs / "filler"
    with filler.open("wb", buffering=0) as f, pytest.raises(OSError) as full:
        while True:
            f.write(b"x" * 4096)
    assert full.value.errno == errno.ENOSPC
    with pytest.raises(OSError) as refused:
        for n in range(1, 1000):
            index.append(n, n * 100)
    assert refused.value.errno == errno.ENOSPC
    filler.unlink()
    index.append(index.last_entry[0] + 1, index.last_entry[1] + 100)
    index.close()


@pytest.fixture
def file_size_limit() -> Iterator[None]:
    """Lower this process's RLIMIT_FSIZE (``set`` it) and put it back afterwards."""
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN  # CPython's default
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    yield
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_write_cut_short_by_the_file_size_limit_is_undone(
    open_log, file_size_limit: None
) -> None:
    """EFBIG after a short write (the limit falls inside the batch): the partial batch is
    cut off again and the next reader sees whole batches only."""
    log = open_log(SMALL_INDEX)
    append(log, make_batch(count=3, value_size=500))
    size = log.active_segment.size
    soft = size + 700  # the next 3 x 500-byte batch crosses it
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    with pytest.raises(KafkaStorageError, match="File too large"):
        append(log, make_batch(count=3, value_size=500))
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    assert os.path.getsize(log.active_segment.log_path) == size == log.active_segment.size
    assert log.log_end_offset == 3
    assert [h.base_offset for h in disk_headers(log)] == [0]


def test_a_roll_that_cannot_create_its_files_fails_the_append_and_keeps_the_log(
    open_log, file_size_limit: None
) -> None:
    """Creating the rolled segment's preallocated index is refused (EFBIG past the limit):
    the append fails as a storage error with nothing written and no offset moved."""
    log = open_log(LogConfig(segment_bytes=2000, segment_index_bytes=1 << 20))
    append(log, make_batch(count=3, value_size=500))
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))
    with pytest.raises(KafkaStorageError, match="File too large"):
        append(log, make_batch(count=3, value_size=500))
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    assert log.log_end_offset == 3
    assert [h.base_offset for h in disk_headers(log)] == [0]


# -- corrupt bytes found on read -----------------------------------------------------------------
def test_a_corrupt_batch_in_a_cold_segment_is_never_served(open_log) -> None:
    """Written, closed cleanly, then damaged where the start-up tail check does not look
    (below the last index entry): the first read that reaches it raises instead of
    serving it; reads of the valid batches after it still work."""
    config = LogConfig(index_interval_bytes=100)
    log = open_log(config)
    for _ in range(10):
        append(log, make_batch(count=2, value_size=200))
    positions = [p for p, _ in log.active_segment.iter_headers()]
    log_path = log.active_segment.log_path
    log.close()
    corrupt_batch_at(log_path, positions[2])
    reopened = open_log(config)
    assert reopened.log_end_offset == 20  # the loader did not look there
    assert len(read_headers(reopened.read(0, positions[2]))) == 2
    with pytest.raises(KafkaStorageError, match="failed its CRC-32C check; not served"):
        reopened.read(0, 1 << 20)
    with pytest.raises(KafkaStorageError, match=f"position {positions[2]}"):
        reopened.read(4, 1 << 20)
    after = read_headers(reopened.read(6, 1 << 20))
    assert [h.base_offset for h in after] == list(range(6, 20, 2))


def test_what_this_process_appended_is_served_without_a_second_check(open_log) -> None:
    """Appends were validated when produced: reading them back needs no CRC pass, and a
    truncation makes the bytes written after it this process's own again."""
    log = open_log()
    for _ in range(5):
        append(log, make_batch(count=1, value_size=100))
    segment = log.active_segment
    assert segment._written_from == 0
    assert len(read_headers(log.read(0, 1 << 20))) == 5
    assert segment._verified == []
    log.truncate_to(3)
    append(log, make_batch(count=1, value_size=100))
    assert [h.base_offset for h in read_headers(log.read(0, 1 << 20))] == [0, 1, 2, 3]

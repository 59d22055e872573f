"""Log.open over damaged files beyond a torn tail (issue 16): each kind is repaired with one
warning line naming the partition or file, or refused (KafkaStorageError, so the replica
manager takes only this partition offline) when repairing would serve a hole.

Real files in a temporary directory; the damage is done to them by hand between a close and
the next open, as a disk or an operator would.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest

from weir.log.errors import KafkaStorageError
from weir.log.loader import CLEAN_SHUTDOWN_FILE
from weir.log.log import Log, LogConfig
from weir.protocol.records import iter_batches

from .conftest import LogFactory, append, disk_headers, idempotent_batch, make_batch

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=200)
PID = 7


def fill(log: Log, batches: int = 30) -> None:
    """Batches of 1-3 records over three leader epochs (0, 1, 2), several segments."""
    for i in range(batches):
        append(log, make_batch(count=1 + i % 3, value_size=40 + i * 3), epoch=i // 10)


def loader_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("weir.log") and r.levelno >= logging.WARNING
    ]


def filled_and_closed(open_log: LogFactory) -> Log:
    log = open_log(CONFIG)
    fill(log)
    assert len(log.segments) >= 4
    log.close()
    return log


# -- leader-epoch checkpoint ----------------------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "garbage", "backwards"])
def test_lost_leader_epoch_checkpoint_is_rebuilt_from_the_batches(
    open_log: LogFactory, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    log = filled_and_closed(open_log)
    expected = log.leader_epoch_cache.entries
    assert [e.epoch for e in expected] == [0, 1, 2]
    path = log.leader_epoch_cache.path
    if damage == "missing":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"\x00\xff not a checkpoint")
    else:
        path.write_text("0\n2\n5 100\n3 200\n")
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    assert log.leader_epoch_cache.entries == expected
    (line,) = loader_lines(caplog)
    assert str(path) in line and "rebuilt" in line and "3 entries" in line
    # Rewritten on disk, so the next start has nothing to repair.
    log.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert open_log(CONFIG).leader_epoch_cache.entries == expected
    assert loader_lines(caplog) == []


def test_new_empty_log_without_epoch_checkpoint_is_not_a_repair(
    open_log: LogFactory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        open_log(CONFIG).close()
        open_log(CONFIG)
    assert loader_lines(caplog) == []


# -- indexes --------------------------------------------------------------------------------


def test_many_damaged_indexes_are_rebuilt_with_one_line(
    open_log: LogFactory, caplog: pytest.LogCaptureFixture
) -> None:
    log = filled_and_closed(open_log)
    entries = [
        [s.offset_index.entry(i) for i in range(s.offset_index.entries)] for s in log.segments
    ]
    segments = log.segments
    segments[0].offset_index.path.unlink()
    segments[1].time_index.path.unlink()
    with open(segments[2].offset_index.path, "ab") as f:
        f.write(b"\x01")  # not a whole entry
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    (line,) = loader_lines(caplog)
    assert str(log.directory) in line and "rebuilt the indexes of 3 segment(s)" in line
    assert segments[0].log_path.name in line
    assert [
        [s.offset_index.entry(i) for i in range(s.offset_index.entries)] for s in log.segments
    ] == entries


@pytest.mark.parametrize("where", ["below the base", "past the end"])
def test_time_index_naming_an_offset_outside_its_segment_is_rebuilt(
    open_log: LogFactory, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    log = filled_and_closed(open_log)
    segment = log.segments[1]
    largest = [s.largest_timestamp for s in log.segments]
    timestamp, _ = segment.time_index.last_entry
    relative = -5 if where == "below the base" else 10_000
    segment.time_index.path.write_bytes(struct.pack(">qi", timestamp, relative))
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    (line,) = loader_lines(caplog)
    assert segment.log_path.name in line and "time index" in line
    assert [s.largest_timestamp for s in log.segments] == largest
    assert log.segments[1].time_index.last_entry[1] < log.segments[2].base_offset


# -- a missing segment ----------------------------------------------------------------------


def remove_segment(log: Log, index: int) -> tuple[int, int]:
    """Delete one segment's three files; returns (its base offset, the next base offset)."""
    segment = log.segments[index]
    for path in (segment.log_path, segment.offset_index.path, segment.time_index.path):
        path.unlink()
    return segment.base_offset, log.segments[index + 1].base_offset


@pytest.mark.parametrize("clean", [True, False])
def test_missing_middle_segment_refuses_to_open(open_log: LogFactory, clean: bool) -> None:
    log = filled_and_closed(open_log)
    first, after = remove_segment(log, 1)
    if not clean:
        (log.directory / CLEAN_SHUTDOWN_FILE).unlink()
    with pytest.raises(KafkaStorageError) as raised:
        open_log(CONFIG, recovery_point=0)
    message = str(raised.value)
    assert f"offsets {first} to {after - 1} are missing" in message
    assert f"{after:020d}.log" in message and "delete the partition directory" in message
    # Nothing was served or rewritten: the same refusal on the next start.
    with pytest.raises(KafkaStorageError):
        open_log(CONFIG, recovery_point=0)


def test_segment_gap_of_a_compacted_topic_is_normal(open_log: LogFactory) -> None:
    compacted = LogConfig(
        segment_bytes=2000, index_interval_bytes=200, cleanup_policy=("compact", "delete")
    )
    log = open_log(compacted)
    fill(log)
    log.close()
    first, _ = remove_segment(log, 1)  # what a cleaner that dropped it all leaves
    log = open_log(compacted)
    assert first not in [s.base_offset for s in log.segments]
    assert log.read(first, 100)  # reads skip to the next offset, as after compaction


def test_segment_gap_in_a_log_that_shows_compaction_is_accepted(
    open_log: LogFactory, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A topic compacted before its policy became ``delete``: offsets skipped inside a
    segment tell the loader that a gap between segments is the cleaner's, not a lost file."""
    log_dir.mkdir(parents=True)
    # Offsets 1-4 and 6-9 were compacted away; 10 starts the next segment.
    (log_dir / f"{0:020d}.log").write_bytes(
        make_batch(base_offset=0, leader_epoch=0) + make_batch(base_offset=5, leader_epoch=0)
    )
    (log_dir / f"{10:020d}.log").write_bytes(make_batch(base_offset=10, leader_epoch=0))
    with caplog.at_level(logging.INFO, logger="weir.log.loader"):
        log = open_log(CONFIG)
    assert [s.base_offset for s in log.segments] == [0, 10]
    assert [h.base_offset for h in disk_headers(log)] == [0, 5, 10]
    assert log.log_end_offset == 11
    assert any("not a lost file" in r.getMessage() for r in caplog.records)


# -- producer snapshots ---------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty"])
def test_damaged_producer_snapshot_is_dropped_and_the_state_replayed(
    open_log: LogFactory, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    log = open_log(CONFIG)
    for seq in range(0, 6, 2):
        append(log, idempotent_batch(PID, 0, seq, count=2))
    log.close()
    (snapshot,) = log.directory.glob("*.snapshot")
    data = snapshot.read_bytes()
    if damage == "truncated":
        snapshot.write_bytes(data[: len(data) - 9])
    elif damage == "flipped":
        snapshot.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    else:
        snapshot.write_bytes(b"")
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    (line,) = loader_lines(caplog)
    assert str(snapshot) in line
    # Rebuilt from the batches: a retry of the last batch is still a duplicate, a gap is not
    # accepted, the next sequence is.
    retry = append(log, idempotent_batch(PID, 0, 4, count=2))
    assert retry.duplicate and (retry.base_offset, retry.last_offset) == (4, 5)
    assert append(log, idempotent_batch(PID, 0, 6)).base_offset == 6


# -- leftovers of interrupted deletes and compactions ---------------------------------------


def test_leftovers_of_interrupted_operations_are_reported_in_one_line(
    open_log: LogFactory, caplog: pytest.LogCaptureFixture
) -> None:
    log = filled_and_closed(open_log)
    directory = log.directory
    first, second = log.segments[0], log.segments[1]
    (directory / f"{first.base_offset:020d}.log.deleted").write_bytes(b"old")
    (directory / f"{first.base_offset:020d}.log.cleaned").write_bytes(b"half")
    swap = directory / f"{first.base_offset:020d}.log.swap"
    swap.write_bytes(first.log_path.read_bytes() + second.log_path.read_bytes())
    end = log.log_end_offset
    with caplog.at_level(logging.WARNING):
        log = open_log(CONFIG)
    (line,) = loader_lines(caplog)
    assert str(directory) in line and ".log.deleted" in line and ".log.cleaned" in line
    assert f"completed swap {swap.name}" in line and second.log_path.name in line
    assert log.log_end_offset == end
    assert not list(directory.glob("*.swap")) and not list(directory.glob("*.cleaned"))


# -- the recovery-point checkpoint could not be read ----------------------------------------


def test_assume_unclean_crc_scans_a_cleanly_closed_log(open_log: LogFactory) -> None:
    log = filled_and_closed(open_log)
    victim = log.segments[1]
    data = bytearray(victim.log_path.read_bytes())
    position, header = list(iter_batches(data))[1]
    data[position + 70] ^= 0xFF  # inside the CRC'd records, below the last index entry
    victim.log_path.write_bytes(bytes(data))
    log = open_log(CONFIG, recovery_point=0, assume_unclean=True)
    assert log.log_end_offset == header.base_offset
    assert len(log.segments) == 2
    disk_headers(log)
    assert log.leader_epoch_cache.entries[-1].start_offset < log.log_end_offset

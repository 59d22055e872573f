"""LeaderEpochCache: Kafka's leader-epoch-checkpoint and KIP-101 end offsets."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir.log.errors import CheckpointError
from weir.log.leader_epoch import EpochEntry, LeaderEpochCache

from .conftest import LogFactory, append, make_batch


@pytest.fixture
def cache(tmp_path: Path) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path)
    cache.assign(1, 0)
    cache.assign(3, 10)
    cache.assign(4, 25)
    return cache


def test_assign_is_persisted_in_kafkas_checkpoint_format(cache: LeaderEpochCache) -> None:
    assert cache.path.name == "leader-epoch-checkpoint"
    assert cache.path.read_text() == "0\n3\n1 0\n3 10\n4 25\n"
    assert LeaderEpochCache(cache.path.parent).entries == cache.entries


def test_assign_ignores_a_known_epoch_at_a_later_offset(cache: LeaderEpochCache) -> None:
    cache.assign(4, 30)
    assert cache.latest_entry == EpochEntry(4, 25)


def test_assign_removes_entries_that_would_break_monotonicity(cache: LeaderEpochCache) -> None:
    cache.assign(5, 12)  # starts below epoch 4's start: epoch 4 is gone
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 12))
    cache.assign(2, 30)  # a lower epoch at a higher offset replaces every later epoch
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(2, 30))


def test_end_offset_for_the_latest_epoch_is_the_log_end_offset(cache: LeaderEpochCache) -> None:
    assert cache.end_offset_for(4, 40) == (4, 40)


def test_end_offset_for_an_older_epoch_is_the_next_epochs_start(cache: LeaderEpochCache) -> None:
    assert cache.end_offset_for(1, 40) == (1, 10)
    assert cache.end_offset_for(3, 40) == (3, 25)


def test_end_offset_for_an_unknown_middle_epoch_uses_the_epoch_below(
    cache: LeaderEpochCache,
) -> None:
    assert cache.end_offset_for(2, 40) == (1, 10)


def test_end_offset_for_an_epoch_below_all_is_the_first_start(cache: LeaderEpochCache) -> None:
    assert cache.end_offset_for(0, 40) == (0, 0)


def test_end_offset_for_undefined_or_future_epochs_is_undefined(
    cache: LeaderEpochCache, tmp_path: Path
) -> None:
    assert cache.end_offset_for(-1, 40) == (-1, -1)
    assert cache.end_offset_for(9, 40) == (-1, -1)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert LeaderEpochCache(empty).end_offset_for(1, 0) == (-1, -1)


def test_truncate_from_end_drops_epochs_starting_at_or_after_offset(
    cache: LeaderEpochCache,
) -> None:
    cache.truncate_from_end(25)
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10))
    cache.truncate_from_end(11)
    assert cache.latest_entry == EpochEntry(3, 10)
    assert LeaderEpochCache(cache.path.parent).entries == cache.entries


def test_truncate_from_start_moves_the_epoch_in_force_to_the_new_start(
    cache: LeaderEpochCache,
) -> None:
    cache.truncate_from_start(12)
    assert cache.entries == (EpochEntry(3, 12), EpochEntry(4, 25))
    cache.truncate_from_start(5)  # below the first entry: nothing to do
    assert cache.entries == (EpochEntry(3, 12), EpochEntry(4, 25))


def test_epoch_for_offset(cache: LeaderEpochCache) -> None:
    assert [cache.epoch_for_offset(o) for o in (0, 9, 10, 24, 25, 99)] == [1, 1, 3, 3, 4, 4]


def test_garbage_checkpoint_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n1\nfour 25\n")
    with pytest.raises(CheckpointError, match="leader-epoch-checkpoint"):
        LeaderEpochCache(tmp_path)


def test_log_rebuilds_a_garbage_checkpoint_from_the_batches(open_log: LogFactory) -> None:
    log = open_log()
    append(log, make_batch(count=2), epoch=2)
    append(log, make_batch(count=2), epoch=5)
    log.close()
    log.leader_epoch_cache.path.write_text("not a checkpoint")
    log = open_log()
    assert log.leader_epoch_cache.entries == (EpochEntry(2, 0), EpochEntry(5, 2))


def test_recovery_drops_epochs_beyond_the_recovered_log_end(open_log: LogFactory) -> None:
    log = open_log()
    append(log, make_batch(count=2), epoch=2)
    append(log, make_batch(count=2), epoch=5)
    log.close_handlers()
    segment = log.segments[0].log_path
    data = segment.read_bytes()
    segment.write_bytes(data[: len(data) - 10])  # the epoch-5 batch is torn
    log = open_log()
    assert log.log_end_offset == 2
    assert log.leader_epoch_cache.entries == (EpochEntry(2, 0),)

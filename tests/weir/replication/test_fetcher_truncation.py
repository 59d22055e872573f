"""Where a follower cuts its log after OffsetForLeaderEpoch (KIP-101 and KIP-279)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.weir.log.conftest import FakeClock, append, make_batch
from weir.log.log import Log, LogConfig
from weir.partition import Partition
from weir.replication.fetcher import _truncation_point, truncate_by_epoch


@pytest.fixture
def follower(tmp_path: Path) -> Iterator[Partition]:
    log = Log.open(tmp_path / "t-0", config=LogConfig(), time_ms=FakeClock())
    partition = Partition(broker_id=2, topic="t", index=0, topic_id="x", log=log)
    yield partition
    log.close()


def write(partition: Partition, epoch: int, records: int) -> None:
    for _ in range(records):
        append(partition.log, make_batch(count=1), epoch=epoch)


def test_same_epoch_cuts_at_the_smaller_end(follower: Partition) -> None:
    write(follower, 1, 10)
    # The leader ended epoch 1 at 7: our records 7..9 were never replicated there.
    assert _truncation_point(follower, 1, 7) == (7, True)
    # The leader has more of epoch 1 than we do: nothing to cut.
    assert _truncation_point(follower, 1, 15) == (10, True)


def test_leader_without_our_epoch_cuts_where_we_ended_its_epoch_then_asks_again(
    follower: Partition,
) -> None:
    # We wrote epoch 1 to offset 5, then epochs 3 (offsets 5..7) and 5 (8..9) as a leader
    # the rest of the cluster never heard from; the new leader's history is epoch 1 then 4.
    write(follower, 1, 5)
    write(follower, 3, 3)
    write(follower, 5, 2)
    # We asked about epoch 5; the leader's largest epoch <= 5 is 4, ending at 12. We never
    # had epoch 4: cut at the end of our largest epoch below it (3 ends at 8) and ask again.
    assert _truncation_point(follower, 4, 12) == (8, False)
    follower.truncate_to(8)
    assert follower.log.leader_epoch_cache.latest_epoch == 3
    # Asked about epoch 3 now, the leader answers epoch 1 ending at 5: cut there, done.
    assert _truncation_point(follower, 1, 5) == (5, True)


def test_unknown_epoch_falls_back_to_the_high_watermark(follower: Partition) -> None:
    write(follower, 2, 6)
    follower.append_as_follower(b"", 4)
    assert _truncation_point(follower, -1, -1) == (4, True)


def test_follower_without_epochs_keeps_its_log(follower: Partition) -> None:
    assert _truncation_point(follower, 3, 0) == (0, True)


def test_epochs_started_at_our_end_are_dropped_so_the_next_round_progresses(
    follower: Partition,
) -> None:
    write(follower, 1, 5)
    # Elected for epoch 5 but wrote nothing in it before losing leadership.
    follower.log.leader_epoch_cache.assign(5, 5)
    assert truncate_by_epoch(follower, 3, 9, leader_id=1) is False
    assert follower.log_end_offset == 5
    assert follower.log.leader_epoch_cache.latest_epoch == 1
    # Asked about epoch 1, the leader says it ended at 5: nothing of ours diverged.
    assert truncate_by_epoch(follower, 1, 5, leader_id=1) is True
    assert follower.log_end_offset == 5

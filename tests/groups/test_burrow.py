"""Burrow's rules, driven by a fake clock over crafted commit windows (pure; no cluster)."""

from __future__ import annotations

import pytest

from groups.burrow import (
    Commit,
    GroupStatus,
    PartitionStatus,
    Window,
    evaluate_group,
    evaluate_partition,
)

T0 = 1_700_000_000_000


def commits(*rows: tuple[int, int]) -> list[Commit]:
    """(offset, lag) pairs, one commit every 10 s from T0."""
    return [Commit(offset, lag, T0 + i * 10_000) for i, (offset, lag) in enumerate(rows)]


def status(window: list[Commit], *, lag: int, now: int) -> PartitionStatus:
    return evaluate_partition(window, current_lag=lag, now_ms=now, window_size=5).status


# (window of (offset, lag) commits 10 s apart, current lag, now - T0 in ms) -> status.
STATUS_CASES = {
    "caught_up_consumer_is_ok_whatever_its_history": (
        [(10, 5), (10, 5), (10, 5), (10, 5), (10, 5)],
        0,
        10**9,
        PartitionStatus.OK,
    ),
    "any_zero_lag_in_window_is_ok": (
        [(10, 5), (20, 0), (30, 5), (40, 9), (50, 12)],
        12,
        41_000,
        PartitionStatus.OK,
    ),
    "lag_never_dropping_while_offsets_advance_is_warn": (
        [(10, 5), (20, 8), (30, 8), (40, 12), (50, 20)],
        20,
        41_000,
        PartitionStatus.WARN,
    ),
    "lag_dropping_once_is_ok": (
        [(10, 5), (20, 8), (30, 4), (40, 12), (50, 20)],
        20,
        41_000,
        PartitionStatus.OK,
    ),
    "commits_of_the_same_offset_with_lag_is_stall": (
        [(10, 5), (10, 7), (10, 9), (10, 9), (10, 11)],
        11,
        41_000,
        PartitionStatus.STALL,
    ),
    "offset_going_backwards_is_rewind": (
        [(10, 5), (20, 5), (5, 30), (15, 25), (25, 20)],
        20,
        41_000,
        PartitionStatus.REWIND,
    ),
}


@pytest.mark.parametrize(
    ("rows", "lag", "after", "expected"), STATUS_CASES.values(), ids=STATUS_CASES.keys()
)
def test_window_status(
    rows: list[tuple[int, int]], lag: int, after: int, expected: PartitionStatus
) -> None:
    assert status(commits(*rows), lag=lag, now=T0 + after) is expected


def test_no_commit_for_longer_than_the_window_span_is_stop() -> None:
    window = commits((10, 5), (20, 5), (30, 6), (40, 4), (50, 3))  # span 40 s
    assert status(window, lag=3, now=T0 + 40_000 + 40_000) is PartitionStatus.OK
    assert status(window, lag=3, now=T0 + 40_000 + 40_001) is PartitionStatus.STOP


def test_stop_wins_even_when_the_old_window_had_zero_lag() -> None:
    window = commits((10, 0), (20, 0), (30, 0))
    assert status(window, lag=7, now=T0 + 20_000 + 20_001) is PartitionStatus.STOP


def test_stopped_but_caught_up_is_ok() -> None:
    window = commits((10, 0), (20, 0), (30, 0))
    assert status(window, lag=0, now=T0 + 10**9) is PartitionStatus.OK


def test_empty_window_is_ok_and_incomplete() -> None:
    evaluation = evaluate_partition([], current_lag=5, now_ms=T0, window_size=5)
    assert evaluation.status is PartitionStatus.OK
    assert not evaluation.complete


def test_complete_once_the_window_is_full() -> None:
    window = commits((10, 5), (20, 8), (30, 8), (40, 12))
    assert not evaluate_partition(window, current_lag=1, now_ms=T0, window_size=5).complete
    window = commits((10, 5), (20, 8), (30, 8), (40, 12), (50, 13))
    assert evaluate_partition(window, current_lag=1, now_ms=T0, window_size=5).complete


@pytest.mark.parametrize(
    ("partitions", "expected"),
    [
        ([], GroupStatus.OK),
        ([PartitionStatus.OK, PartitionStatus.OK], GroupStatus.OK),
        ([PartitionStatus.OK, PartitionStatus.WARN], GroupStatus.WARN),
        ([PartitionStatus.WARN, PartitionStatus.STOP], GroupStatus.ERR),
        ([PartitionStatus.STALL], GroupStatus.ERR),
        ([PartitionStatus.OK, PartitionStatus.REWIND], GroupStatus.ERR),
    ],
)
def test_group_status_is_the_worst_partition(
    partitions: list[PartitionStatus], expected: GroupStatus
) -> None:
    assert evaluate_group(partitions) is expected


def test_window_keeps_the_last_n_commits() -> None:
    window = Window(3, min_distance_ms=0)
    for i in range(5):
        window.add(Commit(i, 1, T0 + i))
    assert [c.offset for c in window.commits] == [2, 3, 4]
    assert window.complete


def test_window_merges_commits_closer_than_min_distance() -> None:
    window = Window(5, min_distance_ms=1_000)
    window.add(Commit(1, 9, T0))
    window.add(Commit(2, 8, T0 + 400))
    window.add(Commit(3, 7, T0 + 1_500))
    assert [c.offset for c in window.commits] == [2, 3]


def test_window_ignores_a_commit_older_than_its_newest() -> None:
    window = Window(5, min_distance_ms=0)
    window.add(Commit(5, 1, T0 + 10))
    window.add(Commit(4, 1, T0))
    assert [c.offset for c in window.commits] == [5]


def test_live_consumer_falling_behind_over_time_with_a_fake_clock() -> None:
    """A producer writes 100/s, the consumer reads 60/s: WARN from the second commit on."""
    window = Window(5, min_distance_ms=1_000)
    produced = consumed = 0
    seen = []
    for second in range(1, 8):
        produced += 100
        consumed += 60
        now = T0 + second * 1_000
        window.add(Commit(consumed, produced - consumed, now))
        seen.append(
            evaluate_partition(
                window.commits, current_lag=produced - consumed, now_ms=now, window_size=5
            )
        )
    assert seen[0].status is PartitionStatus.OK  # one commit is not a trend
    assert {e.status for e in seen[1:]} == {PartitionStatus.WARN}
    assert seen[-1].complete and not seen[0].complete

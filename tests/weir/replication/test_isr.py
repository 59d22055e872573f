"""Leader-side replica bookkeeping (``LeaderState``) driven by a fake clock.

HW = min LEO over the ISR and never backwards; Kafka's caught-up rule decides when a
follower last caught up; laggards are proposed for removal after ``replica.lag.time.max.ms``
and caught-up followers (past the epoch start, KIP-101) for return.
"""

from __future__ import annotations

import pytest

from weir.replication.isr import LeaderState

LAG_MS = 10_000
T0 = 1_000_000


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def advance(self, ms: int) -> int:
        self.now += ms
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def leader(
    clock: Clock,
    *,
    replicas: tuple[int, ...] = (1, 2, 3),
    isr: tuple[int, ...] = (1, 2, 3),
    epoch_start: int = 0,
    hw: int = 0,
) -> LeaderState:
    return LeaderState(
        broker_id=1,
        replicas=replicas,
        isr=isr,
        leader_epoch=5,
        epoch_start_offset=epoch_start,
        high_watermark=hw,
        now_ms=clock.now,
    )


# high watermark ------------------------------------------------------------------------------
def test_hw_waits_for_every_isr_follower_to_fetch(clock: Clock) -> None:
    state = leader(clock)
    assert state.maybe_advance_hw(100) is False
    assert state.on_follower_fetch(2, fetch_offset=100, leader_leo=100, now_ms=clock.now) is False
    assert state.high_watermark == 0  # follower 3 has not fetched yet
    assert state.on_follower_fetch(3, fetch_offset=60, leader_leo=100, now_ms=clock.now) is True
    assert state.high_watermark == 60


def test_hw_is_the_minimum_leo_over_the_isr_including_the_leader(clock: Clock) -> None:
    state = leader(clock)
    state.on_follower_fetch(2, fetch_offset=120, leader_leo=100, now_ms=clock.now)
    state.on_follower_fetch(3, fetch_offset=110, leader_leo=100, now_ms=clock.now)
    assert state.high_watermark == 100  # the leader's own LEO bounds it


def test_followers_outside_the_isr_do_not_hold_the_hw_back(clock: Clock) -> None:
    state = leader(clock, isr=(1, 2))
    state.on_follower_fetch(2, fetch_offset=80, leader_leo=80, now_ms=clock.now)
    state.on_follower_fetch(3, fetch_offset=5, leader_leo=80, now_ms=clock.now)
    assert state.high_watermark == 80


def test_leader_alone_in_the_isr_commits_its_own_leo(clock: Clock) -> None:
    state = leader(clock, isr=(1,))
    assert state.maybe_advance_hw(42) is True
    assert state.high_watermark == 42


def test_hw_never_moves_backwards(clock: Clock) -> None:
    state = leader(clock, hw=50)
    state.on_follower_fetch(2, fetch_offset=70, leader_leo=70, now_ms=clock.now)
    state.on_follower_fetch(3, fetch_offset=70, leader_leo=70, now_ms=clock.now)
    assert state.high_watermark == 70
    # A follower that truncated (restarted) reports a lower LEO.
    assert state.on_follower_fetch(3, fetch_offset=10, leader_leo=70, now_ms=clock.now) is False
    assert state.high_watermark == 70
    state.update_isr((1, 2, 3))
    assert state.maybe_advance_hw(70) is False
    assert state.high_watermark == 70


def test_initial_hw_below_followers_is_raised_once_they_fetch(clock: Clock) -> None:
    state = leader(clock, hw=10)
    state.on_follower_fetch(2, fetch_offset=30, leader_leo=30, now_ms=clock.now)
    assert state.high_watermark == 10
    state.on_follower_fetch(3, fetch_offset=30, leader_leo=30, now_ms=clock.now)
    assert state.high_watermark == 30


def test_isr_shrink_lets_the_hw_advance(clock: Clock) -> None:
    state = leader(clock)
    state.on_follower_fetch(2, fetch_offset=90, leader_leo=90, now_ms=clock.now)
    state.on_follower_fetch(3, fetch_offset=40, leader_leo=90, now_ms=clock.now)
    assert state.high_watermark == 40
    state.update_isr((1, 2))
    assert state.maybe_advance_hw(90) is True
    assert state.high_watermark == 90


def test_unknown_follower_fetch_is_ignored(clock: Clock) -> None:
    state = leader(clock)
    assert state.on_follower_fetch(9, fetch_offset=10, leader_leo=10, now_ms=clock.now) is False
    assert 9 not in state.followers


def test_isr_always_contains_the_leader(clock: Clock) -> None:
    state = leader(clock, isr=(2, 3))
    assert state.isr == {1, 2, 3}
    state.update_isr((2,))
    assert state.isr == {1, 2}


# caught-up rule and ISR shrink ---------------------------------------------------------------
def test_isr_members_get_one_lag_period_before_their_first_fetch(clock: Clock) -> None:
    state = leader(clock)
    clock.advance(LAG_MS)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == set()
    clock.advance(1)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == {2, 3}


def test_follower_at_the_leader_leo_is_caught_up(clock: Clock) -> None:
    state = leader(clock)
    for _ in range(5):
        now = clock.advance(LAG_MS // 2)
        state.on_follower_fetch(2, fetch_offset=now, leader_leo=now, now_ms=now)
    clock.advance(LAG_MS // 2)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == {3}


def test_follower_that_stops_fetching_falls_out_after_the_lag_time(clock: Clock) -> None:
    state = leader(clock)
    state.on_follower_fetch(2, fetch_offset=10, leader_leo=10, now_ms=clock.now)
    state.on_follower_fetch(3, fetch_offset=10, leader_leo=10, now_ms=clock.now)
    clock.advance(LAG_MS)
    state.on_follower_fetch(3, fetch_offset=10, leader_leo=10, now_ms=clock.now)
    clock.advance(1)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == {2}
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1, 3}


def test_follower_fetching_but_never_catching_up_falls_out(clock: Clock) -> None:
    state = leader(clock)
    leo = 100
    state.on_follower_fetch(2, fetch_offset=0, leader_leo=leo, now_ms=clock.now)
    for _ in range(12):
        clock.advance(1000)
        leo += 100
        # Always behind both the current LEO and the LEO at its previous fetch.
        state.on_follower_fetch(2, fetch_offset=leo - 250, leader_leo=leo, now_ms=clock.now)
        state.on_follower_fetch(3, fetch_offset=leo, leader_leo=leo, now_ms=clock.now)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == {2}


def test_steady_appends_do_not_make_a_keeping_up_follower_look_behind(clock: Clock) -> None:
    state = leader(clock)
    leo = 0
    for _ in range(30):
        previous = leo
        leo += 100  # appends arrive between fetches
        clock.advance(1000)
        # Every fetch reaches the LEO the leader had at the previous fetch.
        state.on_follower_fetch(2, fetch_offset=previous, leader_leo=leo, now_ms=clock.now)
        state.on_follower_fetch(3, fetch_offset=leo, leader_leo=leo, now_ms=clock.now)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == set()


def test_caught_up_to_the_previous_leo_dates_from_the_previous_fetch(clock: Clock) -> None:
    """Kafka's rule: reaching the LEO of the previous fetch means caught up *then*.

    Replica.updateFetchState sets lastCaughtUpTimeMs to the previous fetch's time in that
    case, not to now, so a follower that is always one slow round trip behind has a real
    lag of up to two round trips and leaves the ISR when that exceeds the lag time.
    """
    state = leader(clock)
    state.on_follower_fetch(3, fetch_offset=0, leader_leo=0, now_ms=clock.now)
    start = clock.now
    state.on_follower_fetch(2, fetch_offset=100, leader_leo=100, now_ms=start)
    # The follower's next fetch comes 9 s later and only reaches offset 100 (the LEO it saw
    # then); the leader has 200 by now.
    later = clock.advance(9_000)
    state.on_follower_fetch(2, fetch_offset=100, leader_leo=200, now_ms=later)
    assert state.followers[2].last_caught_up_ms == start
    clock.advance(2_000)  # 11 s since it was last known to be caught up
    assert 2 in state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS)


def test_leader_is_never_out_of_sync(clock: Clock) -> None:
    state = leader(clock, isr=(1,), replicas=(1,))
    clock.advance(10 * LAG_MS)
    assert state.out_of_sync(now_ms=clock.now, lag_max_ms=LAG_MS) == set()
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1}


# ISR expansion -------------------------------------------------------------------------------
def test_follower_reaching_the_hw_may_rejoin(clock: Clock) -> None:
    state = leader(clock, isr=(1, 2), hw=0)
    state.on_follower_fetch(2, fetch_offset=50, leader_leo=50, now_ms=clock.now)
    assert state.high_watermark == 50
    state.on_follower_fetch(3, fetch_offset=49, leader_leo=50, now_ms=clock.now)
    assert state.caught_up_outside_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == set()
    state.on_follower_fetch(3, fetch_offset=50, leader_leo=50, now_ms=clock.now)
    assert state.caught_up_outside_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {3}
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1, 2, 3}


def test_follower_must_reach_the_epoch_start_to_rejoin(clock: Clock) -> None:
    # KIP-101: below the start of this leader's epoch it may still hold a divergent tail.
    state = leader(clock, isr=(1,), epoch_start=80, hw=60)
    state.on_follower_fetch(2, fetch_offset=70, leader_leo=90, now_ms=clock.now)
    assert state.high_watermark == 90  # leader alone in the ISR
    state2 = leader(clock, isr=(1, 3), epoch_start=80, hw=60)
    state2.on_follower_fetch(3, fetch_offset=60, leader_leo=90, now_ms=clock.now)
    state2.on_follower_fetch(2, fetch_offset=70, leader_leo=90, now_ms=clock.now)
    assert state2.high_watermark == 60
    assert (
        state2.caught_up_outside_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == set()
    )  # 70 >= HW 60 but < epoch start 80
    state2.on_follower_fetch(2, fetch_offset=80, leader_leo=90, now_ms=clock.now)
    assert state2.caught_up_outside_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {2}


def test_follower_that_never_fetched_does_not_rejoin(clock: Clock) -> None:
    state = leader(clock, isr=(1,), hw=0)
    assert state.caught_up_outside_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == set()


def test_follower_that_stopped_fetching_is_not_let_back_in(clock: Clock) -> None:
    # A paused follower fetched everything before it stopped; with no new writes its LEO
    # still equals the HW after it was shrunk out. The periodic check must not re-add it
    # (which made the ISR flap [1,2,3] -> [1,3] -> [1,2,3] while it was paused).
    state = leader(clock, isr=(1, 2, 3))
    for broker_id in (2, 3):
        state.on_follower_fetch(broker_id, fetch_offset=40, leader_leo=40, now_ms=clock.now)
    assert state.high_watermark == 40
    for _ in range(3):  # follower 3 keeps fetching, follower 2 is paused
        clock.advance(LAG_MS // 2)
        state.on_follower_fetch(3, fetch_offset=40, leader_leo=40, now_ms=clock.now)
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1, 3}
    state.update_isr((1, 3))
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1, 3}
    # Follower 3's fetches do not let it back in either.
    state.on_follower_fetch(3, fetch_offset=40, leader_leo=40, now_ms=clock.now)
    assert state.caught_up_outside_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == set()
    # Once it fetches again, it is back.
    state.on_follower_fetch(2, fetch_offset=40, leader_leo=40, now_ms=clock.now)
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1, 2, 3}


def test_proposal_shrinks_and_expands_at_once(clock: Clock) -> None:
    state = leader(clock, isr=(1, 2))
    state.on_follower_fetch(3, fetch_offset=0, leader_leo=0, now_ms=clock.now)
    clock.advance(LAG_MS + 1)
    state.on_follower_fetch(3, fetch_offset=0, leader_leo=0, now_ms=clock.now)
    assert state.proposed_isr(now_ms=clock.now, lag_max_ms=LAG_MS) == {1, 3}


# replica set changes -------------------------------------------------------------------------
def test_update_replicas_tracks_new_ones_out_of_sync_and_forgets_removed(clock: Clock) -> None:
    state = leader(clock, replicas=(1, 2, 3), isr=(1, 2, 3))
    state.on_follower_fetch(2, fetch_offset=5, leader_leo=5, now_ms=clock.now)
    state.update_replicas((1, 2, 4), now_ms=clock.now)
    assert set(state.followers) == {2, 4}
    assert state.followers[2].log_end_offset == 5  # kept
    assert state.followers[4].last_caught_up_ms == 0  # a newcomer starts out of sync

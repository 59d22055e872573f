"""Heartbeats, session and rebalance timeouts, LeaveGroup and operator rebalances."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import REBALANCE_MS, SESSION_MS, Driver
from weir.coordinator import (
    GroupState,
    JoinResponse,
    LeaveMemberResponse,
    LeaveResponse,
    MemberIdentity,
    Pending,
    SyncResponse,
)

E = ErrorCode


def _leader_and_follower(driver: Driver, a: str, b: str) -> tuple[str, str]:
    return (a, b) if driver.group.leader_id == a else (b, a)


def test_heartbeat_errors_follow_kafka() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    assert driver.heartbeat(a, generation) is E.none
    assert driver.heartbeat("ghost", generation) is E.unknown_member_id
    assert driver.heartbeat(a, generation - 1) is E.illegal_generation
    driver.force_rebalance()
    assert driver.heartbeat(a, generation) is E.rebalance_in_progress


def test_heartbeat_in_completing_rebalance_is_accepted() -> None:
    driver = Driver()
    a, b = (driver.join_new(client_id=c) for c in ("a", "b"))
    driver.until_resolved([a[1], b[1]])
    assert driver.group.state is GroupState.COMPLETING_REBALANCE
    assert driver.heartbeat(b[0], 1) is E.none


def test_heartbeat_refreshes_the_session() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    for _ in range(5):
        driver.advance(SESSION_MS - 1)
        assert driver.heartbeat(a, generation) is E.none
    assert a in driver.group.members
    assert driver.group.members[a].last_heartbeat_ms == driver.now
    assert driver.group.next_deadline() == driver.now + SESSION_MS


def test_session_expiry_in_stable_removes_member_and_starts_rebalance() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    # a keeps heartbeating, b goes silent.
    for _ in range(2):
        driver.advance(4_000)
        assert driver.heartbeat(a, generation) is E.none
    driver.advance(SESSION_MS - 8_000 - 1)
    assert b in driver.group.members
    driver.advance(1)
    assert b not in driver.group.members
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    assert driver.heartbeat(a, generation) is E.rebalance_in_progress
    assert driver.heartbeat(b, generation) is E.unknown_member_id
    join = driver.join_response(driver.join(a))
    assert join.generation_id == generation + 1
    assert join.leader == a and [m.member_id for m in join.members] == [a]


def test_member_that_does_not_rejoin_within_rebalance_timeout_is_removed() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    leader, straggler = _leader_and_follower(driver, a, b)
    rejoin = driver.join(leader)  # the leader's JoinGroup starts the rebalance
    assert isinstance(rejoin, Pending)
    start = driver.now
    # The straggler keeps its session alive but never rejoins.
    while driver.now - start < REBALANCE_MS - 2_000:
        driver.advance(2_000)
        assert driver.heartbeat(straggler, generation) is E.rebalance_in_progress
    assert driver.resolved(rejoin) is None
    driver.advance(start + REBALANCE_MS - driver.now)
    join = driver.join_response(rejoin)
    assert join.generation_id == generation + 1
    assert [m.member_id for m in join.members] == [leader]
    assert set(driver.group.members) == {leader}
    assert driver.heartbeat(straggler, generation) is E.unknown_member_id


def test_parked_join_excuses_an_established_member_session() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    leader, follower = _leader_and_follower(driver, a, b)
    rejoin = driver.join(leader)
    for _ in range(3):  # the leader cannot heartbeat while parked; the follower does
        driver.advance(SESSION_MS // 2)
        assert driver.heartbeat(follower, generation) is E.rebalance_in_progress
    assert leader in driver.group.members
    assert driver.resolved(rejoin) is None
    driver.join(follower)
    assert driver.join_response(rejoin).generation_id == generation + 1


def test_new_member_parked_too_long_is_dropped_with_unknown_member_id() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1, rebalance_ms=600_000)
    b, reply_b = driver.join_new(client_id="b", rebalance_ms=600_000)
    start = driver.now
    while driver.now - start < 300_000 - 5_000:
        driver.advance(5_000)
        assert driver.heartbeat(a, generation) is E.rebalance_in_progress
    assert driver.resolved(reply_b) is None
    driver.advance(5_000)
    assert driver.join_response(reply_b) == JoinResponse(E.unknown_member_id, "")
    assert b not in driver.group.members


def test_member_that_never_syncs_is_removed_after_rebalance_timeout() -> None:
    driver = Driver()
    leader, follower = _leader_and_follower(driver, *driver.joined("a", "b"))
    driver.sync(leader, 1, {leader: b"L", follower: b"F"})
    assert driver.group.state is GroupState.STABLE
    start = driver.now
    while driver.now - start < REBALANCE_MS - 3_000:
        driver.advance(3_000)
        assert driver.heartbeat(leader, 1) is E.none
        assert driver.heartbeat(follower, 1) is E.none  # alive, but never sends SyncGroup
    driver.advance(start + REBALANCE_MS - driver.now)
    assert follower not in driver.group.members
    assert driver.group.state is GroupState.PREPARING_REBALANCE


def test_parked_sync_fails_when_the_leader_session_expires() -> None:
    driver = Driver()
    leader, follower = _leader_and_follower(driver, *driver.joined("a", "b"))
    parked = driver.sync(follower, 1)
    driver.advance(SESSION_MS)  # the leader never syncs nor heartbeats
    assert leader not in driver.group.members
    assert driver.sync_response(parked) == SyncResponse(E.rebalance_in_progress)
    assert driver.group.state is GroupState.PREPARING_REBALANCE


def test_leave_triggers_rebalance_and_remaining_members_form_next_generation() -> None:
    driver = Driver()
    (a, b, c), generation = driver.stable_group(3)
    response = driver.leave(MemberIdentity(b))
    assert response == LeaveResponse(E.none, (LeaveMemberResponse(b, None, E.none),))
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    assert driver.heartbeat(a, generation) is E.rebalance_in_progress
    first = driver.join(a)
    assert isinstance(first, Pending)
    second = driver.join(c)
    join_a, join_c = driver.join_response(first), driver.join_response(second)
    assert join_a.generation_id == join_c.generation_id == generation + 1
    assert set(driver.group.members) == {a, c}


def test_leave_batch_reports_each_member() -> None:
    driver = Driver()
    (a, b), _ = driver.stable_group(2)
    response = driver.leave(MemberIdentity(a), MemberIdentity("ghost"), MemberIdentity(b))
    assert [(r.member_id, r.error) for r in response.members] == [
        (a, E.none),
        ("ghost", E.unknown_member_id),
        (b, E.none),
    ]
    assert driver.group.state is GroupState.EMPTY


def test_leave_answers_the_leavers_parked_join() -> None:
    driver = Driver()
    (a, b), _ = driver.stable_group(2)
    leader, follower = _leader_and_follower(driver, a, b)
    parked = driver.join(leader)
    driver.leave(MemberIdentity(leader))
    assert driver.join_response(parked) == JoinResponse(E.unknown_member_id, "")
    # The follower alone is left to rejoin; it completes the phase at once.
    assert driver.join_response(driver.join(follower)).leader == follower


def test_leave_of_pending_member_id_forgets_it() -> None:
    driver = Driver()
    first = driver.join("")
    assert isinstance(first, JoinResponse)
    response = driver.leave(MemberIdentity(first.member_id))
    assert response.members[0].error is E.none
    assert driver.group.pending_member_ids == frozenset()


def test_force_rebalance_makes_members_rejoin() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    driver.force_rebalance()
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    assert driver.heartbeat(a, generation) is E.rebalance_in_progress
    assert driver.heartbeat(b, generation) is E.rebalance_in_progress
    replies = [driver.join(a), driver.join(b)]
    joins = [driver.join_response(r) for r in replies]
    assert {j.generation_id for j in joins} == {generation + 1}
    assert driver.group.state is GroupState.COMPLETING_REBALANCE


def test_force_rebalance_cancels_parked_syncs() -> None:
    driver = Driver()
    _, follower = _leader_and_follower(driver, *driver.joined("a", "b"))
    parked = driver.sync(follower, 1)
    driver.force_rebalance()
    assert driver.sync_response(parked) == SyncResponse(E.rebalance_in_progress)


def test_force_rebalance_of_empty_group_does_nothing() -> None:
    driver = Driver()
    driver.force_rebalance()
    assert driver.group.state is GroupState.EMPTY
    assert driver.group.next_deadline() is None


def test_next_deadline_is_the_earliest_session_expiry() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    driver.advance(1_000)
    driver.heartbeat(a, generation)
    assert driver.group.next_deadline() == driver.group.members[b].last_heartbeat_ms + SESSION_MS
    assert driver.group.tick(driver.now) == []


def test_unload_answers_parked_requests_with_not_coordinator() -> None:
    driver = Driver()
    (a, b), _ = driver.stable_group(2)
    leader, _ = _leader_and_follower(driver, a, b)
    parked = driver.join(leader)
    driver.absorb(driver.group.unload(driver.now))
    response = driver.join_response(parked)
    assert response.error is E.not_coordinator
    assert driver.group.state is GroupState.DEAD
    assert driver.group.next_deadline() is None
    assert driver.heartbeat(leader, 1) is E.coordinator_not_available

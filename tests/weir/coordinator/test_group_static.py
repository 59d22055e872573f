"""Static membership (KIP-345): restarts without rebalances, fencing, admin removal."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import REBALANCE_MS, Driver, subscription
from weir.coordinator import (
    GroupState,
    JoinResponse,
    LeaveMemberResponse,
    MemberIdentity,
    Pending,
    SyncResponse,
)

E = ErrorCode


def static_group(driver: Driver, *instances: str, api_version: int = 9) -> dict[str, str]:
    """Members with ``group.instance.id`` set, Stable; returns instance id -> member id."""
    replies = {
        instance: driver.join("", instance_id=instance, client_id=instance, api_version=api_version)
        for instance in instances
    }
    joins = dict(zip(replies, driver.until_resolved(list(replies.values())), strict=True))
    member_ids = {instance: join.member_id for instance, join in joins.items()}
    leader = joins[instances[0]].leader
    assignments = {m: f"assignment-{i}".encode() for i, m in member_ids.items()}
    driver.sync(leader, 1, assignments, instance_id=instances[0])
    for instance, member_id in member_ids.items():
        if member_id != leader:
            driver.sync(member_id, 1, instance_id=instance)
    assert driver.group.state is GroupState.STABLE
    return member_ids


def test_static_member_joins_without_member_id_required() -> None:
    driver = Driver()
    reply = driver.join("", instance_id="host-1", api_version=9)
    assert isinstance(reply, Pending)
    (member_id,) = driver.group.members
    assert member_id == "host-1-uuid1"
    assert driver.group.static_member_id("host-1") == member_id


def test_restarted_static_member_gets_its_assignment_back_without_rebalance() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b", api_version=5)
    old_b = ids["host-b"]
    persists_before = len(driver.persists)
    reply = driver.join("", instance_id="host-b", client_id="host-b", api_version=5)
    join = driver.join_response(reply)
    new_b = join.member_id
    assert new_b != old_b and new_b.startswith("host-b-")
    assert join.error is E.none and join.generation_id == 1
    # Pre-v9 clients are told the *old* leader id so a restarted leader does not reassign.
    assert join.leader == ids["host-a"] and join.members == ()
    assert driver.group.state is GroupState.STABLE and driver.group.generation_id == 1
    # The new member id was persisted before the answer.
    persisted = driver.persists[persists_before].snapshot
    assert {m.member_id for m in persisted.members} == {ids["host-a"], new_b}
    sync = driver.sync_response(driver.sync(new_b, 1, instance_id="host-b"))
    assert sync.assignment == b"assignment-host-b"
    assert driver.heartbeat(new_b, 1, instance_id="host-b") is E.none
    assert driver.heartbeat(ids["host-a"], 1, instance_id="host-a") is E.none


def test_restarted_static_leader_skips_assignment_on_join_v9() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b")
    join = driver.join_response(driver.join("", instance_id="host-a", client_id="host-a"))
    assert join.leader == join.member_id == driver.group.leader_id
    assert join.skip_assignment is True
    assert {m.member_id for m in join.members} == {join.member_id, ids["host-b"]}
    assert driver.group.state is GroupState.STABLE


def test_stale_member_id_of_static_member_is_fenced() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b")
    old_b = ids["host-b"]
    new_b = driver.join_response(driver.join("", instance_id="host-b")).member_id
    assert driver.heartbeat(old_b, 1, instance_id="host-b") is E.fenced_instance_id
    assert driver.sync(old_b, 1, instance_id="host-b") == SyncResponse(E.fenced_instance_id)
    assert driver.join(old_b, instance_id="host-b") == JoinResponse(E.fenced_instance_id, old_b)
    leave = driver.leave(MemberIdentity(old_b, "host-b"))
    assert leave.members == (LeaveMemberResponse(old_b, "host-b", E.fenced_instance_id),)
    # Without its instance id the old id is simply unknown.
    assert driver.heartbeat(old_b, 1) is E.unknown_member_id
    assert driver.heartbeat(new_b, 1, instance_id="host-b") is E.none
    assert driver.heartbeat(new_b, 1, instance_id="host-zzz") is E.unknown_member_id


def test_new_incarnation_fences_the_old_one_parked_in_join() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b")
    driver.force_rebalance()
    parked_old = driver.join(ids["host-b"], instance_id="host-b")
    assert isinstance(parked_old, Pending)
    new_reply = driver.join("", instance_id="host-b")
    assert driver.join_response(parked_old) == JoinResponse(E.fenced_instance_id, ids["host-b"])
    driver.join(ids["host-a"], instance_id="host-a")
    new_join = driver.join_response(new_reply)
    assert new_join.generation_id == 2
    assert set(driver.group.members) == {ids["host-a"], new_join.member_id}


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    driver = Driver()
    protocols = (("range", subscription("t")), ("roundrobin", subscription("t")))
    replies = [driver.join("", instance_id=i, client_id=i, protocols=protocols) for i in ("a", "b")]
    joins = driver.until_resolved(replies)
    assert joins[0].protocol_name == "range"
    driver.sync(joins[0].leader, 1, {}, instance_id="a")
    driver.sync(joins[1].member_id, 1, instance_id="b")
    only_roundrobin = (("roundrobin", subscription("t")),)
    reply = driver.join("", instance_id="b", protocols=only_roundrobin)
    assert isinstance(reply, Pending)
    assert driver.group.state is GroupState.PREPARING_REBALANCE


def test_static_rejoin_during_completing_rebalance_starts_new_round() -> None:
    driver = Driver()
    replies = [driver.join("", instance_id=i, client_id=i) for i in ("a", "b")]
    first = driver.until_resolved(replies)
    follower = next(j for j in first if j.member_id != j.leader)
    parked_sync = driver.sync(follower.member_id, 1, instance_id="b")
    restart = driver.join("", instance_id="b")
    assert driver.sync_response(parked_sync) == SyncResponse(E.fenced_instance_id)
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    driver.join(first[0].member_id, instance_id="a")
    assert driver.join_response(restart).generation_id == 2


def test_failed_persist_of_static_rejoin_restores_the_old_member_id() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b")
    driver.auto_persist = False
    reply = driver.join("", instance_id="host-b")
    assert isinstance(reply, Pending)
    token = driver.persists[-1].token
    driver.absorb(driver.group.persisted(token, now_ms=driver.now, error=E.not_enough_replicas))
    failed = driver.join_response(reply)
    assert failed.error is E.coordinator_not_available and failed.member_id == ""
    assert driver.group.static_member_id("host-b") == ids["host-b"]
    assert driver.heartbeat(ids["host-b"], 1, instance_id="host-b") is E.none
    assert driver.group.state is GroupState.STABLE


def test_admin_removes_static_member_by_instance_id() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b")
    response = driver.leave(MemberIdentity("", "host-b"), MemberIdentity("", "host-x"))
    assert [r.error for r in response.members] == [E.none, E.unknown_member_id]
    assert ids["host-b"] not in driver.group.members
    assert driver.group.static_member_id("host-b") is None
    assert driver.group.state is GroupState.PREPARING_REBALANCE


def test_static_member_that_does_not_rejoin_is_kept_in_next_generation() -> None:
    driver = Driver()
    ids = static_group(driver, "host-a", "host-b")
    driver.force_rebalance()
    reply = driver.join(ids["host-a"], instance_id="host-a")
    for _ in range(REBALANCE_MS // 5_000):  # host-b stays alive but never rejoins
        assert driver.heartbeat(ids["host-b"], 1, instance_id="host-b") is (E.rebalance_in_progress)
        driver.advance(5_000)
    join = driver.join_response(reply)
    assert join.generation_id == 2
    assert {m.member_id for m in join.members} == {ids["host-a"], ids["host-b"]}
    assert set(driver.group.members) == set(ids.values())

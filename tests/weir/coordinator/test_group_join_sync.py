"""JoinGroup and SyncGroup: full cycles, KIP-394, the initial delay, protocol selection."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import Driver, subscription
from weir.coordinator import (
    GroupConfig,
    GroupState,
    JoinResponse,
    MemberIdentity,
    Pending,
    SyncResponse,
)

E = ErrorCode


@pytest.mark.parametrize("count", [1, 2, 3])
def test_full_join_sync_heartbeat_cycle_with_n_members(count: int) -> None:
    driver = Driver()
    member_ids, generation = driver.stable_group(count)
    group = driver.group
    assert group.state is GroupState.STABLE
    assert generation == 1
    assert set(group.members) == set(member_ids)
    assert group.protocol_name == "range"
    for member_id in member_ids:
        assert driver.heartbeat(member_id, generation) is E.none
        assert group.members[member_id].assignment == f"assignment-{member_id}".encode()
    # The group record was written with the assignment before anyone got it.
    snapshot = driver.persists[-1].snapshot
    assert snapshot.generation_id == 1
    assert {m.member_id: m.assignment for m in snapshot.members} == {
        m: f"assignment-{m}".encode() for m in member_ids
    }


def test_leader_alone_receives_member_metadata() -> None:
    driver = Driver()
    a, reply_a = driver.join_new(client_id="a", protocols=(("range", subscription("x")),))
    b, reply_b = driver.join_new(client_id="b", protocols=(("range", subscription("y")),))
    join_a, join_b = driver.until_resolved([reply_a, reply_b])
    assert join_a.leader == join_b.leader == a
    assert join_a.generation_id == join_b.generation_id == 1
    assert join_a.protocol_type == "consumer" and join_a.protocol_name == "range"
    assert {(m.member_id, m.metadata) for m in join_a.members} == {
        (a, subscription("x")),
        (b, subscription("y")),
    }
    assert join_b.members == ()


def test_unknown_member_gets_member_id_required_with_generated_id() -> None:
    driver = Driver()
    reply = driver.join("", client_id="billing-app")
    assert reply == JoinResponse(E.member_id_required, "billing-app-uuid1")
    assert driver.group.state is GroupState.EMPTY
    assert driver.group.pending_member_ids == {"billing-app-uuid1"}
    rejoin = driver.join("billing-app-uuid1", client_id="billing-app")
    assert isinstance(rejoin, Pending)
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    assert driver.group.pending_member_ids == frozenset()


def test_join_before_v4_is_admitted_without_member_id_round_trip() -> None:
    driver = Driver()
    reply = driver.join("", client_id="old", api_version=3)
    assert isinstance(reply, Pending)
    assert set(driver.group.members) == {"old-uuid1"}


def test_pending_member_id_is_forgotten_after_its_session_timeout() -> None:
    driver = Driver()
    first = driver.join("", session_ms=8_000)
    assert isinstance(first, JoinResponse)
    driver.advance(7_999)
    assert driver.group.pending_member_ids == {first.member_id}
    driver.advance(1)
    assert driver.group.pending_member_ids == frozenset()
    assert driver.join(first.member_id) == JoinResponse(E.unknown_member_id, first.member_id)


def test_initial_rebalance_waits_for_the_delay_and_extends_while_members_arrive() -> None:
    driver = Driver()
    _, reply_a = driver.join_new(client_id="a")
    driver.advance(1_000)
    _, reply_b = driver.join_new(client_id="b")
    # First delay ends 3000 ms after the first join; b arrived meanwhile, so wait again.
    driver.advance(2_000)
    assert driver.resolved(reply_a) is None
    assert driver.group.next_deadline() == driver.now + 3_000
    driver.advance(2_999)
    assert driver.resolved(reply_a) is None
    driver.advance(1)
    join_a, join_b = driver.join_response(reply_a), driver.join_response(reply_b)
    assert join_a.generation_id == join_b.generation_id == 1
    assert driver.group.state is GroupState.COMPLETING_REBALANCE


def test_initial_delay_never_waits_past_the_rebalance_timeout() -> None:
    driver = Driver(config=GroupConfig(initial_rebalance_delay_ms=3_000))
    start = driver.now
    _, reply = driver.join_new(client_id="a", rebalance_ms=7_000)
    # Keep adding members every second: the wait is capped at the 7000 ms rebalance timeout.
    for i in range(20):
        if driver.resolved(reply) is not None:
            break
        driver.advance(1_000)
        driver.join_new(client_id=f"m{i}", rebalance_ms=7_000)
    assert driver.resolved(reply) is not None
    assert driver.now - start <= 7_000


def test_zero_initial_delay_completes_on_the_next_tick() -> None:
    driver = Driver(config=GroupConfig(initial_rebalance_delay_ms=0))
    _, reply = driver.join_new()
    assert driver.group.next_deadline() == driver.now + 1
    driver.advance(1)
    assert driver.join_response(reply).generation_id == 1


def test_sync_from_follower_waits_until_leader_syncs() -> None:
    driver = Driver()
    a, b = driver.joined("a", "b")
    follower_sync = driver.sync(b, 1)
    assert isinstance(follower_sync, Pending)
    assert driver.resolved(follower_sync) is None
    leader_sync = driver.sync(a, 1, {a: b"A", b: b"B"})
    assert driver.sync_response(follower_sync) == SyncResponse(E.none, b"B", "consumer", "range")
    assert driver.sync_response(leader_sync) == SyncResponse(E.none, b"A", "consumer", "range")
    assert driver.group.state is GroupState.STABLE


def test_leader_sync_is_answered_only_after_the_assignment_is_persisted() -> None:
    driver = Driver(auto_persist=False)
    (a,) = driver.joined("a")
    leader_sync = driver.sync(a, 1, {a: b"A"})
    assert isinstance(leader_sync, Pending)
    persist = driver.persists[-1]
    assert persist.snapshot.members[0].assignment == b"A"
    assert driver.group.state is GroupState.COMPLETING_REBALANCE
    driver.absorb(driver.group.persisted(persist.token, now_ms=driver.now))
    assert driver.sync_response(leader_sync).assignment == b"A"
    assert driver.group.state is GroupState.STABLE


def test_failed_assignment_append_fails_syncs_and_rebalances() -> None:
    driver = Driver(auto_persist=False)
    (a,) = driver.joined("a")
    leader_sync = driver.sync(a, 1, {a: b"A"})
    token = driver.persists[-1].token
    driver.absorb(driver.group.persisted(token, now_ms=driver.now, error=E.not_leader_or_follower))
    assert driver.sync_response(leader_sync) == SyncResponse(E.not_coordinator)
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    assert driver.group.members[a].assignment == b""


def test_missing_assignments_are_filled_with_empty_bytes() -> None:
    driver = Driver()
    a, b = driver.joined("a", "b")
    driver.sync(a, 1, {a: b"A", "stranger": b"S"})
    assert driver.sync_response(driver.sync(b, 1)) == SyncResponse(E.none, b"", "consumer", "range")


def test_sync_errors_follow_kafka() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    assert driver.sync("nobody", generation) == SyncResponse(E.unknown_member_id)
    assert driver.sync(a, generation + 1) == SyncResponse(E.illegal_generation)
    assert driver.sync(a, generation, protocol_type="connect") == SyncResponse(
        E.inconsistent_group_protocol
    )
    assert driver.sync(a, generation, protocol_name="roundrobin") == SyncResponse(
        E.inconsistent_group_protocol
    )
    # Stable: a late SyncGroup just gets the current assignment.
    assert driver.sync_response(driver.sync(b, generation, protocol_name="range")).assignment == (
        f"assignment-{b}".encode()
    )
    driver.force_rebalance()
    assert driver.sync(b, generation) == SyncResponse(E.rebalance_in_progress)


def test_sync_on_empty_group_is_unknown_member() -> None:
    driver = Driver()
    assert driver.sync("m", 0) == SyncResponse(E.unknown_member_id)


def test_join_validates_session_timeout_bounds() -> None:
    driver = Driver()
    too_short = driver.join("", session_ms=5_999)
    too_long = driver.join("", session_ms=1_800_001)
    assert isinstance(too_short, JoinResponse) and too_short.error is E.invalid_session_timeout
    assert isinstance(too_long, JoinResponse) and too_long.error is E.invalid_session_timeout
    edge = driver.join("", session_ms=6_000)
    assert isinstance(edge, JoinResponse) and edge.error is E.member_id_required


def test_join_with_unknown_member_id_is_rejected() -> None:
    driver = Driver()
    assert driver.join("ghost") == JoinResponse(E.unknown_member_id, "ghost")


def test_join_with_other_protocol_type_or_no_common_protocol_is_inconsistent() -> None:
    driver = Driver()
    driver.stable_group(1)
    wrong_type = driver.join("", protocol_type="connect")
    no_common = driver.join("", protocols=(("roundrobin", b""),))
    assert wrong_type == JoinResponse(E.inconsistent_group_protocol, "")
    assert no_common == JoinResponse(E.inconsistent_group_protocol, "")
    assert driver.join("", protocol_type="") == JoinResponse(E.inconsistent_group_protocol, "")


def test_group_max_size_turns_away_extra_members() -> None:
    driver = Driver(config=GroupConfig(max_size=2))
    driver.stable_group(2)
    extra = driver.join("", client_id="third", api_version=3)
    assert extra == JoinResponse(E.group_max_size_reached, "")
    assert len(driver.group.members) == 2


@pytest.mark.parametrize(
    ("preferences", "expected"),
    [
        # Everyone supports both; two members prefer cooperative-sticky.
        (
            [
                ("cooperative-sticky", "range"),
                ("cooperative-sticky", "range"),
                ("range", "cooperative-sticky"),
            ],
            "cooperative-sticky",
        ),
        # roundrobin gets most first choices but one member lacks it: not a candidate.
        ([("roundrobin", "range"), ("roundrobin", "range"), ("range",)], "range"),
        # Rolling upgrade range -> cooperative-sticky: upgraded members list both.
        ([("cooperative-sticky", "range"), ("range",), ("range",)], "range"),
        # range is not common; the two members vote roundrobin and cooperative-sticky: a tie,
        # which goes to the protocol voted for first (deterministic, unlike Kafka's HashMap).
        (
            [("range", "roundrobin", "cooperative-sticky"), ("cooperative-sticky", "roundrobin")],
            "roundrobin",
        ),
    ],
)
def test_protocol_selection_with_mixed_assignors(
    preferences: list[tuple[str, ...]], expected: str
) -> None:
    driver = Driver()
    replies = []
    for index, names in enumerate(preferences):
        protocols = tuple((name, subscription("t")) for name in names)
        _, reply = driver.join_new(client_id=f"c{index}", protocols=protocols)
        replies.append(reply)
    joins = driver.until_resolved(replies)
    assert {j.protocol_name for j in joins} == {expected}
    assert driver.group.select_protocol() == expected


def test_rejoin_in_completing_rebalance_with_same_metadata_resends_join_response() -> None:
    driver = Driver()
    (a,) = driver.joined("a")
    again = driver.join(a, client_id="a")
    assert isinstance(again, JoinResponse)
    assert again.generation_id == 1 and again.leader == a and len(again.members) == 1
    assert driver.group.state is GroupState.COMPLETING_REBALANCE


def test_follower_rejoin_in_stable_with_same_metadata_does_not_rebalance() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    follower = b if driver.group.leader_id == a else a
    reply = driver.join(follower)
    assert isinstance(reply, JoinResponse)
    assert reply.generation_id == generation and reply.members == ()
    assert driver.group.state is GroupState.STABLE


def test_leader_rejoin_in_stable_starts_a_rebalance() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    reply = driver.join(a)
    # A one-member group: the leader is the only member, so the phase completes at once.
    join = driver.join_response(reply)
    assert join.generation_id == generation + 1
    assert driver.group.state is GroupState.COMPLETING_REBALANCE


def test_changed_metadata_in_stable_starts_a_rebalance() -> None:
    driver = Driver()
    (a, b), generation = driver.stable_group(2)
    follower = b if driver.group.leader_id == a else a
    reply = driver.join(follower, protocols=(("range", subscription("orders", "refunds")),))
    assert isinstance(reply, Pending)
    assert driver.group.state is GroupState.PREPARING_REBALANCE
    assert driver.heartbeat(driver.group.leader_id or "", generation) is E.rebalance_in_progress


def test_describe_shows_metadata_and_assignment_only_when_stable() -> None:
    driver = Driver()
    (a,), _ = driver.stable_group(1)
    described = driver.group.describe()
    assert described.state == "Stable"
    assert described.protocol_type == "consumer" and described.protocol_name == "range"
    (member,) = described.members
    assert member.member_id == a and member.client_id == "consumer-0"
    assert member.metadata == subscription("orders")
    assert member.assignment == f"assignment-{a}".encode()
    driver.force_rebalance()
    during = driver.group.describe()
    assert during.state == "PreparingRebalance" and during.protocol_name == ""
    assert during.members[0].metadata == b"" and during.members[0].assignment == b""


def test_describe_of_new_group_is_empty() -> None:
    described = Driver().group.describe()
    assert (described.state, described.protocol_type, described.members) == ("Empty", "", ())


def test_group_that_empties_writes_an_empty_generation() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    driver.leave(MemberIdentity(a))
    # The only member left: the join phase has nobody to wait for.
    assert driver.group.state is GroupState.EMPTY
    assert driver.group.generation_id == generation + 1
    empty = driver.persists[-1].snapshot
    assert (empty.generation_id, empty.members, empty.protocol_name, empty.leader) == (
        generation + 1,
        (),
        None,
        None,
    )
    assert empty.protocol_type == "consumer"

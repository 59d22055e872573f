"""The rebalance planner, pure: hand-made layouts and random clusters (hypothesis)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokers.ops.planner import PlanError, Proposal, distribution, plan_rebalance, rack_count
from weir.metadata.placement import assign_replicas

Layout = dict[tuple[str, int], tuple[int, ...]]


def apply(layout: Layout, proposal) -> Layout:
    return {**layout, **proposal.proposed()}


def test_balanced_cluster_yields_no_moves() -> None:
    brokers = {1: "r1", 2: "r2", 3: "r3"}
    assignment = assign_replicas(
        partitions=6, replication_factor=3, brokers=list(brokers.items()), start_index=0
    )
    layout = {("t", i): tuple(r) for i, r in enumerate(assignment)}
    proposal = plan_rebalance(partitions=layout, brokers=brokers)
    assert proposal.diffs == ()
    assert proposal.before == proposal.after


def test_replicas_piled_on_one_broker_are_spread() -> None:
    brokers = {1: None, 2: None, 3: None, 4: None}
    layout = {("t", i): (1, 2) for i in range(8)}
    proposal = plan_rebalance(partitions=layout, brokers=brokers)
    after = proposal.after
    assert after.replica_spread <= 1 and after.leader_spread <= 1
    assert set(after.replicas.values()) == {4}
    assert set(after.leaders.values()) == {2}
    # 16 replicas over 4 brokers: 8 must leave brokers 1 and 2, no more.
    assert proposal.replica_moves == 8


def test_leaders_are_evened_by_reordering_without_copying() -> None:
    brokers = {1: None, 2: None, 3: None}
    layout = {("t", i): (1, 2, 3) for i in range(6)}
    proposal = plan_rebalance(partitions=layout, brokers=brokers)
    assert proposal.replica_moves == 0
    assert dict(proposal.after.leaders) == {1: 2, 2: 2, 3: 2}
    assert all(set(d.proposed) == {1, 2, 3} for d in proposal.diffs)
    assert len(proposal.diffs) == 4


def test_excluded_broker_is_emptied() -> None:
    brokers = {1: None, 2: None, 3: None, 4: None}
    layout = {("t", i): (1 + i % 4, 1 + (i + 1) % 4) for i in range(8)}
    proposal = plan_rebalance(partitions=layout, brokers=brokers, exclude=[4])
    result = apply(layout, proposal)
    assert all(4 not in reps for reps in result.values())
    assert proposal.after.replica_spread <= 1
    assert 4 not in proposal.after.replicas


def test_rack_diversity_is_restored() -> None:
    brokers = {1: "a", 2: "a", 3: "b", 4: "b"}
    layout = {("t", 0): (1, 2), ("t", 1): (3, 4)}
    proposal = plan_rebalance(partitions=layout, brokers=brokers)
    result = apply(layout, proposal)
    assert all(rack_count(reps, brokers) == 2 for reps in result.values())
    assert proposal.replica_moves == 2


def test_impossible_plans_are_refused() -> None:
    with pytest.raises(PlanError, match="only 2 eligible brokers"):
        plan_rebalance(
            partitions={("t", 0): (1, 2, 3)}, brokers={1: None, 2: None, 3: None}, exclude=[3]
        )
    with pytest.raises(PlanError, match="every live broker is excluded"):
        plan_rebalance(partitions={}, brokers={1: None}, exclude=[1])


def test_replicas_on_dead_brokers_stay_unless_excluded() -> None:
    brokers = {1: None, 2: None}  # broker 3 is dead
    layout = {("t", 0): (3, 1), ("t", 1): (1, 2)}
    kept = apply(layout, plan_rebalance(partitions=layout, brokers=brokers))
    assert 3 in kept[("t", 0)]
    moved = apply(layout, plan_rebalance(partitions=layout, brokers=brokers, exclude=[3]))
    assert all(3 not in reps for reps in moved.values())


# --- properties on random clusters ------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn, *, racks: str) -> tuple[dict[int, str | None], Layout]:
    n = draw(st.integers(min_value=1, max_value=7))
    ids = list(range(1, n + 1))
    if racks == "none":
        brokers: dict[int, str | None] = dict.fromkeys(ids)
    elif racks == "distinct":
        brokers = {b: f"r{b}" for b in ids}
    else:
        rack_names = draw(st.integers(min_value=1, max_value=3))
        brokers = {b: f"r{draw(st.integers(0, rack_names - 1))}" for b in ids}
    rng = random.Random(draw(st.integers(0, 2**32)))
    layout: Layout = {}
    for t in range(draw(st.integers(min_value=0, max_value=4))):
        rf = draw(st.integers(min_value=1, max_value=n))
        partitions = draw(st.integers(min_value=1, max_value=8))
        # Skew: a random subset of brokers is preferred, so layouts are usually unbalanced.
        weights = [rng.choice((1, 1, 5, 20)) for _ in ids]
        for p in range(partitions):
            chosen: list[int] = []
            while len(chosen) < rf:
                b = rng.choices(ids, weights)[0]
                if b not in chosen:
                    chosen.append(b)
            layout[(f"t{t}", p)] = tuple(chosen)
    return brokers, layout


def check_invariants(
    brokers: dict[int, str | None], layout: Layout, proposal, excluded: list[int] = ()
) -> Layout:
    result = apply(layout, proposal)
    for key, reps in result.items():
        assert len(set(reps)) == len(reps), f"{key} co-locates replicas: {reps}"
        assert len(reps) == len(layout[key]), f"{key} changed its replication factor"
        assert set(reps) <= set(brokers)
        assert rack_count(reps, brokers) >= rack_count(layout[key], brokers), key
    for diff in proposal.diffs:
        assert diff.current != diff.proposed
    eligible = [b for b in brokers if b not in excluded]
    assert distribution(result, brokers, eligible) == proposal.after
    return result


PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def planned(cluster: tuple[Any, Any]) -> Proposal:
    """The planner's proposal for a drawn cluster, checked against the invariants every plan
    keeps (check_invariants)."""
    brokers, layout = cluster
    proposal = plan_rebalance(partitions=layout, brokers=brokers)
    check_invariants(brokers, layout, proposal)
    return proposal


@PROPERTY_SETTINGS
@given(clusters(racks="none"))
def test_property_without_racks_evens_replicas_to_within_one(cluster) -> None:
    proposal = planned(cluster)
    assert proposal.after.replica_spread <= 1
    assert proposal.after.replica_stddev <= proposal.before.replica_stddev + 1e-9
    assert proposal.after.leader_spread <= max(proposal.before.leader_spread, 1)


@PROPERTY_SETTINGS
@given(clusters(racks="distinct"))
def test_property_with_a_rack_per_broker_evens_replicas(cluster) -> None:
    proposal = planned(cluster)
    assert proposal.after.replica_spread <= 1
    assert proposal.after.leader_spread <= max(proposal.before.leader_spread, 1)


@PROPERTY_SETTINGS
@given(clusters(racks="shared"))
def test_property_with_shared_racks_never_reduces_rack_diversity(cluster) -> None:
    proposal = planned(cluster)
    assert proposal.after.rack_deficient_partitions <= proposal.before.rack_deficient_partitions
    if proposal.before.rack_deficient_partitions == 0:
        # Rack fixes may cost balance; without any, balance only improves.
        assert proposal.after.replica_stddev <= proposal.before.replica_stddev + 1e-9


@PROPERTY_SETTINGS
@given(clusters(racks="shared"))
def test_property_planning_a_planned_cluster_changes_nothing(cluster) -> None:
    brokers, layout = cluster
    result = apply(layout, plan_rebalance(partitions=layout, brokers=brokers))
    assert plan_rebalance(partitions=result, brokers=brokers).diffs == ()


@PROPERTY_SETTINGS
@given(clusters(racks="none"), st.data())
def test_property_excluded_brokers_end_empty(cluster, data) -> None:
    brokers, layout = cluster
    widest = max((len(r) for r in layout.values()), default=0)
    spare = len(brokers) - max(widest, 1)
    excluded = data.draw(st.lists(st.sampled_from(sorted(brokers)), max_size=spare, unique=True))
    proposal = plan_rebalance(partitions=layout, brokers=brokers, exclude=excluded)
    result = check_invariants(brokers, layout, proposal, excluded)
    assert all(not set(reps) & set(excluded) for reps in result.values())
    assert proposal.after.replica_spread <= 1

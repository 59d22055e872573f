"""Replica placement: Kafka's rack-unaware and rack-aware assignment, as properties."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from weir.metadata.errors import InvalidPartitionsError, InvalidReplicationFactorError
from weir.metadata.placement import (
    assign_new_partitions,
    assign_replicas,
    rack_alternated_brokers,
)


def test_matches_kafkas_documented_rack_aware_example() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]
    assert assign_replicas(
        partitions=7, replication_factor=3, brokers=list(racks.items()), start_index=0
    ) == [[0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3], [0, 4, 2]]


def test_matches_kafkas_documented_rack_unaware_example() -> None:
    assignment = assign_replicas(
        partitions=10, replication_factor=3, brokers=[(b, None) for b in range(5)], start_index=0
    )
    assert assignment[:5] == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 0], [4, 0, 1]]
    assert assignment[5:] == [[0, 2, 3], [1, 3, 4], [2, 4, 0], [3, 0, 1], [4, 1, 2]]


@pytest.mark.parametrize("seed", range(30))
def test_rack_unaware_properties(seed: int) -> None:
    rng = random.Random(seed)
    brokers = [(b, None) for b in rng.sample(range(100), rng.randint(1, 9))]
    rf = rng.randint(1, len(brokers))
    partitions = rng.randint(1, 60)
    assignment = assign_replicas(
        partitions=partitions, replication_factor=rf, brokers=brokers, rng=rng
    )
    assert len(assignment) == partitions
    ids = {b for b, _ in brokers}
    for replicas in assignment:
        assert len(replicas) == rf and len(set(replicas)) == rf  # never twice on one broker
        assert set(replicas) <= ids
    n = len(brokers)
    leaders = Counter(r[0] for r in assignment)
    replicas_per_broker = Counter(b for r in assignment for b in r)
    if partitions % n == 0:  # leaders and replicas spread exactly evenly
        assert set(leaders.values()) == {partitions // n}
        assert set(replicas_per_broker.values()) == {partitions * rf // n}
    else:
        assert max(leaders.values()) - min(leaders.get(b, 0) for b in ids) <= 1


@pytest.mark.parametrize("seed", range(30))
def test_rack_aware_spreads_replicas_over_racks(seed: int) -> None:
    rng = random.Random(seed)
    num_racks = rng.randint(2, 4)
    per_rack = rng.randint(1, 3)
    brokers = [(r * 10 + i, f"rack{r}") for r in range(num_racks) for i in range(per_rack)]
    rack_of = dict(brokers)
    rf = rng.randint(1, len(brokers))
    partitions = len(brokers) * rng.randint(1, 4)
    assignment = assign_replicas(
        partitions=partitions, replication_factor=rf, brokers=brokers, rng=rng
    )
    for replicas in assignment:
        assert len(set(replicas)) == rf
        racks_used = [rack_of[b] for b in replicas]
        # every rack gets a replica before any rack gets a second one
        assert len(set(racks_used)) == min(rf, num_racks)
    leaders = Counter(r[0] for r in assignment)
    assert set(leaders.values()) == {partitions // len(brokers)}  # equal racks: even leaders
    if rf == num_racks:
        counts = Counter(b for r in assignment for b in r)
        assert set(counts.values()) == {partitions * rf // len(brokers)}


def test_racks_are_ignored_unless_every_broker_has_one() -> None:
    brokers = [(1, "a"), (2, None), (3, "b")]
    assignment = assign_replicas(partitions=3, replication_factor=2, brokers=brokers, start_index=0)
    assert assignment == [[1, 2], [2, 3], [3, 1]]


def test_new_partitions_continue_from_the_existing_assignment() -> None:
    brokers = [(b, None) for b in range(1, 5)]
    existing = assign_replicas(partitions=4, replication_factor=2, brokers=brokers, start_index=1)
    added = assign_new_partitions(existing=existing, count=4, brokers=brokers)
    together = assign_replicas(partitions=8, replication_factor=2, brokers=brokers, start_index=1)
    assert existing + added == together
    assert all(len(r) == 2 for r in added)


def test_errors_use_kafkas_wording() -> None:
    brokers = [(1, None)]
    with pytest.raises(InvalidPartitionsError, match="Number of partitions must be larger"):
        assign_replicas(partitions=0, replication_factor=1, brokers=brokers)
    with pytest.raises(InvalidReplicationFactorError, match="must be larger than 0"):
        assign_replicas(partitions=1, replication_factor=0, brokers=brokers)
    with pytest.raises(
        InvalidReplicationFactorError,
        match=r"Replication factor: 3 larger than available brokers: 1\.",
    ):
        assign_replicas(partitions=1, replication_factor=3, brokers=brokers)

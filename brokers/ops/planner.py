"""The rebalance planner: a minimal set of replica moves that evens out a cluster.

Theory of operation
-------------------
Pure code: the input is what the metadata image says (partition → replica list, first replica
= preferred leader; live brokers with their racks), the output a :class:`Proposal` — the
changed partitions (current → proposed replica list) and distribution statistics before and
after. No I/O, no clock, so property tests drive it with random clusters.

The goals are Cruise Control's, in priority order; a later goal never undoes an earlier one:

1. **Excluded brokers** (decommissioning, or dead ones the operator names): every replica on
   one moves to an eligible broker, preferring a rack the partition lacks, then the broker with
   the fewest replicas. Replicas on dead brokers that are *not* excluded stay where they are
   (the broker may come back) and such brokers are neither a source nor a destination.
2. **Rack awareness** (RackAwareGoal): a partition should span ``min(RF, racks)`` racks. A
   replica whose rack holds another replica of the partition moves to the least-loaded broker
   of a rack the partition lacks. As in Kafka's placement, racks count only when every
   eligible broker has one; otherwise each broker is its own rack.
3. **Replica distribution** (ReplicaDistributionGoal): while some broker holds at least two
   replicas more than another, one replica moves from the most loaded broker that can give
   to the least loaded one that can take (never onto a broker that already holds the
   partition, never lowering the partition's rack count). Followers move before preferred
   leaders. Each move lowers the sum of squared counts, so this ends; when racks do not
   constrain the moves it ends with max - min ≤ 1.
4. **Leader distribution** (LeaderReplicaDistributionGoal): preferred leaders are evened out
   by *reordering* replica lists, which copies no data. A chain of reorders (an augmenting
   path: u hands a partition to v, v hands another to w, ...) moves one leadership from a
   broker with ``c`` leaders to one with at most ``c - 2``; when no such path exists the leader
   counts are as even as the replica sets allow.

A balanced cluster therefore yields no change at all, and each goal touches only what it
must: that is the "minimal" in minimal moves (greedy, not an optimal solver).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "DistributionStats",
    "PartitionDiff",
    "PlanError",
    "Proposal",
    "distribution",
    "plan_rebalance",
    "rack_count",
]

PartitionKey = tuple[str, int]


class PlanError(ValueError):
    """No valid plan exists (e.g. a replication factor above the eligible broker count)."""


@dataclass(frozen=True, slots=True)
class PartitionDiff:
    """One partition moving from its ``current`` to its ``proposed`` replicas: a step of a
    plan, or a reassignment being throttled."""

    topic: str
    partition: int
    current: tuple[int, ...]
    proposed: tuple[int, ...]

    @property
    def moves(self) -> int:
        """Replicas that must be copied to a new broker (a reorder copies nothing)."""
        return len(set(self.proposed) - set(self.current))

    @property
    def leader_change(self) -> bool:
        return self.current[:1] != self.proposed[:1]

    def to_dict(self) -> dict[str, object]:
        """The partition's move as the API and the stored rebalance plan show it."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "current_replicas": list(self.current),
            "proposed_replicas": list(self.proposed),
            "moves": self.moves,
        }


@dataclass(frozen=True, slots=True)
class DistributionStats:
    """Replica and preferred-leader counts per eligible broker, and how even they are."""

    replicas: Mapping[int, int]
    leaders: Mapping[int, int]
    replica_stddev: float
    leader_stddev: float
    replica_spread: int
    leader_spread: int
    rack_deficient_partitions: int

    def to_dict(self) -> dict[str, object]:
        return {
            "replicas_per_broker": {str(b): n for b, n in sorted(self.replicas.items())},
            "leaders_per_broker": {str(b): n for b, n in sorted(self.leaders.items())},
            "replica_stddev": round(self.replica_stddev, 4),
            "leader_stddev": round(self.leader_stddev, 4),
            "replica_spread": self.replica_spread,
            "leader_spread": self.leader_spread,
            "rack_deficient_partitions": self.rack_deficient_partitions,
        }


@dataclass(frozen=True, slots=True)
class Proposal:
    diffs: tuple[PartitionDiff, ...]
    before: DistributionStats
    after: DistributionStats

    @property
    def replica_moves(self) -> int:
        return sum(d.moves for d in self.diffs)

    @property
    def leader_changes(self) -> int:
        return sum(1 for d in self.diffs if d.leader_change)

    def proposed(self) -> dict[PartitionKey, tuple[int, ...]]:
        return {(d.topic, d.partition): d.proposed for d in self.diffs}


class _Racks:
    """Rack of each broker; each broker is its own rack unless every eligible one has one."""

    def __init__(self, brokers: Mapping[int, str | None], eligible: Collection[int]) -> None:
        self._aware = bool(eligible) and all(brokers.get(b) for b in eligible)
        self._brokers = brokers
        self.count = len({self.of(b) for b in eligible})

    def of(self, broker: int) -> str:
        rack = self._brokers.get(broker) if self._aware else None
        return f"rack:{rack}" if rack else f"broker:{broker}"

    def used(self, replicas: Iterable[int]) -> set[str]:
        return {self.of(b) for b in replicas}


def rack_count(replicas: Sequence[int], brokers: Mapping[int, str | None]) -> int:
    """Distinct racks of ``replicas`` under the planner's rule (for tests and reports)."""
    racks = _Racks(brokers, [b for b in brokers])
    return len(racks.used(replicas))


def distribution(
    partitions: Mapping[PartitionKey, Sequence[int]],
    brokers: Mapping[int, str | None],
    eligible: Collection[int] | None = None,
) -> DistributionStats:
    """Counts and spread of replicas and preferred leaders over ``eligible`` brokers."""
    chosen = sorted(brokers if eligible is None else eligible)
    racks = _Racks(brokers, chosen)
    replicas = dict.fromkeys(chosen, 0)
    leaders = dict.fromkeys(chosen, 0)
    deficient = 0
    for reps in partitions.values():
        for broker in reps:
            if broker in replicas:
                replicas[broker] += 1
        if reps and reps[0] in leaders:
            leaders[reps[0]] += 1
        if len(racks.used(reps)) < min(len(reps), racks.count):
            deficient += 1
    return DistributionStats(
        replicas=replicas,
        leaders=leaders,
        replica_stddev=statistics.pstdev(replicas.values()) if replicas else 0.0,
        leader_stddev=statistics.pstdev(leaders.values()) if leaders else 0.0,
        replica_spread=(max(replicas.values()) - min(replicas.values())) if replicas else 0,
        leader_spread=(max(leaders.values()) - min(leaders.values())) if leaders else 0,
        rack_deficient_partitions=deficient,
    )


class _Plan:
    """Mutable working state of one planning run."""

    def __init__(
        self,
        partitions: Mapping[PartitionKey, Sequence[int]],
        brokers: Mapping[int, str | None],
        eligible: set[int],
    ) -> None:
        self.replicas: dict[PartitionKey, list[int]] = {
            key: list(reps) for key, reps in partitions.items()
        }
        self.eligible = eligible
        self.racks = _Racks(brokers, eligible)
        self.hosted: dict[int, set[PartitionKey]] = {b: set() for b in eligible}
        for key, reps in self.replicas.items():
            for broker in reps:
                if broker in self.hosted:
                    self.hosted[broker].add(key)

    def load(self, broker: int) -> int:
        return len(self.hosted[broker])

    def rack_count(self, reps: Iterable[int]) -> int:
        return len(self.racks.used(reps))

    def desired_racks(self, key: PartitionKey) -> int:
        return min(len(self.replicas[key]), self.racks.count)

    def move(self, key: PartitionKey, source: int, target: int) -> None:
        reps = self.replicas[key]
        reps[reps.index(source)] = target
        if source in self.hosted:
            self.hosted[source].discard(key)
        self.hosted[target].add(key)

    # goal 1 ----------------------------------------------------------------------------
    def evacuate(self, excluded: set[int]) -> None:
        for key in sorted(self.replicas):
            for broker in list(self.replicas[key]):
                if broker not in excluded:
                    continue
                reps = self.replicas[key]
                others = [b for b in reps if b != broker]
                used = self.racks.used(others)
                targets = [b for b in self.eligible if b not in reps]
                if not targets:
                    raise PlanError(
                        f"partition {key[0]}-{key[1]} has {len(reps)} replicas but only "
                        f"{len(self.eligible)} eligible brokers remain"
                    )
                target = min(targets, key=lambda b: (self.racks.of(b) in used, self.load(b), b))
                self.move(key, broker, target)

    # goal 2 ----------------------------------------------------------------------------
    def spread_racks(self) -> None:
        for key in sorted(self.replicas):
            while self.rack_count(self.replicas[key]) < self.desired_racks(key):
                reps = self.replicas[key]
                used = self.racks.used(reps)
                per_rack: dict[str, int] = {}
                for b in reps:
                    per_rack[self.racks.of(b)] = per_rack.get(self.racks.of(b), 0) + 1
                sources = [
                    (i, b)
                    for i, b in enumerate(reps)
                    if b in self.eligible and per_rack[self.racks.of(b)] > 1
                ]
                targets = [
                    b for b in self.eligible if b not in reps and self.racks.of(b) not in used
                ]
                if not sources or not targets:
                    break
                _, source = min(sources, key=lambda s: (s[0] == 0, -self.load(s[1]), s[1]))
                target = min(targets, key=lambda b: (self.load(b), b))
                self.move(key, source, target)

    # goal 3 ----------------------------------------------------------------------------
    def even_replicas(self) -> None:
        while self._one_replica_move():
            pass

    def _one_replica_move(self) -> bool:
        by_load = sorted(self.eligible, key=lambda b: (-self.load(b), b))
        for source in by_load:
            for target in reversed(by_load):
                if self.load(source) - self.load(target) < 2:
                    break
                key = self._movable(source, target)
                if key is not None:
                    self.move(key, source, target)
                    return True
        return False

    def _movable(self, source: int, target: int) -> PartitionKey | None:
        best: tuple[bool, PartitionKey] | None = None
        for key in self.hosted[source]:
            reps = self.replicas[key]
            if target in reps:
                continue
            after = [target if b == source else b for b in reps]
            if self.rack_count(after) < self.rack_count(reps):
                continue
            rank = (reps[0] == source, key)
            if best is None or rank < best:
                best = rank
        return None if best is None else best[1]

    # goal 4 ----------------------------------------------------------------------------
    def even_leaders(self) -> None:
        while self._one_leader_path():
            pass

    def _leaders(self) -> tuple[dict[int, int], dict[int, list[PartitionKey]]]:
        counts = dict.fromkeys(self.eligible, 0)
        led: dict[int, list[PartitionKey]] = {b: [] for b in self.eligible}
        for key in sorted(self.replicas):
            reps = self.replicas[key]
            if reps and reps[0] in counts:
                counts[reps[0]] += 1
                led[reps[0]].append(key)
        return counts, led

    def _one_leader_path(self) -> bool:
        counts, led = self._leaders()
        for source in sorted(self.eligible, key=lambda b: (-counts[b], b)):
            parent: dict[int, tuple[int, PartitionKey]] = {}
            seen = {source}
            queue = deque([source])
            best: int | None = None
            while queue:
                u = queue.popleft()
                for key in led[u]:
                    for v in self.replicas[key][1:]:
                        if v in seen or v not in self.eligible:
                            continue
                        seen.add(v)
                        parent[v] = (u, key)
                        queue.append(v)
                        if counts[v] <= counts[source] - 2 and (
                            best is None or (counts[v], v) < (counts[best], best)
                        ):
                            best = v
            if best is None:
                continue
            node = best
            while node != source:
                u, key = parent[node]
                reps = self.replicas[key]
                i = reps.index(node)
                reps[0], reps[i] = reps[i], reps[0]
                node = u
            return True
        return False


def plan_rebalance(
    *,
    partitions: Mapping[PartitionKey, Sequence[int]],
    brokers: Mapping[int, str | None],
    exclude: Collection[int] = (),
) -> Proposal:
    """A proposal that evens out ``partitions`` over the live ``brokers`` (broker → rack).

    ``exclude`` names brokers that must end with no replicas (live or not).
    """
    excluded = set(exclude)
    eligible = {b for b in brokers if b not in excluded}
    if not eligible:
        raise PlanError("no eligible broker: every live broker is excluded")
    widest = max((len(r) for r in partitions.values()), default=0)
    if widest > len(eligible):
        raise PlanError(
            f"a partition has {widest} replicas but only {len(eligible)} eligible brokers "
            f"exist ({sorted(eligible)})"
        )
    for key, reps in partitions.items():
        if len(set(reps)) != len(reps):
            raise PlanError(f"partition {key[0]}-{key[1]} lists a broker twice: {list(reps)}")
    before = distribution(partitions, brokers, eligible)
    plan = _Plan(partitions, brokers, eligible)
    plan.evacuate(excluded)
    plan.spread_racks()
    plan.even_replicas()
    plan.even_leaders()
    proposed = {key: tuple(reps) for key, reps in plan.replicas.items()}
    diffs = tuple(
        PartitionDiff(topic=key[0], partition=key[1], current=tuple(partitions[key]), proposed=new)
        for key, new in sorted(proposed.items())
        if new != tuple(partitions[key])
    )
    return Proposal(diffs=diffs, before=before, after=distribution(proposed, brokers, eligible))

"""Invariant 5: at no moment do two members of a group own the same partition.

Simulated eager consumers (range assignor: revoke everything before JoinGroup, take the
SyncGroup assignment) drive a ``Group`` through joins, crashes, leaves, static restarts and
operator rebalances on a fake clock; after every step no partition may have two owners.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import Driver
from weir.coordinator import JoinResponse, MemberIdentity, Pending, SyncResponse
from weir.coordinator.consumer_protocol import Assignment, decode_assignment, encode_assignment

E = ErrorCode
PARTITIONS = 12
STEP_MS = 1_000


@dataclass
class Consumer:
    name: str
    instance_id: str | None
    member_id: str = ""
    generation: int = -1
    phase: str = "join"  # join | joining | syncing | stable | dead
    ticket: int | None = None
    owned: set[int] = field(default_factory=set)
    since_heartbeat: int = 0

    def revoke(self) -> None:
        self.owned.clear()


def _range_assign(member_ids: list[str]) -> dict[str, bytes]:
    ordered = sorted(member_ids)
    out: dict[str, list[int]] = {m: [] for m in ordered}
    for p in range(PARTITIONS):
        out[ordered[p * len(ordered) // PARTITIONS]].append(p)
    return {m: encode_assignment(Assignment((("t", tuple(ps)),))) for m, ps in out.items()}


class Simulation:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.driver = Driver()
        self.consumers: list[Consumer] = []
        self.started = 0
        self.fully_owned_steps = 0

    def spawn(self, instance_id: str | None = None) -> None:
        self.started += 1
        self.consumers.append(Consumer(f"c{self.started}", instance_id))

    def step(self) -> None:
        self.driver.advance(STEP_MS)
        self.check()
        for consumer in self.rng.sample(self.consumers, len(self.consumers)):
            if consumer.phase != "dead":
                self.act(consumer)
                self.check()
        self.chaos()
        self.check()
        if sum(len(c.owned) for c in self.consumers if c.phase != "dead") == PARTITIONS:
            self.fully_owned_steps += 1

    def act(self, c: Consumer) -> None:
        d = self.driver
        if c.phase == "join":
            c.revoke()  # eager: give everything up before JoinGroup
            self.on_join(c, d.join(c.member_id, instance_id=c.instance_id, client_id=c.name))
        elif c.phase in ("joining", "syncing"):
            assert c.ticket is not None
            response = d.responses.get(c.ticket)  # None: still parked
            if isinstance(response, JoinResponse):
                assert c.phase == "joining"
                self.on_join(c, response)
            elif isinstance(response, SyncResponse):
                assert c.phase == "syncing"
                self.on_sync(c, response)
        elif c.phase == "stable":
            c.since_heartbeat += 1
            if c.since_heartbeat >= 3:
                c.since_heartbeat = 0
                error = d.heartbeat(c.member_id, c.generation, instance_id=c.instance_id)
                if error is not E.none:
                    self.rejoin(c, error)

    def rejoin(self, c: Consumer, error: ErrorCode) -> None:
        c.revoke()
        c.phase = "join"
        if error in (E.unknown_member_id, E.illegal_generation):
            c.member_id = "" if error is E.unknown_member_id else c.member_id
        if error is E.fenced_instance_id:
            c.phase = "dead"

    def on_join(self, c: Consumer, reply: JoinResponse | Pending) -> None:
        if isinstance(reply, Pending):
            c.phase, c.ticket = "joining", reply.ticket
            return
        if reply.error is E.member_id_required:
            c.member_id, c.phase = reply.member_id, "join"
            return
        if reply.error is not E.none:
            self.rejoin(c, reply.error)
            return
        c.member_id, c.generation = reply.member_id, reply.generation_id
        assignments = {}
        if reply.leader == c.member_id and reply.members:
            assignments = _range_assign([m.member_id for m in reply.members])
        sync = self.driver.sync(c.member_id, c.generation, assignments, instance_id=c.instance_id)
        if isinstance(sync, Pending):
            c.phase, c.ticket = "syncing", sync.ticket
        else:
            self.on_sync(c, sync)

    def on_sync(self, c: Consumer, response: SyncResponse) -> None:
        if response.error is not E.none:
            self.rejoin(c, response.error)
            return
        (assigned,) = decode_assignment(response.assignment).partitions or (("t", ()),)
        c.owned = set(assigned[1])
        c.phase, c.since_heartbeat = "stable", 0

    def chaos(self) -> None:
        roll = self.rng.random()
        alive = [c for c in self.consumers if c.phase != "dead"]
        if roll < 0.02 and alive:
            victim = self.rng.choice(alive)  # process crash: partitions die with it
            victim.revoke()
            victim.phase = "dead"
            if victim.instance_id is not None and self.rng.random() < 0.7:
                self.spawn(victim.instance_id)  # the same host comes back
        elif roll < 0.04 and alive:
            leaver = self.rng.choice([c for c in alive if c.member_id] or alive)
            if leaver.member_id:
                leaver.revoke()
                self.driver.leave(MemberIdentity(leaver.member_id, leaver.instance_id))
                leaver.phase = "dead"
        elif roll < 0.06 and len(alive) < 6:
            self.spawn(f"host-{self.started}" if self.rng.random() < 0.5 else None)
        elif roll < 0.07:
            self.driver.force_rebalance()

    def check(self) -> None:
        seen: dict[int, str] = {}
        for c in self.consumers:
            if c.phase == "dead":
                continue
            for p in c.owned:
                assert p not in seen, f"partition {p} owned by {seen[p]} and {c.name}"
                seen[p] = c.name


@pytest.mark.parametrize("seed", range(8))
def test_no_partition_ever_has_two_owners(seed: int) -> None:
    sim = Simulation(seed)
    for index in range(3):
        sim.spawn("host-static" if index == 0 else None)
    for _ in range(600):
        sim.step()
    # The simulation really exercised the protocol: many generations, and most of the time
    # every partition had its (single) owner.
    assert sim.driver.group.generation_id > 10
    assert sim.fully_owned_steps > 200

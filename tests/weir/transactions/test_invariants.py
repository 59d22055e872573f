"""Random histories on a fake clock: what is logged is what a new coordinator loads, an
acknowledged outcome is never reversed, epochs only grow, and everything finishes.

Simulated producers (one per transactional id) send InitProducerId, AddPartitionsToTxn and
EndTxn in random order; writes and markers are answered late, out of order and sometimes
with errors; time jumps past transaction timeouts and id expiry; the coordinator sometimes
fails over (a new shard loads the acknowledged records, unanswered writes are lost). After
every step:

* every id with no write in flight is exactly what replaying the log gives (a failed fence
  may leave the epoch one ahead in memory, never behind);
* once a producer heard NONE for a commit (abort), no marker of the opposite outcome is
  ever sent for that transaction, and it ends CompleteCommit (CompleteAbort);
* the epoch of a producer id in the log never goes down (a write that failed may have
  used an epoch a later one uses again: it was never given to anyone);

and at the end, with every write and marker answered, no transaction is left half done.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.transactions.harness import Driver
from weir.transactions import (
    InitProducerIdResult,
    Pending,
    SendMarkers,
    TransactionConfig,
    TransactionRecord,
    TransactionShard,
    TransactionState,
    decode,
    replay,
)

E = ErrorCode
S = TransactionState
IDS = ("alpha", "beta", "gamma")
PARTITIONS = [("t", i) for i in range(4)]
CONFIG = TransactionConfig(max_timeout_ms=30_000, id_expiration_ms=120_000)
WRITE_ERRORS = [E.not_enough_replicas, E.not_leader_or_follower, E.request_timed_out]
MARKER_ERRORS = [E.not_leader_or_follower, E.request_timed_out, E.not_enough_replicas]


@dataclass
class Client:
    """A producer's own view: its producer id and epoch, and what it is waiting for."""

    tid: str
    producer: InitProducerIdResult | None = None
    waiting: dict[int, tuple[str, bool]] = field(default_factory=dict)


class Simulation:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.driver = Driver(config=CONFIG, auto_persist=False, auto_markers=False)
        self.clients = {tid: Client(tid) for tid in IDS}
        # tid -> the outcome a producer was told (True commit, False abort) until it completes
        self.promised: dict[str, bool] = {}
        self.max_epoch: dict[tuple[str, int], int] = {}
        self.checked_writes = 0
        self.checked_markers = 0
        self.failovers = 0

    # -- producers ------------------------------------------------------------------------
    def request(self, client: Client) -> None:
        d = self.driver
        if client.producer is None or self.rng.random() < 0.1:
            kip360 = client.producer is not None and self.rng.random() < 0.5
            ids = (
                {
                    "producer_id": client.producer.producer_id,
                    "producer_epoch": client.producer.producer_epoch,
                }
                if kip360 and client.producer is not None
                else {}
            )
            outcome = d.shard.init_producer_id(
                client.tid,
                timeout_ms=self.rng.choice([10_000, 30_000]),
                now_ms=d.now,
                **ids,
            )
            self.settle(client, outcome.reply, ("init", False))
            d.run(outcome.effects)
            return
        producer = client.producer
        if self.rng.random() < 0.6:
            outcome = d.shard.add_partitions(
                client.tid,
                producer_id=producer.producer_id,
                producer_epoch=producer.producer_epoch,
                partitions=self.rng.sample(PARTITIONS, self.rng.randint(1, 2)),
                now_ms=d.now,
            )
            self.settle(client, outcome.reply, ("add", False))
        else:
            commit = self.rng.random() < 0.6
            outcome = d.shard.end_txn(
                client.tid,
                producer_id=producer.producer_id,
                producer_epoch=producer.producer_epoch,
                commit=commit,
                now_ms=d.now,
            )
            self.settle(client, outcome.reply, ("end", commit))
        d.run(outcome.effects)

    def settle(self, client: Client, reply: object, what: tuple[str, bool]) -> None:
        if isinstance(reply, Pending):
            client.waiting[reply.ticket] = what
        else:
            self.answered(client, reply, what)

    def answered(self, client: Client, reply: object, what: tuple[str, bool]) -> None:
        kind, commit = what
        if isinstance(reply, InitProducerIdResult):
            if reply.error is E.none:
                client.producer = reply
            elif reply.error is E.producer_fenced:
                client.producer = None  # a fenced producer is closed and a new one starts
            return
        if reply is E.producer_fenced:
            client.producer = None
        elif kind == "end" and reply is E.none:
            meta = self.driver.meta(client.tid)
            promised = self.promised.get(client.tid)
            if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                assert promised in (None, commit), (client.tid, promised, commit)
                self.promised[client.tid] = commit

    def collect_replies(self) -> None:
        for client in self.clients.values():
            for ticket in [t for t in client.waiting if t in self.driver.replies]:
                self.answered(client, self.driver.replies.pop(ticket), client.waiting.pop(ticket))

    # -- the coordinator's environment ------------------------------------------------------
    def answer_write(self) -> None:
        d = self.driver
        write = d.writes.pop(self.rng.randrange(len(d.writes)))
        error = self.rng.choice(WRITE_ERRORS) if self.rng.random() < 0.2 else E.none
        d.persist(write, error)
        if error is E.not_leader_or_follower:
            self.fail_over()  # the partition's leadership moved: this coordinator unloads

    def answer_markers(self) -> None:
        d = self.driver
        send = d.markers.pop(self.rng.randrange(len(d.markers)))
        results = {
            tp: self.rng.choice(MARKER_ERRORS) if self.rng.random() < 0.2 else E.none
            for tp in send.partitions
        }
        d.run(d.shard.markers_written(send.transactional_id, results, now_ms=d.now))

    def fail_over(self) -> None:
        """The coordinator dies: unanswered writes and markers are lost, a new one loads."""
        d = self.driver
        self.failovers += 1
        d.writes.clear()
        d.markers.clear()
        for client in self.clients.values():
            client.waiting.clear()
        d.shard, effects = TransactionShard.load(
            d.log,
            coordinator_epoch=d.shard.coordinator_epoch + 1,
            allocate_producer_id=lambda: next(d.ids),
            now_ms=d.now,
            config=CONFIG,
        )
        d.run(effects)

    def step(self) -> None:
        d = self.driver
        roll = self.rng.random()
        if roll < 0.35:
            self.request(self.clients[self.rng.choice(IDS)])
        elif roll < 0.6 and d.writes:
            self.answer_write()
        elif roll < 0.8 and d.markers:
            self.answer_markers()
        elif roll < 0.9:
            d.now += self.rng.randint(0, 15_000)
            d.run(d.shard.abort_timed_out(d.now))
            d.run(d.shard.expire_transactional_ids(d.now))
        elif roll < 0.93:
            self.fail_over()
        self.collect_replies()
        self.check()

    # -- invariants ---------------------------------------------------------------------------
    def check(self) -> None:
        d = self.driver
        for send in d.sent_markers[self.checked_markers :]:
            self.check_marker(send)
        self.checked_markers = len(d.sent_markers)
        for key, raw in d.log[self.checked_writes :]:
            record = decode(key, raw)
            assert isinstance(record, TransactionRecord)
            if record.value is not None:
                owner = (record.transactional_id, record.value.producer_id)
                assert record.value.producer_epoch >= self.max_epoch.get(owner, -1), record
                self.max_epoch[owner] = record.value.producer_epoch
        self.checked_writes = len(d.log)
        logged = replay(d.log)
        for tid in IDS:
            meta = d.shard.get(tid)
            if meta is None:
                assert tid not in logged, tid
                continue
            if meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.EMPTY):
                self.promised.pop(tid, None)
            if meta.pending_state is not None:
                continue
            value = logged.get(tid)
            if value is None:  # created by an InitProducerId whose write failed
                assert (meta.state, meta.producer_epoch) == (S.EMPTY, -1), meta
                continue
            assert (meta.producer_id, meta.state, meta.partitions) == (
                value.producer_id,
                value.state,
                value.partitions,
            ), (meta, value)
            assert (meta.start_timestamp_ms, meta.timeout_ms) == (
                value.start_timestamp_ms,
                value.timeout_ms,
            )
            lead = 1 if meta.has_failed_epoch_fence else 0
            assert value.producer_epoch <= meta.producer_epoch <= value.producer_epoch + lead

    def check_marker(self, send: SendMarkers) -> None:
        promised = self.promised.get(send.transactional_id)
        assert promised in (None, send.commit), (send, promised)

    def drain(self) -> None:
        """Answer everything successfully until nothing is left to do."""
        d = self.driver
        for _ in range(1_000):
            if not d.writes and not d.markers:
                break
            while d.writes:
                d.persist(d.writes.pop(0))
            while d.markers:
                send = d.markers.pop(0)
                results = dict.fromkeys(send.partitions, E.none)
                d.run(d.shard.markers_written(send.transactional_id, results, now_ms=d.now))
            self.collect_replies()
            self.check()
        for tid in IDS:
            meta = d.shard.get(tid)
            if meta is not None:
                assert meta.pending_state is None, meta
                assert meta.state not in (S.PREPARE_COMMIT, S.PREPARE_ABORT), meta
        assert not self.promised, self.promised


@pytest.mark.parametrize("seed", range(30))
def test_random_histories_keep_the_invariants(seed: int) -> None:
    sim = Simulation(seed)
    for _ in range(300):
        sim.step()
    sim.drain()


def test_histories_reach_every_state() -> None:
    """The simulation is worth something only if it gets everywhere."""
    seen: set[TransactionState] = set()
    failovers = 0
    for seed in range(30):
        sim = Simulation(seed)
        for _ in range(300):
            sim.step()
            for tid in IDS:
                meta = sim.driver.shard.get(tid)
                if meta is not None:
                    seen.add(meta.state)
        failovers += sim.failovers
    assert seen >= {
        S.EMPTY,
        S.ONGOING,
        S.PREPARE_COMMIT,
        S.PREPARE_ABORT,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    }
    assert failovers > 0

"""Jepsen-style tests of Weir on a Redis Sentinel deployment (issue 17, "How we will know").

Three real ``redis-server`` processes and three sentinels (``sentinel_deployment``), three
real brokers pointed at them with a ``redis+sentinel://`` URL, and an idempotent
``acks=all`` producer (``KeyedWriter``) running through one fault per test:

* ``test_primary_killed``: SIGKILL the Redis primary; the sentinels promote a replica;
* ``test_primary_paused_past_down_after``: SIGSTOP the primary until the sentinels have
  promoted another, then SIGCONT it: it must come back as a replica, refuse writes while it
  still thinks it is primary, and nothing it held alone may show up afterwards;
* ``test_primary_restarted_from_aof``: SIGKILL the primary and restart it at once from its
  append-only file, before the sentinels call it down: no metadata may be lost.

After the fault every test requires the same things (``Run.after_fault``/``Run.finish``): a
new topic can be created and produced to; kill -9 of the load topic's leader elects a new
leader that takes the load; the final read holds every acknowledged record exactly once;
the controller epochs sampled from the sentinels' primary every ~100 ms and the brokers'
logs show one controller at a time with strictly increasing epochs; and every metadata write
a broker logged as done (leader elections, ISR changes, registrations, topic creations) is
still in Redis' metadata log at the end (``tests/weir/cluster/redis_history.py``).

All problems of a run are collected and reported together, with the broker logs and the
deployment's state, so one failing run tells the whole story.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

import pytest
import redis

from tests.sentinel import ReplicatedRedisServer, SentinelDeployment
from tests.weir.cluster.conftest import SESSION_TIMEOUT_MS, Cluster, ClusterFactory, wait_until
from tests.weir.cluster.helpers import KeyedWriter, create_led_topic, produce_ok, values_of
from tests.weir.cluster.redis_history import (
    ConfigWriter,
    EpochSampler,
    StoredMetadata,
    check_nothing_forgotten,
    check_samples,
    check_single_controller,
    parse_logs,
    read_metadata,
)

pytestmark = pytest.mark.integration

# Acknowledged records to wait for between steps: enough batches to span each step.
PROGRESS = 200


@dataclass
class Run:
    """One cluster on the deployment with its load, its sampler and the problems found."""

    cluster: Cluster
    deployment: SentinelDeployment
    topic: str
    writer: KeyedWriter
    configs: ConfigWriter
    sampler: EpochSampler
    problems: list[str] = field(default_factory=list)
    # When the test killed a broker itself: before that, every broker was healthy.
    broker_killed_at: datetime | None = None

    def after_fault(self) -> None:
        """The load goes on; a new topic works; a killed leader is replaced (a failure says
        what the brokers and the deployment were doing)."""
        try:
            self._after_fault()
        except Exception as exc:
            raise AssertionError(
                f"after the fault: {exc!r}\n{self.deployment.describe()}\n{self.cluster.describe()}"
            ) from exc

    def _after_fault(self) -> None:
        cluster, topic = self.cluster, self.topic
        self.writer.wait_progress(PROGRESS, cluster)
        cluster.controller(30)  # writes resume once the new primary has a replica in sync
        created = cluster.create_topic("after-fault")
        produce_ok(cluster, created, [f"after-{i}".encode() for i in range(20)])
        before = cluster.wait_full_isr(topic)
        self.broker_killed_at = datetime.now()
        cluster.kill9(before.leader)
        cluster.wait_partition(
            topic,
            lambda p: p.leader not in (-1, before.leader) and p.leader_epoch > before.leader_epoch,
            timeout=SESSION_TIMEOUT_MS / 1000 + 10,
            what=f"a new leader after killing broker {before.leader}",
        )
        self.writer.wait_progress(PROGRESS, cluster)

    def finish(self) -> None:
        """Stop the load and the sampler; check everything; fail with every problem."""
        self.writer.stop()
        self.configs.stop()
        self.sampler.stop()
        self.problems += load_problems(self.writer, self.cluster.read_all(self.topic))
        self.problems += check_samples(self.sampler.samples)
        history = parse_logs({i: b.log_path for i, b in self.cluster.brokers.items()})
        self.problems += check_single_controller(history)
        # The checks above are vacuous without a history: the leader kill alone makes the
        # controller write an election, and the sampler runs throughout.
        if not (history.elections and history.writes and self.sampler.samples):
            self.problems.append(
                f"nothing to check: {len(history.elections)} elections, {len(history.writes)} "
                f"controller writes logged, {len(self.sampler.samples)} samples"
            )
        self.problems += check_nothing_forgotten(history, self.stored())
        # Redis switching or restarting is no reason to declare a healthy broker dead.
        self.problems += [
            f"a healthy broker was declared dead: {w.line}"
            for w in history.writes
            if w.why == "broker liveness"
            and (self.broker_killed_at is None or w.at < self.broker_killed_at)
        ]
        with self.deployment.primary().client() as client:
            self.problems += self.configs.problems(client, self.cluster.keys)
        assert not self.problems, (
            "\n".join(self.problems)
            + f"\nsamples: {len(self.sampler.samples)}, rounds without a primary: "
            f"{self.sampler.misses}, leases seen: {leases_seen(self.sampler)}\n"
            f"{self.deployment.describe()}\n{self.cluster.log_tails(80)}"
        )

    def stored(self) -> StoredMetadata:
        with self.deployment.primary().client() as client:
            return read_metadata(client, self.cluster.keys)


def leases_seen(sampler: EpochSampler) -> list[str | None]:
    seen: list[str | None] = []
    for sample in sampler.samples:
        if not seen or seen[-1] != sample.lease:
            seen.append(sample.lease)
    return seen


def load_problems(
    writer: KeyedWriter, records: list[tuple[int, bytes | None, bytes | None]]
) -> list[str]:
    """The final read against what the producer was told: nothing lost, nothing twice."""
    problems = []
    if writer.unflushed:
        problems.append(f"{writer.unflushed} records never delivered")
    if writer.failed:
        problems.append(f"{len(writer.failed)} delivery failures, e.g. {writer.failed[:3]}")
    fatal = [e for e in writer.client_errors if e.fatal()]
    if fatal:
        problems.append(f"fatal producer errors: {fatal}")
    values = values_of(records)
    duplicates = sorted(v for v, n in Counter(values).items() if n > 1)
    if duplicates:
        problems.append(f"{len(duplicates)} duplicated records, e.g. {duplicates[:5]}")
    offsets = {value: offset for offset, _, value in records}
    lost = [v for v in writer.acked if v not in offsets]
    if lost:
        problems.append(f"{len(lost)} of {len(writer.acked)} acknowledged records lost: {lost[:5]}")
    moved = [(v, o, offsets[v]) for v, o in writer.acked.items() if offsets.get(v, o) != o]
    if moved:
        problems.append(f"records not at their acknowledged offsets: {moved[:5]}")
    return problems


@pytest.fixture
def run(sentinel_deployment: SentinelDeployment, make_cluster: ClusterFactory) -> Iterator[Run]:
    """Three brokers on the Sentinel deployment, a load topic led by a broker that is not
    the controller, the record and config loads running and the epoch sampler started.
    (The deployment is set up first so it is torn down last: brokers stop quickly only
    while Redis is there.)"""
    wait_replicas_online(sentinel_deployment)
    cluster = make_cluster(redis_url=sentinel_deployment.url)
    sampler = EpochSampler(sentinel_deployment, cluster.keys)
    sampler.start()
    topic, _ = "load", create_led_topic(cluster, "load")
    writer = KeyedWriter(cluster.bootstrap(), topic)
    writer.start()
    configs = ConfigWriter(cluster.bootstrap(), topic)
    configs.start()
    try:
        writer.wait_progress(PROGRESS, cluster)
        yield Run(cluster, sentinel_deployment, topic, writer, configs, sampler)
    finally:
        writer.stop()
        configs.stop()
        sampler.stop()


def wait_replicas_online(deployment: SentinelDeployment) -> None:
    """Until both replicas are in sync with the primary (state ``online``), so that
    ``min-replicas-to-write`` lets it take writes. A connected replica is not enough: right
    after it connects, Redis holds its full sync back for ``repl-diskless-sync-delay`` (5 s)
    and refuses writes (NOREPLICAS) meanwhile."""

    def online() -> bool:
        info = role(deployment.primary())
        states = [info.get(f"slave{i}", {}).get("state") for i in range(2)]  # type: ignore[attr-defined]
        return states == ["online", "online"]

    wait_until(online, 20, lambda: f"replicas online\n{deployment.describe()}")


def role(server: ReplicatedRedisServer) -> dict[str, object]:
    with server.client() as client:
        return client.info("replication")


# 1 -------------------------------------------------------------------------------------------
def test_primary_killed(run: Run) -> None:
    """SIGKILL the Redis primary under load: a replica takes over, nothing is lost."""
    old = run.deployment.primary()
    run.deployment.kill(old)
    run.deployment.wait_for_failover(old)
    run.after_fault()
    run.finish()


# 2 -------------------------------------------------------------------------------------------
def test_primary_paused_past_down_after(run: Run) -> None:
    """SIGSTOP the primary until another is promoted, then SIGCONT it: it rejoins as a
    replica, refuses writes meanwhile, and what only it held does not come back."""
    deployment, keys = run.deployment, run.cluster.keys
    old = deployment.primary()
    marker = keys.key("isolated-write")
    deployment.pause(old)
    try:
        deployment.wait_for_failover(old)
        # The load keeps being acknowledged while the old primary is frozen.
        run.writer.wait_progress(PROGRESS, run.cluster)
    finally:
        deployment.resume(old)
    # At once, before the sentinels demote it: it still believes it is the primary, but no
    # replica follows it, so min-replicas-to-write must make it refuse the write.
    try:
        with old.client() as client:
            accepted = client.set(marker, "written while isolated")
        run.problems.append(f"the isolated old primary accepted a write ({accepted})")
    except redis.ResponseError as exc:  # NOREPLICAS, or READONLY once demoted
        assert "NOREPLICAS" in str(exc) or "READONLY" in str(exc), exc
    wait_until(
        lambda: (
            (info := role(old))["role"] == "slave"
            and info["master_port"] == deployment.primary_port()
            and info["master_link_status"] == "up"
        ),
        20,
        lambda: f"the old primary back as a replica\n{deployment.describe()}",
    )
    run.after_fault()
    for server in (deployment.primary(), old):
        with server.client() as client:
            if client.exists(marker):
                run.problems.append(f"the isolated write shows up on :{server.port}")
    run.finish()


# 3 -------------------------------------------------------------------------------------------
def test_primary_restarted_from_aof(run: Run) -> None:
    """kill -9 the primary and restart it from its AOF before the sentinels react: topics,
    epochs and registrations are all still there, and the cluster goes on."""
    deployment, cluster = run.deployment, run.cluster
    old = deployment.primary()
    before = run.stored()
    started = time.monotonic()
    deployment.kill(old)
    deployment.restart(old)
    down_for = time.monotonic() - started
    deployment.wait_settled()
    # (Its replicas sync from scratch: the restarted server has a new replication id.)
    wait_replicas_online(deployment)
    # The scenario is a restart, not a failover: the sentinels must still name this server.
    assert deployment.primary().port == old.port, (
        f"the sentinels failed over (down {down_for:.2f}s)\n{deployment.describe()}"
    )
    after = run.stored()
    missing = sorted(set(before.topics) - set(after.topics))
    if missing:
        run.problems.append(f"topics lost in the restart: {missing}")
    if after.controller_epoch < before.controller_epoch:
        run.problems.append(
            f"controller_epoch reset from {before.controller_epoch} to {after.controller_epoch}"
        )
    if after.broker_epoch < before.broker_epoch:
        run.problems.append(
            f"broker_epoch reset from {before.broker_epoch} to {after.broker_epoch}"
        )
    wait_until(
        lambda: (
            all(cluster.lease_alive(b) for b in (1, 2, 3))
            and (lease := cluster.lease_holder()) is not None
            and cluster.agreed_controller() == lease.broker_id
        ),
        20,
        lambda: f"registrations and a controller back after the restart\n{cluster.describe()}",
    )
    run.after_fault()
    run.finish()

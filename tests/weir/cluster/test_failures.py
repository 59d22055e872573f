"""Replication and coordination under faults: three real brokers, real clients, real signals.

Each test breaks a running cluster (kill -9, SIGSTOP, SIGTERM, Redis going away) and then
checks DESIGN §3's invariants from the outside: acknowledged ``acks=all`` writes survive,
offsets stay dense, idempotent retries never duplicate or reorder, a zombie leader cannot
commit, divergent tails are truncated (KIP-101), one controller acts at a time.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from kio.schema.errors import ErrorCode

from tests.weir.cluster.conftest import (
    SESSION_TIMEOUT_MS,
    Cluster,
    ClusterFactory,
    DurableRedisServer,
    RawConnection,
    batch_summary,
    wait_until,
)
from tests.weir.cluster.helpers import (
    KEYS,
    KeyedWriter,
    Tailer,
    assert_dense,
    assert_replicas_identical,
    assert_served_records_survived,
    create_led_topic,
    others,
    produce,
    produce_ok,
    raw_produce,
    unacknowledged_appends,
    values_of,
)

pytestmark = pytest.mark.integration


# 1 -------------------------------------------------------------------------------------------
def test_leader_kill9_loses_nothing(cluster: Cluster) -> None:
    """kill -9 the leader three times under idempotent acks=all load: nothing lost or doubled."""
    topic = "kill9"
    cluster.create_topic(topic, config={"min.insync.replicas": "2"})
    writer = KeyedWriter(cluster.bootstrap(), topic)
    tailer = Tailer(cluster.bootstrap(), topic)
    writer.start()
    tailer.start()
    try:
        for _ in range(3):
            before = cluster.wait_full_isr(topic)
            writer.wait_progress(200, cluster)
            victim = before.leader
            cluster.kill9(victim)
            cluster.wait_partition(
                topic,
                lambda p, v=victim, e=before.leader_epoch: (
                    p.leader not in (-1, v) and p.leader_epoch > e
                ),
                timeout=SESSION_TIMEOUT_MS / 1000 + 10,
                what=f"a new leader after killing {victim}",
            )
            writer.wait_progress(200, cluster)  # the new leader takes writes
            cluster.restart(victim)
            cluster.wait_full_isr(topic)
        writer.wait_progress(200, cluster)
    finally:
        writer.stop()
        tailer.stop()
    assert writer.unflushed == 0, f"{writer.unflushed} records never delivered"
    assert not writer.failed, f"delivery failures: {writer.failed[:5]}"
    fatal = [e for e in writer.client_errors if e.fatal()]
    assert not fatal, f"fatal producer errors: {fatal}"

    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    values = values_of(records)
    duplicates = [v for v, n in Counter(values).items() if n > 1]
    assert not duplicates, f"duplicated records: {sorted(duplicates)[:10]}"
    offsets = {value: offset for offset, _, value in records}
    lost = [v for v in writer.acked if v not in offsets]
    assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:10]}"
    moved = [(v, o, offsets[v]) for v, o in writer.acked.items() if offsets[v] != o]
    assert not moved, f"records not at their acknowledged offsets: {moved[:10]}"
    seqs = [int(v.split(b":")[1]) for v in values]
    assert seqs == sorted(seqs), f"records out of send order near {_first_inversion(seqs)}"
    for key in range(KEYS):
        per_key = [s for s, (_, k, _) in zip(seqs, records, strict=True) if k == f"k{key}".encode()]
        assert per_key == sorted(per_key), f"key k{key} out of order"
    assert len(values) >= len(writer.acked)
    assert tailer.seen, f"the tailing consumer read nothing: {tailer.errors[:5]}"
    assert_served_records_survived(tailer, records, cluster, topic)


def _first_inversion(seqs: list[int]) -> list[int]:
    for i in range(1, len(seqs)):
        if seqs[i] < seqs[i - 1]:
            return seqs[max(0, i - 3) : i + 3]
    return []


# 2 -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("zombie_is_controller", [False, True], ids=["leader", "leader+controller"])
def test_sigstop_leader_cannot_commit(cluster: Cluster, zombie_is_controller: bool) -> None:
    """A paused leader that lost its lease must not acknowledge acks=all writes on waking."""
    topic = "zombie"
    zombie, followers = create_led_topic(
        cluster, topic, cluster.controller() if zombie_is_controller else None
    )
    before = cluster.wait_full_isr(topic)
    assert before.leader == zombie
    first = [f"before-{i}".encode() for i in range(100)]
    produce_ok(cluster, topic, first)

    cluster.pause(zombie)
    # Requests that reach the zombie while it is frozen: answered when it wakes, possibly
    # before its metadata catches up (it still believes it leads).
    acks_all = RawConnection(cluster[zombie].port)
    acks_one = RawConnection(cluster[zombie].port)
    try:
        elected = cluster.wait_partition(
            topic,
            lambda p: p.leader in followers and zombie not in p.isr,
            timeout=SESSION_TIMEOUT_MS / 1000 + 10,
            what=f"a new leader while {zombie} is paused",
        )
        assert elected.leader_epoch > before.leader_epoch
        if zombie_is_controller:
            new_controller = cluster.controller()
            assert new_controller in followers
        acks_all.send(raw_produce(topic, b"zombie-acks-all", acks=-1, timeout_ms=8000))
        acks_one.send(raw_produce(topic, b"zombie-acks-1", acks=1))
        second = [f"after-{i}".encode() for i in range(100)]
        produce_ok(cluster, topic, second)

        cluster.resume(zombie)
        answer_all = acks_all.receive(timeout=20).responses[0].partition_responses[0]
        answer_one = acks_one.receive(timeout=20).responses[0].partition_responses[0]
    finally:
        acks_all.close()
        acks_one.close()
        cluster.resume(zombie)

    assert answer_all.error_code != ErrorCode.none, (
        f"the zombie acknowledged an acks=all write at offset {answer_all.base_offset} it "
        f"could not commit\n{cluster.describe(topic)}"
    )
    info = cluster.wait_full_isr(topic)
    assert info.leader == elected.leader, f"leadership moved again: {info}"
    if zombie_is_controller:
        assert cluster.controller() == new_controller

    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    assert values_of(records) == first + second, (
        f"zombie acks=1 answer: {answer_one}\n{cluster.describe(topic)}"
    )
    assert_replicas_identical(cluster, topic)


# 3 -------------------------------------------------------------------------------------------
def test_controller_failover(cluster: Cluster) -> None:
    """kill -9 the controller: another broker takes over, creates topics, elects leaders."""
    cluster.create_topic("spread", partitions=3)
    old = cluster.controller()
    led_by_old = [
        i
        for i in range(3)
        if cluster.agreed_partition("spread", i).leader == old  # type: ignore[union-attr]
    ]
    started = time.monotonic()
    cluster.kill9(old)
    new = wait_until(
        lambda: (c := cluster.agreed_controller()) != old and c,
        SESSION_TIMEOUT_MS / 1000 + 8,
        lambda: f"a controller other than {old}\n{cluster.describe()}",
    )
    took = time.monotonic() - started
    assert new in others(old)
    assert took < SESSION_TIMEOUT_MS / 1000 + 5, f"failover took {took:.1f}s"
    for index in range(3):
        info = cluster.wait_partition(
            "spread",
            lambda p, o=old: p.leader not in (-1, o) and o not in p.isr,
            index=index,
            what=f"partition {index} without broker {old}",
        )
        if index in led_by_old:
            assert info.leader in others(old)

    # The new controller creates topics on the live brokers only.
    cluster.create_topic("after-failover", partitions=2, replication_factor=2)
    for index in range(2):
        info = cluster.agreed_partition("after-failover", index)
        assert info is not None and old not in info.replicas, info
    produce_ok(cluster, "after-failover", [b"x"] * 10)
    produce_ok(cluster, "spread", [b"y"] * 10)

    # The killed broker comes back as an ordinary broker: the controller stays where it is,
    # it rejoins the ISRs and a preferred election through the new controller moves its
    # partitions back.
    cluster.restart(old)
    for index in range(3):
        cluster.wait_full_isr("spread", index)
    assert cluster.controller() == new
    admin = cluster.admin()
    future = admin.elect_leaders(
        ElectionType.PREFERRED,
        [TopicPartition("spread", i) for i in range(3)],
        # (no request_timeout: confluent-kafka 2.16's elect_leaders raises SystemError on it)
    )
    results = future.result(20)
    for tp, error in results.items():
        assert error is None or error.code() == KafkaError.ELECTION_NOT_NEEDED, (tp, error)
    for index in range(3):
        cluster.wait_partition(
            "spread",
            lambda p: p.leader == p.replicas[0],
            index=index,
            what="the preferred leader",
        )
    assert sum(1 for v in cluster.views().values() if v.controller_id == new) == 3
    lease = cluster.lease_holder()
    assert lease is not None and lease.broker_id == new, lease


# 4 -------------------------------------------------------------------------------------------
def test_divergent_follower_is_truncated(make_cluster: ClusterFactory) -> None:
    """KIP-101: a leader's uncommitted tail is cut when it comes back as a follower."""
    # Slow failure detection so the paused followers stay in the ISR (and alive) while the
    # leader takes acks=1 writes they never see.
    cluster = make_cluster(
        configs=["broker.session.timeout.ms=6000", "replica.lag.time.max.ms=10000"]
    )
    topic = "diverge"
    old_leader, followers = create_led_topic(cluster, topic)
    committed = [f"committed-{i}".encode() for i in range(50)]
    produce_ok(cluster, topic, committed)
    cluster.wait_full_isr(topic)

    for follower in followers:
        cluster.pause(follower)
    # Let the followers' parked fetches (max wait 500 ms) expire first: otherwise the leader
    # answers them with the new records, which then sit in the frozen followers' sockets and
    # are replicated after all when they resume.
    time.sleep(1.0)
    divergent = [f"divergent-{i}".encode() for i in range(5)]
    offsets = produce_ok(cluster, topic, divergent, acks="1", only=[old_leader], timeout=5)
    assert offsets == list(range(50, 55))
    _, high = cluster.watermarks(topic, only=[old_leader])
    assert high == 50, f"HW moved past what the paused followers have: {high}"
    cluster.kill9(old_leader)
    for follower in followers:
        cluster.resume(follower)

    info = cluster.wait_partition(
        topic,
        lambda p: p.leader in followers and old_leader not in p.isr,
        timeout=20,
        what="a new leader from the ISR",
    )
    new_leader = info.leader
    after = [f"after-{i}".encode() for i in range(20)]
    offsets = produce_ok(cluster, topic, after)
    assert offsets == list(range(50, 70)), "the new leader must not have the divergent tail"

    cluster.restart(old_leader)
    cluster.wait_full_isr(topic)
    assert values_of(cluster.read_all(topic)) == committed + after

    # Make the old leader lead again and read the partition from it.
    admin = cluster.admin()
    admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(topic, 0)]).result(20)
    cluster.wait_partition(topic, lambda p: p.leader == old_leader, what="old leader back")
    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    assert values_of(records) == committed + after, f"served by {old_leader} (was {new_leader})"
    assert_replicas_identical(cluster, topic)


# 5 -------------------------------------------------------------------------------------------
def test_not_enough_replicas(make_cluster: ClusterFactory) -> None:
    """min.insync.replicas=3: a lagging follower leaves the ISR, acks=all is refused."""
    # Long sessions: the follower stays registered, so it is the leader's lag check (not the
    # controller's liveness check) that shrinks the ISR.
    cluster = make_cluster(configs=["broker.session.timeout.ms=15000"])
    topic = "min-isr"
    controller = cluster.controller()
    leader = controller
    laggard, other = others(leader)
    cluster.create_topic(
        topic, replica_assignment=[[leader, laggard, other]], config={"min.insync.replicas": "3"}
    )
    produce_ok(cluster, topic, [b"first"])

    cluster.pause(laggard)
    cluster.wait_partition(
        topic,
        lambda p: p.isr == (leader, other),
        timeout=12,
        what=f"ISR without paused {laggard}",
    )
    # Its lease is still alive: the leader's lag check shrank the ISR, not broker liveness.
    assert cluster.lease_alive(laggard)
    refused = produce(cluster, topic, [b"refused"], retries=0, **{"message.timeout.ms": 5000})
    error = refused[0][2]
    # Kafka refuses before the append (NOT_ENOUGH_REPLICAS) or, when its ISR shrank while the
    # write waited, after it (NOT_ENOUGH_REPLICAS_AFTER_APPEND); which one depends on timing.
    # Either way the write is not acknowledged.
    refusals = (KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert error is not None and error.code() in refusals, (
        f"acks=all below min.insync.replicas answered {error}\n{cluster.describe(topic)}"
    )
    produce_ok(cluster, topic, [b"acks-one"], acks="1")

    cluster.resume(laggard)
    cluster.wait_full_isr(topic, timeout=20)
    produce_ok(cluster, topic, [b"last"])
    # A record refused after the append stays in the leader's log, as in Kafka: once the
    # followers have it, it is committed like the others (it was never acknowledged).
    appended = [b"refused"] if error.code() == KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND else []
    assert values_of(cluster.read_all(topic)) == [b"first", *appended, b"acks-one", b"last"]


# 6 -------------------------------------------------------------------------------------------
def test_redis_restart(make_cluster: ClusterFactory, durable_redis: DurableRedisServer) -> None:
    """Redis away: the data plane keeps serving; back again: coordination resumes."""
    cluster = make_cluster(redis_url=durable_redis.url)
    topic = "redis-down"
    cluster.create_topic(topic)
    first = [f"first-{i}".encode() for i in range(50)]
    produce_ok(cluster, topic, first)

    durable_redis.stop()
    # Outlast the broker leases so anything keyed on them would have expired.
    time.sleep(SESSION_TIMEOUT_MS / 1000 + 1)
    assert cluster.running() == [1, 2, 3], cluster.log_tails()
    second = [f"second-{i}".encode() for i in range(50)]
    produce_ok(cluster, topic, second, timeout=15)  # a new client: metadata from the cache
    assert values_of(cluster.read_all(topic)) == first + second
    assert all(len(v.brokers) == 3 for v in cluster.views().values()), cluster.describe(topic)

    durable_redis.start()
    # Coordination is back once a live broker holds the controller lease again and every
    # broker names that one.
    wait_until(
        lambda: (
            (lease := cluster.lease_holder()) is not None
            and cluster.agreed_controller() == lease.broker_id
        ),
        20,
        lambda: (
            f"a controller after Redis returned ({cluster.lease_holder()})\n{cluster.describe()}"
        ),
    )
    # The views can still list three brokers from the image cached while Redis was away;
    # a new topic is placed on the brokers whose leases Redis holds again, so wait for those.
    wait_until(
        lambda: (
            all(cluster.lease_alive(b) for b in (1, 2, 3))
            and all(len(v.brokers) == 3 for v in cluster.views().values())
        ),
        20,
        lambda: f"brokers registered again\n{cluster.describe()}",
    )
    cluster.wait_full_isr(topic)
    cluster.create_topic("after-redis")
    produce_ok(cluster, "after-redis", [b"z"] * 10)
    third = [f"third-{i}".encode() for i in range(50)]
    produce_ok(cluster, topic, third)
    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    assert values_of(records) == first + second + third


# 7 -------------------------------------------------------------------------------------------
def test_preferred_leader_election(cluster: Cluster) -> None:
    """After a restart moved leadership away, ElectLeaders(PREFERRED) moves it back."""
    topic = "preferred"
    preferred, _ = create_led_topic(cluster, topic)
    produce_ok(cluster, topic, [b"a"] * 20)

    cluster.restart(preferred)  # SIGTERM: leadership moves to the next in-sync replica
    info = cluster.wait_full_isr(topic)
    assert info.leader != preferred, "auto.leader.rebalance.enable=false: no automatic move"
    produce_ok(cluster, topic, [b"b"] * 20)

    admin = cluster.admin()
    tp = TopicPartition(topic, 0)
    results = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(20)
    assert list(results.values()) == [None], results
    cluster.wait_partition(topic, lambda p: p.leader == preferred, what="preferred leader")
    produce_ok(cluster, topic, [b"c"] * 20)
    assert values_of(cluster.read_all(topic)) == [b"a"] * 20 + [b"b"] * 20 + [b"c"] * 20

    again = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(20)
    (error,) = again.values()
    assert isinstance(error, KafkaError), again
    assert error.code() == KafkaError.ELECTION_NOT_NEEDED, error


def test_automatic_preferred_leader_rebalance(make_cluster: ClusterFactory) -> None:
    """auto.leader.rebalance.enable: the controller moves leadership back by itself."""
    cluster = make_cluster(
        configs=["auto.leader.rebalance.enable=true", "leader.imbalance.check.interval.seconds=1"]
    )
    topic = "auto-preferred"
    preferred, _ = create_led_topic(cluster, topic)
    cluster.stop(preferred)
    cluster.wait_partition(topic, lambda p: p.leader in others(preferred), what="failover")
    cluster[preferred].start()
    cluster.wait_partition(
        topic, lambda p: p.leader == preferred, timeout=30, what="automatic preferred election"
    )


# 8 -------------------------------------------------------------------------------------------
def test_follower_of_a_leader_that_learns_late_keeps_replicating(
    make_cluster: ClusterFactory,
) -> None:
    """A follower that reaches its new leader before the leader knows it leads must retry.

    Broker B's path to Redis stalls (its lease stays valid) while the controller makes it
    the leader; the other follower's OffsetForLeaderEpoch to B is answered
    NOT_LEADER_OR_FOLLOWER. Once B catches up with metadata, the follower must replicate
    from it again (Kafka's fetcher retries such errors with a backoff).
    """
    cluster = make_cluster(configs=["broker.session.timeout.ms=8000"], redis_links=True)
    topic = "late-leader"
    controller = cluster.controller()
    old_leader, new_leader = others(controller)
    cluster.create_topic(topic, replica_assignment=[[old_leader, new_leader, controller]])
    produce_ok(cluster, topic, [f"before-{i}".encode() for i in range(10)])

    cluster.redis_links[new_leader].freeze()
    try:
        cluster.stop(old_leader)  # clean shutdown: the controller elects at once
        wait_until(
            lambda: (
                (p := cluster.view(controller, [topic]).partition(topic)) and p.leader == new_leader
            ),
            10,
            lambda: f"{new_leader} elected\n{cluster.describe(topic)}",
        )
        # Give the controller (now a follower of new_leader) time to reach the new leader,
        # which still believes broker old_leader leads.
        time.sleep(1.5)
    finally:
        cluster.redis_links[new_leader].thaw()

    info = cluster.wait_partition(
        topic,
        lambda p: p.leader == new_leader and set(p.isr) == {new_leader, controller},
        timeout=15,
        what=f"ISR {{{new_leader}, {controller}}} under the new leader",
    )
    assert info.leader == new_leader
    # Past replica.lag.time.max.ms: the follower must still be in sync, i.e. fetching.
    time.sleep(3)
    info = cluster.wait_partition(
        topic,
        lambda p: set(p.isr) == {new_leader, controller},
        timeout=5,
        what=f"follower {controller} still in the ISR after the lag time",
    )
    produce_ok(cluster, topic, [f"after-{i}".encode() for i in range(10)], timeout=10)
    cluster[old_leader].start()
    cluster.wait_full_isr(topic)


# 9 -------------------------------------------------------------------------------------------
def test_truncation_when_the_leader_lacks_the_followers_epoch(
    make_cluster: ClusterFactory,
) -> None:
    """KIP-279: OffsetForLeaderEpoch answers an older epoch; truncate to our end of *that*.

    X leads epoch 0 and appends x-0, x-1 that only B fetches (A is paused). A is elected
    (epoch 1) and appends a-0..a-4 at the same offsets while B is paused; then B is elected
    (epoch 2) with x-0, x-1 and writes b-*. A comes back: asked for epoch 1, B answers
    (epoch 0, end offset 12). A has epoch 0 only up to 10, so it must truncate to 10, not
    12, or it keeps a-0, a-1 where every other replica has x-0, x-1. All producers use
    acks=all: the x and a records are never acknowledged, but appended all the same.
    """
    cluster = make_cluster(
        configs=["broker.session.timeout.ms=10000", "replica.lag.time.max.ms=10000"]
    )
    topic = "kip279"
    x = cluster.controller()
    a, b = others(x)
    cluster.create_topic(topic, replica_assignment=[[x, a, b]], config={"min.insync.replicas": "1"})
    committed = [f"c-{i}".encode() for i in range(10)]
    produce_ok(cluster, topic, committed)
    cluster.wait_full_isr(topic)

    cluster.pause(a)
    time.sleep(1.0)  # a's parked fetch expires empty, so it gets nothing more from x
    assert unacknowledged_appends(cluster, x, topic, [b"x-0", b"x-1"]) == [10, 11]
    wait_until(
        lambda: batch_summary(cluster.log_bytes(b, topic))[-1][1] == 11,
        10,
        lambda: f"{b} replicated x-0, x-1\n{cluster.describe(topic)}",
    )
    cluster.pause(b)

    cluster.stop(x)  # clean: resigns the controller lease, deregisters
    cluster.resume(a)
    cluster.wait_partition(
        topic, lambda p: p.leader == a, timeout=10, what=f"{a} elected at epoch 1"
    )
    divergent = [f"a-{i}".encode() for i in range(5)]
    assert unacknowledged_appends(cluster, a, topic, divergent) == list(range(10, 15))

    cluster.stop(a)
    cluster.resume(b)
    cluster.wait_partition(
        topic, lambda p: p.leader == b, timeout=10, what=f"{b} elected at epoch 2"
    )
    later = [f"b-{i}".encode() for i in range(8)]
    assert produce_ok(cluster, topic, later) == list(range(12, 20))

    cluster[a].start()
    cluster[x].start()
    cluster.wait_full_isr(topic)
    expected = [*committed, b"x-0", b"x-1", *later]
    from_b = values_of(cluster.read_all(topic))
    assert from_b == expected

    # Let a lead: consumers must see the same committed records at the same offsets.
    cluster.stop(b)
    cluster.stop(x)
    cluster.wait_partition(topic, lambda p: p.leader == a, timeout=10, what=f"{a} leads")
    from_a = cluster.read_all(topic)
    assert values_of(from_a) == expected, (
        f"broker {a} kept its divergent epoch-1 records: offsets 10-11 hold "
        f"{values_of(from_a)[10:12]} where {b} served {from_b[10:12]}\n{cluster.log_tails()}"
    )
    assert_replicas_identical(cluster, topic)


# 10 ------------------------------------------------------------------------------------------
def test_offline_partition_and_unclean_election(cluster: Cluster) -> None:
    """The only in-sync replica dies: offline (clean); an unclean election brings it back.

    The replicas that return were out of sync, so the partition stays offline (leader -1)
    until an operator asks for an unclean election (ElectLeaders UNCLEAN); the old leader's
    tail, written while it was alone in the ISR, is then lost and truncated when it returns.
    """
    topic = "unclean"
    leader, rest = create_led_topic(cluster, topic, config={"min.insync.replicas": "1"})
    first = [f"first-{i}".encode() for i in range(10)]
    produce_ok(cluster, topic, first)
    for broker_id in rest:
        cluster.stop(broker_id)
    cluster.wait_partition(topic, lambda p: p.isr == (leader,), what=f"ISR [{leader}]")
    produce_ok(cluster, topic, [f"alone-{i}".encode() for i in range(5)])

    cluster.kill9(leader)
    for broker_id in rest:
        cluster[broker_id].start()
    info = cluster.wait_partition(
        topic,
        lambda p: p.leader == -1,
        timeout=SESSION_TIMEOUT_MS / 1000 + 10,
        what="the partition offline",
    )
    assert info.isr == (leader,), f"an offline partition keeps its last ISR: {info}"
    refused = produce(cluster, topic, [b"offline"], **{"message.timeout.ms": 3000})
    assert refused[0][2] is not None, "a produce to an offline partition succeeded"

    admin = cluster.admin()
    tp = TopicPartition(topic, 0)
    results = admin.elect_leaders(ElectionType.UNCLEAN, [tp]).result(20)
    assert list(results.values()) == [None], results
    info = cluster.wait_partition(
        topic, lambda p: p.leader in rest, what="an unclean leader from the live replicas"
    )
    later = [f"later-{i}".encode() for i in range(5)]
    assert produce_ok(cluster, topic, later) == list(range(10, 15))

    cluster[leader].start()
    cluster.wait_full_isr(topic)
    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    assert values_of(records) == first + later
    assert_replicas_identical(cluster, topic)


# 11 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("zombie_is_controller", [False, True], ids=["leader", "leader+controller"])
def test_leader_cut_off_from_redis_cannot_commit(
    make_cluster: ClusterFactory, zombie_is_controller: bool
) -> None:
    """A leader that keeps running but loses Redis is replaced; it must never commit alone.

    Unlike SIGSTOP, the cut-off leader keeps serving clients with its last metadata (by
    design) while the others elect a new leader. acks=all writes sent to it must not be
    acknowledged; its acks=1 writes are truncated when it rejoins.
    """
    cluster = make_cluster(redis_links=True)
    topic = "cut-off"
    zombie, followers = create_led_topic(
        cluster, topic, cluster.controller() if zombie_is_controller else None
    )
    first = [f"first-{i}".encode() for i in range(20)]
    produce_ok(cluster, topic, first)

    link = cluster.redis_links[zombie]
    link.freeze()
    try:
        elected = wait_until(
            lambda: (
                all(
                    (p := cluster.view(f, [topic]).partition(topic)) is not None
                    and p.leader in followers
                    for f in followers
                )
                and cluster.view(followers[0], [topic]).partition(topic)
            ),
            SESSION_TIMEOUT_MS / 1000 + 10,
            lambda: f"a new leader among {followers}\n{cluster.describe(topic)}",
        )
        assert cluster.view(zombie, [topic]).partition(topic).leader == zombie  # type: ignore[union-attr]
        conn = RawConnection(cluster[zombie].port)
        try:
            conn.send(raw_produce(topic, b"zombie-acks-all", acks=-1, timeout_ms=4000))
            answer_all = conn.receive(timeout=15).responses[0].partition_responses[0]
            conn.send(raw_produce(topic, b"zombie-acks-1", acks=1))
            answer_one = conn.receive(timeout=15).responses[0].partition_responses[0]
        finally:
            conn.close()
        second = [f"second-{i}".encode() for i in range(20)]
        produce_ok(cluster, topic, second, only=followers)
    finally:
        link.thaw()

    assert answer_all.error_code != ErrorCode.none, (
        f"the cut-off leader acknowledged acks=all at offset {answer_all.base_offset}\n"
        f"{cluster.describe(topic)}"
    )
    info = cluster.wait_full_isr(topic, timeout=30)
    assert info.leader == elected.leader
    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    assert values_of(records) == first + second, f"zombie acks=1 answer: {answer_one}"
    assert_replicas_identical(cluster, topic)


# 12 ------------------------------------------------------------------------------------------
def test_whole_cluster_crash_and_restart(cluster: Cluster) -> None:
    """kill -9 all three brokers under load, restart them: every acknowledged write is back."""
    topic = "crash-all"
    cluster.create_topic(topic)
    writer = KeyedWriter(cluster.bootstrap(), topic)
    writer.start()
    try:
        writer.wait_progress(1000, cluster)
        for broker_id in (1, 2, 3):
            cluster.kill9(broker_id)
        acked_at_crash = dict(writer.acked)
        for broker_id in (1, 2, 3):
            # (A broker refuses to start while its crashed predecessor's lease lives on; see
            # test_crashed_broker_restarts_within_its_session.)
            cluster.wait_lease_expired(broker_id)
            cluster[broker_id].start()
        cluster.wait_full_isr(topic, timeout=40)
        writer.wait_progress(300, cluster, timeout=60)
    finally:
        writer.stop()
    assert not [e for e in writer.client_errors if e.fatal()], writer.client_errors
    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    offsets = {value: offset for offset, _, value in records}
    lost = [v for v in acked_at_crash if v not in offsets]
    assert not lost, f"{len(lost)} acknowledged records lost in the crash, e.g. {lost[:5]}"
    values = values_of(records)
    assert len(set(values)) == len(values), "duplicates after the crash"
    moved = [(v, o, offsets.get(v)) for v, o in writer.acked.items() if offsets.get(v) != o]
    assert not moved, f"records not at their acknowledged offsets: {moved[:10]}"
    assert_replicas_identical(cluster, topic)


# 13 ------------------------------------------------------------------------------------------
def test_crashed_broker_restarts_within_its_session(cluster: Cluster) -> None:
    """A broker restarted right after a crash comes back (once its old session is over).

    The crashed process's lease outlives it by up to broker.session.timeout.ms. Kafka's
    broker keeps retrying its registration until the stale session expires (KRaft answers
    DUPLICATE_BROKER_REGISTRATION meanwhile); it does not exit, so a supervisor that
    restarts it at once gets a working broker.
    """
    topic = "fast-restart"
    cluster.create_topic(topic)
    produce_ok(cluster, topic, [b"before"] * 10)
    victim = cluster.leader(topic)
    cluster.kill9(victim)
    assert cluster.lease_alive(victim)
    try:
        cluster[victim].start(timeout=SESSION_TIMEOUT_MS / 1000 + 15)
    except RuntimeError as exc:
        pytest.fail(f"broker {victim} restarted within its session did not come up: {exc}")
    cluster.wait_full_isr(topic)
    produce_ok(cluster, topic, [b"after"] * 10)
    assert values_of(cluster.read_all(topic)) == [b"before"] * 10 + [b"after"] * 10

"""Moving replicas between brokers with ``manage.py reassign-partitions`` on a real cluster.

The command runs in the test process the way ``manage.py`` runs it (``tests.suite.commands``:
same argv, parser, messages and exit status; a verify loop polls it without an interpreter start
per poll), once as a real ``manage.py`` process (``--generate``). What is checked from the
outside: the replica set ends as planned, the moved-away replica's files are deleted, the
throttle really holds catch-up back (a throttled move is still running seconds later, and
can be cancelled), a controller failover does not lose an ongoing move, and an idempotent
``acks=all`` producer writing throughout loses nothing and duplicates nothing. Also the
partition state every broker publishes to Redis for the control plane.

The tests share the module's cluster (each moves a topic of its own); the failover test kills
the controller and so starts a cluster of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
from confluent_kafka.admin import ConfigResource

from tests.suite.commands import Completed, manage, manage_process, succeeded
from tests.weir.cluster.conftest import Cluster, ClusterFactory, wait_until
from tests.weir.cluster.helpers import (
    KeyedWriter,
    assert_dense,
    others,
    produce_ok,
    values_of,
)
from weir.metadata.partition_state import partition_state_key, replica_state_key

pytestmark = pytest.mark.integration

KB = b"x" * 1024
THROTTLED_TOPIC_CONFIGS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


@pytest.fixture
def cluster(shared_cluster: Cluster) -> Cluster:
    """The module's shared cluster (these tests move topics of their own)."""
    return shared_cluster


def reassign(cluster: Cluster, *args: str, run: Callable[..., Completed] = manage) -> str:
    done = run("reassign-partitions", "--bootstrap-server", cluster.bootstrap(), *args)
    assert done.returncode == 0, f"{done.stderr}\n{cluster.describe()}"
    return done.stdout


def plan_file(tmp_path: Path, name: str, moves: dict[tuple[str, int], list[int]]) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()
                ],
            }
        )
    )
    return str(path)


def verify(cluster: Cluster, plan: str) -> str:
    return reassign(cluster, "--verify", "--reassignment-json-file", plan)


def wait_completed(cluster: Cluster, plan: str, partitions: list[str], timeout: float = 60) -> str:
    outputs: list[str] = []

    def completed() -> bool:
        outputs.append(verify(cluster, plan))
        return all(
            f"Reassignment of partition {p} is completed." in outputs[-1] for p in partitions
        )

    # Each poll is a whole command run (clients to every broker): twice a second is enough.
    wait_until(completed, timeout, lambda: f"{outputs[-1:]}\n{cluster.describe()}", interval=0.5)
    return outputs[-1]


def topic_overrides(cluster: Cluster, topic: str) -> dict[str, str]:
    resource = ConfigResource("topic", topic)
    admin = cluster.admin()  # keep the handle alive until the future resolves
    entries = admin.describe_configs([resource])[resource].result(20)
    return {k: e.value for k, e in entries.items() if not e.is_default}


def lift_throttle(cluster: Cluster, leader: int, follower: int) -> None:
    """Delete the replication throttle on both sides, as Kafka applies it: the leader's rate
    and the new follower's (the move then catches up at full speed)."""
    for broker_id, side in ((leader, "leader"), (follower, "follower")):
        succeeded(
            manage(
                "configs",
                *("--bootstrap-server", cluster.bootstrap()),
                *("--entity-type", "brokers", "--entity-name", str(broker_id)),
                *("--alter", "--delete-config", f"{side}.replication.throttled.rate"),
            )
        )


def replica_dir(cluster: Cluster, broker_id: int, topic: str, index: int = 0) -> Path:
    return cluster[broker_id].data_dir / f"{topic}-{index}"


def test_reassignment_under_load_moves_replicas_and_loses_nothing(
    cluster: Cluster, tmp_path: Path
) -> None:
    topic = "moving"
    cluster.create_topic(topic, replica_assignment=[[1, 2]])
    preload = [b"pre-%d-" % i + KB for i in range(3000)]
    produce_ok(cluster, topic, preload)
    leader = cluster.wait_full_isr(topic).leader
    writer = KeyedWriter(cluster.bootstrap(), topic)
    writer.start()
    try:
        writer.wait_progress(100, cluster)
        plan = plan_file(tmp_path, "plan", {(topic, 0): [3, 2]})
        out = reassign(
            cluster, "--execute", "--reassignment-json-file", plan, "--throttle", "20000"
        )
        assert '"replicas":[1,2]' in out.replace(" ", ""), out  # the rollback plan
        assert "The inter-broker throttle limit was set to 20000 B/s" in out
        assert "Successfully started partition reassignments for moving-0" in out
        # 3 MB at 20 KB/s would take minutes: still catching up now, however slow the
        # machine, until the throttle is lifted below.
        listed = reassign(cluster, "--list")
        assert "moving-0: replicas: [3, 2, 1]. adding: [3]. removing: [1]." in listed, listed
        assert topic_overrides(cluster, topic)[THROTTLED_TOPIC_CONFIGS[1]] == "0:3"
        lift_throttle(cluster, leader, 3)
        out = wait_completed(cluster, plan, ["moving-0"])
        assert "Clearing topic-level throttles on topics moving" in out
        writer.wait_progress(200, cluster)
    finally:
        writer.stop()
    assert not writer.failed, writer.failed[:5]
    assert writer.unflushed == 0
    info = cluster.wait_full_isr(topic)
    assert info.replicas == (3, 2), cluster.describe(topic)
    assert info.leader in (3, 2)
    wait_until(
        lambda: not replica_dir(cluster, 1, topic).exists(),
        20,
        lambda: f"broker 1 still has {replica_dir(cluster, 1, topic)}",
    )
    assert not set(THROTTLED_TOPIC_CONFIGS) & set(topic_overrides(cluster, topic))
    records = cluster.read_all(topic)
    assert_dense(records, cluster, topic)
    values = values_of(records)
    assert values[: len(preload)] == preload
    written = values[len(preload) :]
    assert len(written) == len(set(written)), "a record was written twice"
    assert set(writer.acked) <= set(written), "an acknowledged record is missing"
    # Per key, records are in the order they were sent.
    for key in {v.split(b":")[0] for v in written}:
        seqs = [int(v.split(b":")[1]) for v in written if v.split(b":")[0] == key]
        assert seqs == sorted(seqs), key


def test_generate_proposes_and_execute_grows_the_replication_factor(
    cluster: Cluster, tmp_path: Path
) -> None:
    topic = "growing"
    cluster.create_topic(topic, replica_assignment=[[1], [2]])
    produce_ok(cluster, topic, [b"g%d" % i for i in range(100)], acks="1")
    moves = tmp_path / "topics.json"
    moves.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    out = reassign(
        cluster,
        *("--generate", "--topics-to-move-json-file", str(moves), "--broker-list", "2,3"),
        run=manage_process,  # once as the real command line
    )
    current, proposed = out.split("Proposed partition reassignment configuration")
    assert "Current partition replica assignment" in current
    proposal = json.loads(proposed.strip())
    assert sorted(p["partition"] for p in proposal["partitions"]) == [0, 1]
    assert all(
        len(p["replicas"]) == 1 and p["replicas"][0] in (2, 3) for p in proposal["partitions"]
    )
    assert len({p["replicas"][0] for p in proposal["partitions"]}) == 2, "not spread evenly"

    plan = plan_file(tmp_path, "grow", {(topic, 0): [1, 2, 3], (topic, 1): [2, 3, 1]})
    reassign(cluster, "--execute", "--reassignment-json-file", plan)
    wait_completed(cluster, plan, ["growing-0", "growing-1"])
    for index, replicas in ((0, (1, 2, 3)), (1, (2, 3, 1))):
        info = cluster.wait_full_isr(topic, index)
        assert info.replicas == replicas
        for broker_id in replicas:
            assert replica_dir(cluster, broker_id, topic, index).is_dir()
    assert values_of(cluster.read_all(topic, 0)) == [b"g%d" % i for i in range(100)]


def test_cancel_rolls_a_throttled_move_back(cluster: Cluster, tmp_path: Path) -> None:
    topic = "cancelled"
    cluster.create_topic(topic, replica_assignment=[[1]])
    values = [b"c-%d-" % i + KB for i in range(2000)]
    produce_ok(cluster, topic, values, acks="1")
    plan = plan_file(tmp_path, "slow", {(topic, 0): [1, 2]})
    # 2 MB at 20 kB/s would take well over a minute.
    reassign(cluster, "--execute", "--reassignment-json-file", plan, "--throttle", "20000")
    wait_until(lambda: replica_dir(cluster, 2, topic).is_dir(), 20, lambda: "new replica opened")
    assert "is still in progress" in verify(cluster, plan)
    out = reassign(cluster, "--cancel", "--reassignment-json-file", plan)
    assert "Successfully cancelled partition reassignments for: cancelled-0" in out
    assert "No partition reassignments found." in reassign(cluster, "--list")
    wait_until(
        lambda: (info := cluster.agreed_partition(topic)) is not None and info.replicas == (1,),
        20,
        lambda: cluster.describe(topic),
    )
    wait_until(
        lambda: not replica_dir(cluster, 2, topic).exists(),
        20,
        lambda: "the cancelled replica's files were not removed",
    )
    out = verify(cluster, plan)
    assert "replica set is [1] rather than [1, 2]" in out, out
    assert values_of(cluster.read_all(topic)) == values


def test_an_ongoing_reassignment_survives_controller_failover(
    make_cluster: ClusterFactory, tmp_path: Path
) -> None:
    cluster = make_cluster()  # of its own: the test kills the controller
    controller = cluster.controller()
    source, target = others(controller)
    topic = "failover-move"
    cluster.create_topic(topic, replica_assignment=[[source]])
    values = [b"f-%d-" % i + KB for i in range(2000)]
    produce_ok(cluster, topic, values, acks="1")
    plan = plan_file(tmp_path, "move", {(topic, 0): [source, target]})
    reassign(cluster, "--execute", "--reassignment-json-file", plan, "--throttle", "20000")
    assert "is still in progress" in verify(cluster, plan)

    cluster.kill9(controller)
    new_controller = cluster.controller()
    assert new_controller in (source, target)
    listed = reassign(cluster, "--list")
    assert f"{topic}-0: replicas: [{source}, {target}]. adding: [{target}]." in listed, listed
    # Lift the throttle: the move completes under the new controller.
    lift_throttle(cluster, source, target)
    wait_completed(cluster, plan, [f"{topic}-0"])
    info = cluster.wait_full_isr(topic)
    assert info.replicas == (source, target)
    assert values_of(cluster.read_all(topic)) == values


def test_every_broker_publishes_partition_state_to_redis(cluster: Cluster) -> None:
    topic = "observed"
    cluster.create_topic(topic)
    produce_ok(cluster, topic, [b"o%d" % i for i in range(100)])
    leader = cluster.wait_full_isr(topic).leader
    client = redis.Redis.from_url(cluster.redis_url)
    field = f"{topic}/0"

    def state() -> dict[str, Any] | None:
        raw = client.hget(partition_state_key(cluster.keys), field)
        return None if raw is None else json.loads(raw)

    wait_until(
        lambda: (s := state()) is not None and s["high_watermark"] == 100,
        10,
        lambda: f"published state {state()}",
    )
    published = state()
    assert published is not None
    assert published["leader"] == leader
    assert published["log_end_offset"] == 100
    assert published["log_start_offset"] == 0
    assert sorted(published["isr"]) == [1, 2, 3]
    assert published["size_bytes"] > 0
    assert set(published["follower_log_end_offsets"]) == {str(b) for b in others(leader)}

    def replicas() -> dict[int, dict[str, Any]]:
        raw = client.hgetall(replica_state_key(cluster.keys))
        found = {}
        for key, value in raw.items():
            name, partition, broker = key.decode().rsplit("/", 2)
            if name == topic and partition == "0":
                found[int(broker)] = json.loads(value)
        return found

    wait_until(
        lambda: {b: r["log_end_offset"] for b, r in replicas().items()} == {1: 100, 2: 100, 3: 100},
        10,
        lambda: f"replica state {replicas()}",
    )
    assert [b for b, r in sorted(replicas().items()) if r["is_leader"]] == [leader]
    # A deleted topic disappears from the published state.
    admin = cluster.admin()
    admin.delete_topics([topic])[topic].result(20)
    wait_until(lambda: state() is None and not replicas(), 10, lambda: f"{state()} {replicas()}")

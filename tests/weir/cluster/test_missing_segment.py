"""A replica whose log lost a segment file between two others (issue 16).

Kafka loads such a log and serves the hole as if those offsets never existed. Weir refuses to
open it: the partition goes offline on that broker (one error line naming it and the fix)
while the other replicas keep serving, and the operator's fix, deleting the partition
directory and restarting the broker, makes the replica refetch everything from the leader.

Three broker processes because what is proved is across brokers: the healthy replicas serve
while one broker holds the partition offline, and the refetch copies the leader's bytes.
"""

from __future__ import annotations

import shutil

import pytest

from tests.weir.cluster.conftest import ClusterFactory, wait_until
from tests.weir.cluster.helpers import (
    assert_replicas_identical,
    create_led_topic,
    produce_ok,
    values_of,
)

pytestmark = pytest.mark.integration

TOPIC = "holed"


def test_replica_missing_a_segment_goes_offline_then_refetches_from_an_empty_directory(
    make_cluster: ClusterFactory,
) -> None:
    # Tiny segments make several of them; a follower appends each fetched chunk at once and
    # refuses a chunk larger than segment.bytes (as Kafka does), so fetch a batch at a time.
    cluster = make_cluster(configs=["replica.fetch.max.bytes=500"])
    leader, followers = create_led_topic(
        cluster, TOPIC, config={"segment.bytes": "600", "index.interval.bytes": "100"}
    )
    values = [b"value-%03d-" % i + b"x" * 60 for i in range(48)]
    for start in range(0, 48, 4):  # acks=all one batch at a time: a segment per batch
        produce_ok(cluster, TOPIC, values[start : start + 4])
    cluster.wait_full_isr(TOPIC)
    victim = followers[0]
    broker = cluster[victim]
    cluster.stop(victim)
    directory = broker.data_dir / f"{TOPIC}-0"
    segments = sorted(directory.glob("*.log"))
    assert len(segments) >= 3, segments
    lost = segments[1]
    for suffix in (".log", ".index", ".timeindex"):
        lost.with_suffix(suffix).unlink(missing_ok=True)
    kept = sorted(p.name for p in directory.iterdir())

    before = len(broker.log_text())
    broker.start()
    line = wait_until(
        lambda: next(
            (
                line
                for line in broker.log_text()[before:].splitlines()
                if f"{TOPIC}-0 is offline on broker {victim}" in line
            ),
            None,
        ),
        20,
        lambda: cluster.describe(TOPIC),
    )
    assert "are missing" in line and "delete the partition directory" in line, line
    # The leader and the other follower serve everything; the victim stays out of the ISR
    # and its files are as the loss left them (it neither served nor fetched into the hole).
    info = cluster.wait_partition(TOPIC, lambda p: p.leader == leader and victim not in p.isr)
    assert set(info.isr) == {leader, followers[1]}
    assert values_of(cluster.read_all(TOPIC)) == values
    assert sorted(p.name for p in directory.iterdir()) == kept

    # The operator's fix: delete the partition directory and restart.
    cluster.stop(victim)
    shutil.rmtree(directory)
    broker.start()
    cluster.wait_full_isr(TOPIC)
    assert values_of(cluster.read_all(TOPIC, only=[leader])) == values
    assert_replicas_identical(cluster, TOPIC)

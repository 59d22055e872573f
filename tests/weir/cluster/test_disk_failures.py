"""A leader's disk fails under acks=all load: leadership moves, nothing acknowledged is lost.

Real processes because what is tested spans them: broker 1 runs with a file size limit
(``RLIMIT_FSIZE``, set in the child before it execs; CPython ignores SIGXFSZ, so a write past
it fails with EFBIG as a full disk fails with ENOSPC), the producer is librdkafka reacting
to KAFKA_STORAGE_ERROR, and the controller that moves the leadership is another process
learning of the failure through broker 1's registration lease.
"""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.cluster.conftest import ClusterFactory, RawConnection, wait_until
from tests.weir.cluster.helpers import (
    assert_dense,
    assert_replicas_identical,
    create_led_topic,
    produce_ok,
    raw_produce,
    values_of,
)

pytestmark = pytest.mark.integration

# Broker 1's files may not grow past this; the partition's first segment reaches it after
# about 900 of the 1 KiB records below. Index files are preallocated to
# log.index.size.max.bytes, which must stay below it.
FILE_SIZE_LIMIT = 1024 * 1024
CONFIGS = ["log.index.size.max.bytes=65536"]


def test_a_leader_whose_disk_fails_hands_over_and_rejoins_after_a_restart(
    make_cluster: ClusterFactory,
) -> None:
    cluster = make_cluster(configs=CONFIGS)
    cluster[1].file_size_limit = FILE_SIZE_LIMIT
    cluster.restart(1)
    wait_until(
        lambda: all(1 in v.brokers for v in cluster.views().values()),
        20,
        lambda: f"every broker sees broker 1 back\n{cluster.describe()}",
    )
    topic = "disk-fails"
    create_led_topic(cluster, topic, leader=1)
    assert cluster.wait_full_isr(topic).leader == 1
    values = [f"{i:06d}".encode() + b"x" * 1000 for i in range(1500)]

    # The append that crosses the limit fails on broker 1: that batch is not acknowledged
    # there (KAFKA_STORAGE_ERROR), the producer retries it on the new leader.
    produce_ok(cluster, topic, values, timeout=60, **{"enable.idempotence": True})

    info = cluster.wait_partition(
        topic, lambda p: p.leader in (2, 3) and 1 not in p.isr and 1 in p.offline
    )
    assert info.replicas == (1, 2, 3)
    assert cluster[1].alive(), "one partition's disk must not stop the broker"
    (failure,) = [
        line for line in cluster[1].log_text().splitlines() if "is offline on broker 1" in line
    ]
    assert f"{topic}-0 is offline" in failure and "append failed" in failure
    assert "follower append" not in failure, "the leader's own append must be the one failing"
    assert "File too large" in failure
    conn = RawConnection(cluster[1].port)
    try:
        conn.send(raw_produce(topic, b"to the failed replica", acks=-1))
        answer = conn.receive(timeout=10).responses[0].partition_responses[0]
    finally:
        conn.close()
    assert answer.error_code == ErrorCode.kafka_storage_error

    records = cluster.read_all(topic, only=[2, 3])
    assert_dense(records, cluster, topic)
    assert values_of(records) == values, "acknowledged records lost, doubled or reordered"

    # Space returns: restarted without the limit, broker 1 recovers its log's tail,
    # follows the new leader, catches up and rejoins the ISR.
    cluster[1].file_size_limit = None
    cluster.restart(1)
    cluster.wait_partition(topic, lambda p: set(p.isr) == {1, 2, 3} and not p.offline, timeout=30)
    assert_replicas_identical(cluster, topic)

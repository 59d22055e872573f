"""``controlled.shutdown.enable``: a stopping broker hands its leaderships over first.

With it (Kafka's default) the stopping broker's lease asks for a controlled shutdown (KRaft's
``wantShutDown`` heartbeat); the controller moves its leaderships and ISR memberships to other
replicas while it still serves, and only then does it close its logs and deregister. Without
it the broker just stops, and its leaderships move once it is gone (here: at deregistration).

The proof is the order of the metadata log: the PartitionChange that makes the other replica
leader comes before the stopping broker's UnregisterBroker with the config, after it without.
In-process brokers (tests/weir/inprocess.py) share the suite's Redis; no process is needed.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import redis
from confluent_kafka.admin import AdminClient, NewTopic

from tests.weir.inprocess import threaded_cluster
from weir.controller import leads_movable_partitions, partition_changes_for
from weir.metadata.image import ClusterImage, ControllerLease
from weir.metadata.keys import KeyLayout
from weir.metadata.records import (
    PartitionChangeRecord,
    UnregisterBrokerRecord,
    record_from_fields,
)

from .test_controller import image, part


def test_a_broker_in_controlled_shutdown_hands_over_what_another_replica_can_take() -> None:
    img = image(
        {
            "t": [part((1, 2), (1, 2), 1, index=0), part((2, 1), (2, 1), 2, index=1)],
            "solo": [part((1,), (1,), 1)],
            "behind": [part((1, 2), (1,), 1)],  # broker 2 is not in sync
        },
        live={1, 2},
    ).with_liveness({1, 2}, ControllerLease(2, 1), {}, {1})
    assert leads_movable_partitions(img, 1) and not leads_movable_partitions(img, 2)
    changes = partition_changes_for(img, unclean_for=lambda _: False)
    moved = {(t, c.partition): (c.leader, c.isr) for t, cs in changes.items() for c in cs}
    assert moved == {
        ("t", 0): (2, (2,)),  # the other in-sync replica leads
        ("t", 1): (None, (2,)),  # it leaves the ISR where it follows
        # "solo" and "behind": nobody else can lead; they stay with it until it is gone.
    }
    after = image(
        {
            "t": [part((1, 2), (2,), 2, index=0), part((2, 1), (2,), 2, index=1)],
            "solo": [part((1,), (1,), 1)],
            "behind": [part((1, 2), (1,), 1)],
        },
        live={1, 2},
    ).with_liveness({1, 2}, ControllerLease(2, 1), {}, {1})
    assert not leads_movable_partitions(after, 1)
    # Nor may it come back into an ISR while it stops.
    assert partition_changes_for(after, unclean_for=lambda _: False) == {}


def metadata_log(redis_url: str, cluster_id: str) -> list[object]:
    client = redis.Redis.from_url(redis_url)
    try:
        entries = client.xrange(KeyLayout(cluster_id).metadata_log)
    finally:
        client.close()
    return [record_from_fields(fields) for _, fields in entries]


@pytest.mark.parametrize("enabled", [True, False])
def test_leadership_moves_before_the_broker_goes_only_with_controlled_shutdown(
    redis_server: str, tmp_path: Path, enabled: bool
) -> None:
    cluster_id = f"controlled-{uuid.uuid4().hex[:8]}"
    configs = [f"controlled.shutdown.enable={str(enabled).lower()}"]
    with threaded_cluster(
        root=tmp_path,
        redis_url=redis_server,
        cluster_id=cluster_id,
        broker_ids=(1, 2),
        configs=configs,
    ) as brokers:
        admin = AdminClient({"bootstrap.servers": brokers[1].bootstrap})
        topic = NewTopic("handover", num_partitions=1, replica_assignment=[[2, 1]])
        admin.create_topics([topic])["handover"].result(15)
        controller = brokers[1].broker  # the first broker started holds the lease

        async def in_sync() -> None:
            def both(img: ClusterImage) -> bool:
                t = img.topics.get("handover")
                return t is not None and set(t.partitions[0].isr) == {1, 2}

            await controller.metadata.wait_for(both, 15)

        brokers[1].run(in_sync(), 20)
        brokers[2].stop()
        log = brokers[2].log_text()
        if enabled:
            assert "controlled shutdown done, no other replica left to take over" in log, log

        async def moved() -> None:
            await controller.metadata.wait_for(
                lambda img: img.topics["handover"].partitions[0].leader == 1, 15
            )

        brokers[1].run(moved(), 20)
        records = metadata_log(redis_server, cluster_id)
    gone = next(
        i
        for i, r in enumerate(records)
        if isinstance(r, UnregisterBrokerRecord) and r.broker_id == 2
    )
    handed = next(
        i for i, r in enumerate(records) if isinstance(r, PartitionChangeRecord) and r.leader == 1
    )
    assert (handed < gone) is enabled

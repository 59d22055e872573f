"""Two in-process Weir clusters, ``east`` and ``west``, and the control plane pointed at them.

The control plane manages ``west`` (its ``WEIR_CLUSTER_ID``), where the mirror-maker
processes publish their statuses, and reads the flows from a real
``connect-mirror-maker.properties`` (``WEIR_MIRROR_PROPERTIES``). The clusters are shared by
the module's tests (starting brokers is the slow part); tests use their own group names.

The data every test sees: ``orders`` on east (2 partitions, 5 records each) and the mirror's
source group ``mirror-east->west`` committed at 3 and 5 (so 2 records of partition 0 are not
yet mirrored); ``east.orders`` on west with 3 and 5 copied records; and MM2 checkpoints in
``east.checkpoints.internal`` on west for the groups in :data:`CHECKPOINTED`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings

from controlplane.cluster import reset_gateways
from mirrors.sources import reset_clients
from schemaregistry.registry import reset_registries
from tests.weir.inprocess import ThreadedBroker, threaded_broker

FAST_GROUPS = ("group.initial.rebalance.delay.ms=0",)
RECORD_TS = 1_700_000_000_000
# group -> [(target topic, partition, upstream, downstream)], oldest first.
CHECKPOINTED = {
    "app": [("east.orders", 0, 2, 2), ("east.orders", 1, 5, 7), ("east.orders", 0, 3, 3)],
    "busy": [("east.orders", 0, 3, 3)],
    "other": [("east.orders", 0, 1, 1)],
}


@dataclass
class Mirrored:
    east: ThreadedBroker
    west: ThreadedBroker
    properties: Path

    def admin(self, side: str) -> AdminClient:
        broker = self.east if side == "east" else self.west
        return AdminClient({"bootstrap.servers": broker.bootstrap})


def properties_text(east: str, west: str) -> str:
    return (
        "# the file the mirror-maker processes run\n"
        "clusters = east, west\n"
        f"east.bootstrap.servers = {east}\n"
        f"west.bootstrap.servers = {west}\n"
        "east->west.enabled = true\n"
        "east->west.topics = orders.*\n"
        "replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\n"
    )


def _produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(
                topic, value=f"v{i}".encode(), partition=partition, timestamp=RECORD_TS + i
            )
    assert producer.flush(30) == 0


def _create(admin: AdminClient, topic: str, partitions: int) -> None:
    new = NewTopic(topic, num_partitions=partitions, replication_factor=1)
    admin.create_topics([new])[topic].result(30)


def _seed(east: ThreadedBroker, west: ThreadedBroker) -> None:
    from weir.mirror.formats import Checkpoint

    east_admin = AdminClient({"bootstrap.servers": east.bootstrap})
    west_admin = AdminClient({"bootstrap.servers": west.bootstrap})
    _create(east_admin, "orders", 2)
    _produce(east.bootstrap, "orders", {0: 5, 1: 5})
    request = ConsumerGroupTopicPartitions(
        "mirror-east->west", [TopicPartition("orders", 0, 3), TopicPartition("orders", 1, 5)]
    )
    east_admin.alter_consumer_group_offsets([request])["mirror-east->west"].result(30)
    _create(west_admin, "east.orders", 2)
    _produce(west.bootstrap, "east.orders", {0: 3, 1: 5})
    _create(west_admin, "east.checkpoints.internal", 1)
    producer = Producer({"bootstrap.servers": west.bootstrap})
    for group, rows in CHECKPOINTED.items():
        for topic, partition, upstream, downstream in rows:
            key, value = Checkpoint(group, topic, partition, upstream, downstream).to_record()
            producer.produce("east.checkpoints.internal", key=key, value=value, partition=0)
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def mirrored(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirrored]:
    root = tmp_path_factory.mktemp("mirrors")
    with (
        threaded_broker(
            data_dir=root / "east" / "broker-1", redis_url=redis_server, configs=FAST_GROUPS
        ) as east,
        threaded_broker(
            data_dir=root / "west" / "broker-1", redis_url=redis_server, configs=FAST_GROUPS
        ) as west,
    ):
        _seed(east, west)
        properties = root / "connect-mirror-maker.properties"
        properties.write_text(properties_text(east.bootstrap, west.bootstrap))
        names = (
            "WEIR_REDIS_URL",
            "WEIR_CLUSTER_ID",
            "WEIR_BOOTSTRAP_SERVERS",
            "WEIR_MIRROR_PROPERTIES",
        )
        previous = {name: getattr(settings, name) for name in names}
        settings.WEIR_REDIS_URL = redis_server
        settings.WEIR_CLUSTER_ID = west.cluster_id
        settings.WEIR_BOOTSTRAP_SERVERS = west.bootstrap
        settings.WEIR_MIRROR_PROPERTIES = str(properties)
        try:
            yield Mirrored(east, west, properties)
        finally:
            reset_registries()
            reset_gateways()
            reset_clients()
            for name, value in previous.items():
                setattr(settings, name, value)

"""The whole Redis deployment is lost: ``metadata-snapshot --export`` of a live cluster,
``--import`` into a fresh redis-server, and the same brokers (same data directories) come
back on it with their topics, data, configs, quotas, ACLs and SCRAM users; epochs and
producer ids continue above the exported ones; a topic created after the export stays on
disk untouched and unknown.

Real broker processes: the point is brokers restarting from their data directories against
a different Redis, which only processes do honestly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from confluent_kafka import Producer
from confluent_kafka.admin import (
    ConfigResource,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from tests.conftest import RedisServer
from tests.suite.commands import failed_cleanly, manage, succeeded
from tests.weir.cluster.conftest import ClusterFactory
from weir.metadata.keys import KeyLayout
from weir.metadata.snapshot_file import EPOCH_GAP, PRODUCER_ID_GAP, classify
from weir.quotas import QuotaEntity

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    """Idempotent acks=all produce (each producer takes a producer id from the cluster)."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def command(url: str, cluster_id: str, *args: str) -> tuple[str, str]:
    done = manage(
        "metadata-snapshot", *args, settings={"WEIR_REDIS_URL": url, "WEIR_CLUSTER_ID": cluster_id}
    )
    return done.stdout, done.stderr


def test_brokers_come_back_on_a_restored_redis_with_everything_and_never_go_backwards(
    make_cluster: ClusterFactory,
    make_redis_server: Callable[[], RedisServer],
    cluster_id: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    cluster = make_cluster()
    keys = KeyLayout(cluster_id)
    old = redis.Redis.from_url(redis_server, decode_responses=True)
    orders = cluster.create_topic("orders", partitions=2, config={"retention.ms": "86400000"})
    admin = cluster.admin()
    admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"secret"
            )
        ]
    )["alice"].result(15)
    url_settings = {"WEIR_REDIS_URL": redis_server, "WEIR_CLUSTER_ID": cluster_id}
    succeeded(
        manage(
            *("configs", "--bootstrap-server", cluster.bootstrap(), "--entity-type", "users"),
            *("--entity-name", "alice", "--alter", "--add-config", "producer_byte_rate=1048576"),
            settings=url_settings,
        )
    )
    succeeded(  # a cluster-wide dynamic broker default
        manage(
            *("configs", "--bootstrap-server", cluster.bootstrap(), "--entity-type", "brokers"),
            *("--entity-default", "--alter", "--add-config", "log.retention.ms=3600000"),
            settings=url_settings,
        )
    )
    old.sadd(keys.acls, json.dumps({"principal": "User:alice"}))  # stored as brokers keep it
    produce(cluster.bootstrap(), orders, [b"a", b"b", b"c"])
    # Every key a live cluster wrote has a class (metadata or runtime): none is forgotten.
    unknown = [
        k for k in old.scan_iter(f"{keys.prefix}*") if classify(k[len(keys.prefix) :]) is None
    ]
    assert unknown == []

    snapshot = tmp_path / "snapshot.json"
    out, _ = command(redis_server, cluster_id, "--export", str(snapshot))
    assert f"Exported cluster '{cluster_id}'" in out
    exported = json.loads(snapshot.read_text())["keys"]
    exported_epoch = int(exported["controller_epoch"]["value"])
    exported_producer_ids = int(exported["next_producer_id"]["value"])
    exported_leader_epoch = cluster.wait_full_isr(orders).leader_epoch
    assert exported_producer_ids >= 1
    # Written after the export: unknown to the restored metadata, its data on disk.
    late = cluster.create_topic("late")
    produce(cluster.bootstrap(), late, [b"after the export"])

    # The Redis deployment is lost; the brokers stop; a new, empty Redis is restored.
    cluster.stop_all()
    target = make_redis_server()
    out, _ = command(target.url, cluster_id, "--import", str(snapshot))
    assert f"controller epoch now {exported_epoch + EPOCH_GAP}" in out
    # Importing twice is refused, naming the problem.
    stderr = failed_cleanly(
        manage(
            "metadata-snapshot",
            *("--import", str(snapshot)),
            settings={"WEIR_REDIS_URL": target.url, "WEIR_CLUSTER_ID": cluster_id},
        )
    )
    assert "--import: the target Redis already holds metadata" in stderr

    for broker in cluster.brokers.values():
        broker.redis_url = target.url
    cluster.redis_url = target.url
    cluster.start_all(30)
    new = redis.Redis.from_url(target.url, decode_responses=True)

    values = sorted(v for i in (0, 1) for _, _, v in cluster.read_all(orders, i))
    assert values == [b"a", b"b", b"c"]
    resource = ConfigResource(ConfigResource.Type.TOPIC, orders)
    admin = cluster.admin()  # kept alive until its futures resolve
    configs = admin.describe_configs([resource])[resource].result(15)
    assert configs["retention.ms"].value == "86400000"
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(15)
    assert described.scram_credential_infos[0].iterations == 4096
    assert cluster.view(1).brokers == {1, 2, 3}
    # Quotas, ACLs, SCRAM credentials, config overrides and topic ids are as exported.
    for name, entry in exported.items():
        if name.startswith(("configs:", "scram:")) or name in (
            "client_quotas",
            "acls",
            "topic_ids",
        ):
            # (reading created __consumer_offsets since: the restored hashes may have more)
            restored, value = _read(new, keys.key(name)), entry["value"]
            assert (
                restored.items() >= value.items() if isinstance(value, dict) else restored == value
            ), name
    assert new.hget(keys.client_quotas, QuotaEntity.of(user="alice").to_key())

    # Epochs and producer ids continue above everything the lost deployment handed out.
    assert int(new.get(keys.controller_epoch)) > exported_epoch + EPOCH_GAP
    produce(cluster.bootstrap(), orders, [b"d"])
    assert int(new.get(keys.next_producer_id)) > exported_producer_ids + PRODUCER_ID_GAP
    assert cluster.wait_full_isr(orders).leader_epoch >= exported_leader_epoch + EPOCH_GAP

    # A new topic can be created and used.
    fresh = cluster.create_topic("fresh")
    produce(cluster.bootstrap(), fresh, [b"new"])
    assert [v for _, _, v in cluster.read_all(fresh)] == [b"new"]

    # The topic created after the export is unknown and its logs are left alone on disk.
    assert late not in cluster.view(1).topics
    for broker in cluster.brokers.values():
        assert any((broker.data_dir / f"{late}-0").glob("*.log"))


def _read(client: redis.Redis, key: str) -> object:
    kind = client.type(key)
    if kind == "hash":
        return client.hgetall(key)
    if kind == "set":
        return sorted(client.smembers(key))
    return client.get(key)

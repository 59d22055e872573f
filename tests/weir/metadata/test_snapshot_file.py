"""Metadata snapshot files: export, the file format, import into an empty Redis (moving
epochs and producer ids forward), refusal of a non-empty target and of bad files.

The cluster round trip with real brokers is ``tests/weir/cluster/test_metadata_snapshot.py``;
here the state is written through ``MetadataStore`` and plain Redis commands, on the suite's
Redis and on a fresh redis-server of the test's own as the import target.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from tests.conftest import RedisServer
from tests.sentinel import SentinelDeployment
from weir.metadata.image import TopicImage
from weir.metadata.keys import KeyLayout
from weir.metadata.snapshot_file import (
    EPOCH_GAP,
    PRODUCER_ID_GAP,
    SnapshotFileError,
    TargetNotEmptyError,
    classify,
    export_rotating,
    export_to_file,
    import_from_file,
    read_snapshot_file,
)
from weir.metadata.store import MetadataStore, PartitionChange
from weir.quotas import QuotaEntity


async def _populate(store: MetadataStore, client: redis.Redis, keys: KeyLayout) -> None:
    """Metadata of every kind, plus runtime keys the export must leave out."""
    epoch = await store.acquire_controller(1, 30_000)
    assert epoch is not None
    await store.create_topic(
        controller_epoch=epoch,
        name="orders",
        assignments=[[1, 2], [2, 1]],
        configs={"retention.ms": "1000"},
    )
    await store.alter_partitions(
        controller_epoch=epoch, name="orders", changes=[PartitionChange(0, leader=2, isr=[2])]
    )
    for kind, name, configs in (("broker", "1", {"log.retention.ms": "2"}), ("broker", "", {})):
        await store.alter_configs(
            controller_epoch=epoch,
            resource_type=kind,
            resource_name=name,
            set=configs or {"log.retention.ms": "5000"},
        )
    await store.alter_client_quotas(
        controller_epoch=epoch,
        changes=[(QuotaEntity.of(user="alice"), "producer_byte_rate", 1024.0)],
    )
    await store.allocate_producer_ids(7)
    await store.snapshot()  # sets the store's incarnation, as every broker's first read does
    client.sadd(keys.acls, '{"acl":1}')
    client.incr(keys.acls_version)
    client.hset(keys.scram_credentials("SCRAM-SHA-256"), "alice", '{"iterations":4096}')
    client.hset(keys.brokers, "1", '{"broker_id":1,"epoch":1,"host":"h","port":1}')
    client.incr(keys.broker_epoch)
    client.hset(keys.key("ops:reassignments"), "orders/0", '{"topic":"orders"}')
    client.sadd(keys.key("ops:throttled_brokers"), "1")
    client.set(keys.key("ops:rebalance"), '{"plan":[]}')
    # runtime
    client.set(keys.key("ops:rebalance_lock"), "token")
    client.set(keys.broker_lease(1), "{}", px=60_000)
    client.hset(keys.key("partition_state"), "orders/0", "{}")


def _dump(client: redis.Redis, keys: KeyLayout) -> dict[str, object]:
    out: dict[str, object] = {}
    for raw in client.scan_iter(match=f"{keys.prefix}*"):
        name = raw.removeprefix(keys.prefix)
        kind = client.type(raw)
        out[name] = {
            "string": client.get,
            "hash": client.hgetall,
            "set": client.smembers,
            "stream": client.xlen,
        }[kind](raw)
    return out


@pytest.fixture
def sync_redis(redis_server: str) -> redis.Redis:
    client = redis.Redis.from_url(redis_server, decode_responses=True)
    yield client
    client.close()


async def test_round_trip_keeps_metadata_and_moves_epochs_and_producer_ids_forward(
    store: MetadataStore,
    sync_redis: redis.Redis,
    keys: KeyLayout,
    cluster_id: str,
    redis_server: str,
    make_redis_server: Callable[[], RedisServer],
    tmp_path: Path,
) -> None:
    await _populate(store, sync_redis, keys)
    before = _dump(sync_redis, keys)
    position = sync_redis.xinfo_stream(keys.metadata_log)["last-generated-id"]
    path = tmp_path / "snapshot.json"

    exported = export_to_file(redis_server, cluster_id=cluster_id, path=path)
    assert (exported.topics, exported.metadata_log_position) == (1, position)
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.json"]  # no temp file left
    document = json.loads(path.read_text())
    assert (document["format"], document["version"]) == ("weir-metadata-snapshot", 1)
    assert "partition_state" not in document["keys"]
    assert "ops:rebalance_lock" not in document["keys"]

    target = make_redis_server()
    imported = import_from_file(target.url, cluster_id=cluster_id, path=path)
    assert imported.topics == 1
    restored_client = redis.Redis.from_url(target.url, decode_responses=True)
    after = _dump(restored_client, keys)

    runtime = {"ops:rebalance_lock", "broker:1", "partition_state", "controller"}
    moved = {"controller_epoch", "broker_epoch", "acls_version", "next_producer_id"}
    for name in set(before) - runtime - moved - {"topics", "incarnation", "metadata_log"}:
        assert after[name] == before[name], name
    assert not runtime & set(after)
    for name in moved:
        gap = PRODUCER_ID_GAP if name == "next_producer_id" else EPOCH_GAP
        assert int(after[name]) == int(before[name]) + gap, name
    assert after["incarnation"] != before["incarnation"]
    # The log is empty and continues above the exported position.
    assert after["metadata_log"] == 0
    new_id = restored_client.xadd(keys.metadata_log, {"type": "x"})
    assert tuple(map(int, new_id.split("-"))) > tuple(map(int, position.split("-")))

    old = TopicImage.from_json("orders", before["topics"]["orders"])
    new = TopicImage.from_json("orders", after["topics"]["orders"])
    assert new.topic_id == old.topic_id
    for index, partition in old.partitions.items():
        restored = new.partitions[index]
        assert (restored.leader, restored.isr, restored.replicas) == (
            partition.leader,
            partition.isr,
            partition.replicas,
        )
        assert restored.leader_epoch == partition.leader_epoch + EPOCH_GAP
        assert restored.partition_epoch == partition.partition_epoch + EPOCH_GAP

    # A controller elected on the restored store continues above every exported epoch, and
    # producer ids above every id handed out before.
    restored_store = MetadataStore.from_url(target.url, cluster_id=cluster_id)
    try:
        epoch = await restored_store.acquire_controller(3, 30_000)
        assert epoch == int(before["controller_epoch"]) + EPOCH_GAP + 1
        assert await restored_store.allocate_producer_id() == 7 + PRODUCER_ID_GAP
        image = await restored_store.snapshot()
        assert image.topic_config("orders") == {"retention.ms": "1000"}
        assert image.broker_config(1) == {"log.retention.ms": "2"}
        assert image.client_quotas == (await store.snapshot()).client_quotas
        assert image.client_quotas
    finally:
        await restored_store.aclose()
        restored_client.close()


async def test_import_refuses_a_target_that_already_has_metadata_and_changes_nothing(
    store: MetadataStore,
    sync_redis: redis.Redis,
    keys: KeyLayout,
    cluster_id: str,
    redis_server: str,
    tmp_path: Path,
) -> None:
    await _populate(store, sync_redis, keys)
    path = tmp_path / "snapshot.json"
    export_to_file(redis_server, cluster_id=cluster_id, path=path)
    before = _dump(sync_redis, keys)
    with pytest.raises(TargetNotEmptyError, match=f"cluster '{cluster_id}'.*{keys.prefix}"):
        import_from_file(redis_server, cluster_id=cluster_id, path=path)
    assert _dump(sync_redis, keys) == before


async def test_a_live_broker_lease_alone_makes_the_target_not_empty(
    sync_redis: redis.Redis, keys: KeyLayout, cluster_id: str, redis_server: str, tmp_path: Path
) -> None:
    path = tmp_path / "empty.json"
    export_to_file(redis_server, cluster_id=f"{cluster_id}-none", path=path)
    sync_redis.set(KeyLayout(f"{cluster_id}-none").broker_lease(2), "{}", px=60_000)
    with pytest.raises(TargetNotEmptyError, match="broker:2"):
        import_from_file(redis_server, cluster_id=f"{cluster_id}-none", path=path)


def _document(**changes: object) -> dict[str, object]:
    document: dict[str, object] = {
        "format": "weir-metadata-snapshot",
        "version": 1,
        "cluster_id": "weir",
        "exported_at_ms": 1,
        "source_incarnation": "",
        "metadata_log_position": "0-0",
        "keys": {},
    }
    document.update(changes)
    return document


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not JSON"),
        (json.dumps({"format": "other"}), '"format" is not "weir-metadata-snapshot"'),
        (json.dumps(_document(version=2)), "version 2, written by a newer Weir"),
        (json.dumps(_document(keys=[])), '"keys" is missing or not a dict'),
        (
            json.dumps(_document(keys={"broker:1": {"type": "string", "value": "{}"}})),
            "key 'broker:1' is not cluster metadata",
        ),
        (
            json.dumps(_document(keys={"topics": {"type": "zset", "value": {}}})),
            "key 'topics' has type 'zset'",
        ),
        (
            json.dumps(_document(keys={"acls": {"type": "set", "value": [1]}})),
            "a set value must hold strings only",
        ),
        (
            json.dumps(_document(keys={"controller_epoch": {"type": "string", "value": "x"}})),
            "counter 'controller_epoch' is 'x'",
        ),
        (
            json.dumps(_document(keys={"topics": {"type": "hash", "value": {"t": "{}"}}})),
            "topic 't' does not parse",
        ),
        (json.dumps(_document(metadata_log_position="soon")), "is no stream id"),
    ],
)
def test_a_bad_file_is_refused_naming_the_problem(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(SnapshotFileError, match=f"{path}.*") as caught:
        read_snapshot_file(path)
    assert problem in str(caught.value)


def test_a_missing_file_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SnapshotFileError, match=f"cannot read {tmp_path / 'gone.json'}"):
        read_snapshot_file(tmp_path / "gone.json")


def test_a_snapshot_of_another_cluster_id_is_refused(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(_document(cluster_id="elsewhere")))
    with pytest.raises(SnapshotFileError, match=f"cluster 'elsewhere'.*is '{cluster_id}'"):
        import_from_file(redis_server, cluster_id=cluster_id, path=path)


def test_rotating_exports_keep_the_newest_and_touch_nothing_else(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> None:
    other = tmp_path / "metadata-another-20240101T000000000Z.json"
    other.write_text("{}")
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    written = [
        export_rotating(redis_server, cluster_id=cluster_id, directory=tmp_path, keep=2)
        for _ in range(3)
    ]
    ours = sorted(p for p in tmp_path.iterdir() if p.name.startswith(f"metadata-{cluster_id}-"))
    assert ours == [written[1].path, written[2].path]
    assert written[2].pruned == (written[0].path,)
    assert other.exists() and notes.exists()
    read_snapshot_file(written[2].path)


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("topics", "metadata"),
        ("configs:broker:", "metadata"),
        ("scram:SCRAM-SHA-512", "metadata"),
        ("ops:rebalance", "metadata"),
        ("ops:rebalance_lock", "runtime"),
        ("broker:3", "runtime"),
        ("partition_state", "runtime"),
        ("metadata_log_committed", "runtime"),
        ("something_new", None),
    ],
)
def test_every_key_name_has_a_class(name: str, kind: str | None) -> None:
    assert classify(name) == kind


async def test_an_import_into_a_sentinel_deployment_is_on_every_replica_in_sync(
    store: MetadataStore,
    sync_redis: redis.Redis,
    keys: KeyLayout,
    cluster_id: str,
    redis_server: str,
    sentinel_deployment: SentinelDeployment,
    tmp_path: Path,
) -> None:
    """Restoring into a new highly available deployment: when the import returns, a failover
    cannot take it back (it waited for the replicas, as metadata writes do)."""
    await _populate(store, sync_redis, keys)
    path = tmp_path / "snapshot.json"
    export_to_file(redis_server, cluster_id=cluster_id, path=path)
    imported = import_from_file(sentinel_deployment.url, cluster_id=cluster_id, path=path)
    primary = sentinel_deployment.primary()
    for server in sentinel_deployment.servers:
        if server is not primary:
            with server.client() as replica:
                assert replica.hexists(keys.topics, "orders")
                assert int(replica.get(keys.controller_epoch)) == imported.controller_epoch

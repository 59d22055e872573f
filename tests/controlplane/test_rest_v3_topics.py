"""REST Proxy v3 topics, topic configs, partitions, replicas and reassignments, checked against
what confluent-kafka's AdminClient sees on the shared 3-broker cluster."""

from __future__ import annotations

import datetime
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from django.conf import settings
from kio.schema.alter_partition_reassignments.v0.request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from kio.static.primitive import i32Timedelta
from rest_framework.test import APIClient

from controlplane.cluster import gateway
from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = pytest.mark.django_db


def _topics() -> str:
    return f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}/topics"


def _topic_configs(admin: AdminClient, topic: str) -> dict:
    resource = ConfigResource("topic", topic)
    return admin.describe_configs([resource])[resource].result(10)


def test_admin_creates_topic_visible_to_kafka_clients(
    cp_cluster: Cluster, admin: APIClient, unique: Callable[[str], str]
) -> None:
    name = unique("created")
    response = admin.post(
        _topics(),
        {
            "topic_name": name,
            "partitions_count": 3,
            "replication_factor": 2,
            "configs": [{"name": "retention.ms", "value": "123456"}],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["kind"] == "KafkaTopic"
    assert body["topic_name"] == name
    assert body["partitions_count"] == 3
    assert body["replication_factor"] == 2
    assert body["is_internal"] is False
    assert body["metadata"]["resource_name"].endswith(f"/topic={name}")
    assert body["partitions"]["related"].endswith(f"/topics/{name}/partitions")
    client = cp_cluster.admin()
    metadata = client.list_topics(timeout=10).topics[name]
    assert len(metadata.partitions) == 3
    assert all(len(p.replicas) == 2 for p in metadata.partitions.values())
    assert _topic_configs(client, name)["retention.ms"].value == "123456"
    listed = admin.get(_topics()).json()
    assert listed["kind"] == "KafkaTopicList"
    assert name in [t["topic_name"] for t in listed["data"]]
    got = admin.get(f"{_topics()}/{name}").json()
    assert got == body


def test_create_with_replicas_assignments_and_validate_only(
    cp_cluster: Cluster, admin: APIClient, unique: Callable[[str], str]
) -> None:
    name = unique("assigned")
    response = admin.post(
        _topics(),
        {
            "topic_name": name,
            "replicas_assignments": [
                {"partition_id": 0, "broker_ids": [2, 3]},
                {"partition_id": 1, "broker_ids": [3, 1]},
            ],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    metadata = cp_cluster.admin().list_topics(timeout=10).topics[name]
    assert [metadata.partitions[i].replicas for i in (0, 1)] == [[2, 3], [3, 1]]
    dry = unique("dry")
    checked = admin.post(
        _topics(),
        {"topic_name": dry, "partitions_count": 2, "validate_only": True},
        format="json",
    )
    assert checked.status_code == 201
    assert checked.json()["partitions_count"] == 2
    assert admin.get(f"{_topics()}/{dry}").status_code == 404


def test_create_bad_input_is_4xx_naming_the_problem(
    cp_cluster: Cluster, admin: APIClient, unique: Callable[[str], str]
) -> None:
    name = unique("bad")
    negative = admin.post(_topics(), {"topic_name": name, "partitions_count": -1}, format="json")
    assert negative.status_code == 400
    assert "partitions_count" in negative.json()["message"]
    too_many_replicas = admin.post(
        _topics(), {"topic_name": name, "replication_factor": 5}, format="json"
    )
    assert too_many_replicas.status_code == 400
    assert "5" in too_many_replicas.json()["message"]
    bad_name = admin.post(_topics(), {"topic_name": "no/slash here"}, format="json")
    assert bad_name.status_code == 400
    assert "topic_name" in bad_name.json()["message"]
    bad_config = admin.post(
        _topics(),
        {"topic_name": name, "configs": [{"name": "retention.ms", "value": "soon"}]},
        format="json",
    )
    assert bad_config.status_code == 400
    assert "retention.ms" in bad_config.json()["message"]
    malformed = admin.post(_topics(), "{not json", content_type="application/json")
    assert malformed.status_code == 400
    assert "JSON" in malformed.json()["message"]
    missing = admin.post(_topics(), {"partitions_count": 1}, format="json")
    assert missing.status_code == 400
    assert "topic_name" in missing.json()["message"]
    assert admin.post(_topics(), {"topic_name": name}, format="json").status_code == 201
    exists = admin.post(_topics(), {"topic_name": name}, format="json")
    assert exists.status_code == 409
    assert "already exists" in exists.json()["message"]
    unknown = admin.get(f"{_topics()}/{unique('nope')}")
    assert unknown.status_code == 404
    assert unknown.json()["error_code"] == 404


def test_only_admins_create_and_delete_topics(
    cp_cluster: Cluster,
    viewer: APIClient,
    operator: APIClient,
    admin: APIClient,
    unique: Callable[[str], str],
) -> None:
    name = unique("guarded")
    for client in (viewer, operator):
        denied = client.post(_topics(), {"topic_name": name}, format="json")
        assert denied.status_code == 403
        assert "needs the admin role" in denied.json()["message"]
    assert admin.post(_topics(), {"topic_name": name}, format="json").status_code == 201
    for client in (viewer, operator):
        assert client.delete(f"{_topics()}/{name}").status_code == 403
    assert (
        viewer.patch(f"{_topics()}/{name}", {"partitions_count": 2}, format="json").status_code
        == 403
    )
    deleted = admin.delete(f"{_topics()}/{name}")
    assert deleted.status_code == 204
    wait_until(
        lambda: name not in cp_cluster.admin().list_topics(timeout=10).topics,
        10,
        lambda: f"{name} still listed after delete",
    )
    assert admin.get(f"{_topics()}/{name}").status_code == 404
    assert admin.delete(f"{_topics()}/{name}").status_code == 404


def test_operator_grows_partitions_and_cannot_shrink(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("grow"), partitions=2)
    grown = operator.patch(f"{_topics()}/{name}", {"partitions_count": 4}, format="json")
    assert grown.status_code == 200, grown.content
    assert grown.json()["partitions_count"] == 4
    assert len(cp_cluster.admin().list_topics(timeout=10).topics[name].partitions) == 4
    shrink = operator.patch(f"{_topics()}/{name}", {"partitions_count": 3}, format="json")
    assert shrink.status_code == 400
    assert "only increase" in shrink.json()["message"]
    same = operator.patch(f"{_topics()}/{name}", {"partitions_count": 4}, format="json")
    assert same.status_code == 400
    assert "already has 4" in same.json()["message"]
    negative = operator.patch(f"{_topics()}/{name}", {"partitions_count": -2}, format="json")
    assert negative.status_code == 400
    assert "partitions_count" in negative.json()["message"]


def test_topic_configs_get_set_reset_and_batch(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("configs"), partitions=1)
    url = f"{_topics()}/{name}/configs"
    listed = operator.get(url).json()
    assert listed["kind"] == "KafkaTopicConfigList"
    entry = {c["name"]: c for c in listed["data"]}["cleanup.policy"]
    assert entry["value"] == "delete"
    assert entry["is_default"] is True
    assert entry["topic_name"] == name
    assert entry["metadata"]["resource_name"].endswith(f"/topic={name}/config=cleanup.policy")

    assert operator.put(f"{url}/retention.ms", {"value": "60000"}, format="json").status_code == 204
    client = cp_cluster.admin()
    assert _topic_configs(client, name)["retention.ms"].value == "60000"
    got = operator.get(f"{url}/retention.ms").json()
    assert got["kind"] == "KafkaTopicConfig"
    assert got["value"] == "60000"
    assert got["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert got["synonyms"][0] == {
        "name": "retention.ms",
        "value": "60000",
        "source": "DYNAMIC_TOPIC_CONFIG",
    }
    assert operator.delete(f"{url}/retention.ms").status_code == 204
    assert _topic_configs(client, name)["retention.ms"].source == 5  # DEFAULT_CONFIG
    batch = operator.post(
        f"{url}:alter",
        {
            "data": [
                {"name": "cleanup.policy", "value": "compact"},
                {"name": "segment.ms", "value": "3600000", "operation": "SET"},
                {"name": "retention.ms", "operation": "DELETE"},
            ]
        },
        format="json",
    )
    assert batch.status_code == 204, batch.content
    configs = _topic_configs(client, name)
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.ms"].value == "3600000"
    everything = operator.get(f"{_topics()}/-/configs").json()
    mine = {c["name"]: c["value"] for c in everything["data"] if c["topic_name"] == name}
    assert mine["cleanup.policy"] == "compact"


def test_topic_config_bad_input_names_the_problem(
    cp_cluster: Cluster, operator: APIClient, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("badcfg"), partitions=1)
    url = f"{_topics()}/{name}/configs"
    unknown = operator.put(f"{url}/no.such.thing", {"value": "1"}, format="json")
    assert unknown.status_code == 400
    assert "no.such.thing" in unknown.json()["message"]
    invalid = operator.put(f"{url}/retention.ms", {"value": "soon"}, format="json")
    assert invalid.status_code == 400
    assert "soon" in invalid.json()["message"]
    assert operator.get(f"{url}/no.such.thing").status_code == 404
    assert operator.delete(f"{url}/no.such.thing").status_code == 404
    bad_op = operator.post(
        f"{url}:alter", {"data": [{"name": "retention.ms", "operation": "MERGE"}]}, format="json"
    )
    assert bad_op.status_code == 400
    assert "operation" in bad_op.json()["message"]
    missing_topic = operator.get(f"{_topics()}/{unique('gone')}/configs")
    assert missing_topic.status_code == 404
    assert viewer.put(f"{url}/retention.ms", {"value": "1"}, format="json").status_code == 403


def test_partitions_and_replicas(
    cp_cluster: Cluster, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("parts"), replica_assignment=[[1, 2, 3], [2, 3, 1]])
    listed = viewer.get(f"{_topics()}/{name}/partitions").json()
    assert listed["kind"] == "KafkaPartitionList"
    assert [p["partition_id"] for p in listed["data"]] == [0, 1]
    one = viewer.get(f"{_topics()}/{name}/partitions/1").json()
    assert one["kind"] == "KafkaPartition"
    assert one["metadata"]["resource_name"].endswith(f"/topic={name}/partition=1")
    leader = cp_cluster.leader(name, 1)
    assert one["leader"]["related"].endswith(f"/partitions/1/replicas/{leader}")
    replicas = viewer.get(f"{_topics()}/{name}/partitions/1/replicas").json()
    assert replicas["kind"] == "KafkaReplicaList"
    assert [r["broker_id"] for r in replicas["data"]] == [2, 3, 1]
    assert [r["is_leader"] for r in replicas["data"]] == [b == leader for b in (2, 3, 1)]
    assert all(r["is_in_sync"] for r in replicas["data"])
    replica = viewer.get(f"{_topics()}/{name}/partitions/1/replicas/{leader}").json()
    assert replica["kind"] == "KafkaReplica"
    assert replica["is_leader"] is True
    assert replica["broker"]["related"].endswith(f"/brokers/{leader}")
    hosted = viewer.get(
        f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}/brokers/2/partition-replicas"
    ).json()
    mine = [(r["partition_id"], r["is_in_sync"]) for r in hosted["data"] if r["topic_name"] == name]
    assert mine == [(0, True), (1, True)]
    for path in ("partitions/7", "partitions/x", "partitions/0/replicas/9"):
        missing = viewer.get(f"{_topics()}/{name}/{path}")
        assert missing.status_code == 404, path
        assert missing.json()["message"]


def test_partition_offsets_are_earliest_and_latest(
    cp_cluster: Cluster, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    """Confluent's List Partition Offsets: log start and high watermark of one partition."""
    name = cp_cluster.create_topic(unique("offset"), partitions=2)
    producer = Producer({"bootstrap.servers": cp_cluster.bootstrap(), "acks": "all"})
    for i in range(3):
        producer.produce(name, b"%d" % i, partition=1)
    assert producer.flush(20) == 0
    url = f"{_topics()}/{name}/partitions/1/offset"
    found = viewer.get(url)
    assert found.status_code == 200, found.content
    body = found.json()
    assert body["kind"] == "KafkaPartitionWithOffsets"
    assert body["metadata"]["self"].endswith(f"/topics/{name}/partitions/1/offset")
    assert body["metadata"]["resource_name"].endswith(
        f"/topic={name}/partition=1/offset_type=earliest_and_latest"
    )
    assert (body["partition_id"], body["earliest_offset"], body["latest_offset"]) == (1, 0, 3)
    assert viewer.get(f"{url}?offset_type=earliest_and_latest").json() == body
    bad = viewer.get(f"{url}?offset_type=latest")
    assert bad.status_code == 400 and "offset_type" in bad.json()["message"]
    assert viewer.get(f"{_topics()}/{name}/partitions/5/offset").status_code == 404


def test_reassignments_empty_and_in_progress(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    base = f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}"
    name = cp_cluster.create_topic(unique("moving"), replica_assignment=[[1]])
    empty = operator.get(f"{_topics()}/{name}/partitions/-/reassignment").json()
    assert empty["kind"] == "KafkaReassignmentList"
    assert empty["data"] == []
    assert operator.get(f"{_topics()}/{name}/partitions/0/reassignment").status_code == 404
    # Slow the move down: ~300 KB at a 2 KB/s leader throttle keeps it in progress.
    # One replica, so acks=1 (the cluster's min.insync.replicas is 2).
    producer = Producer({"bootstrap.servers": cp_cluster.bootstrap(), "linger.ms": 5, "acks": 1})
    for _ in range(300):
        producer.produce(name, b"x" * 1000)
    assert producer.flush(30) == 0
    rate = f"{base}/brokers/1/configs/leader.replication.throttled.rate"
    throttled = f"{_topics()}/{name}/configs/leader.replication.throttled.replicas"
    assert operator.put(rate, {"value": "2000"}, format="json").status_code == 204
    assert operator.put(throttled, {"value": "*"}, format="json").status_code == 204

    def move(replicas: tuple[int, ...] | None) -> None:
        request = AlterPartitionReassignmentsRequest(
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
            topics=(
                ReassignableTopic(
                    name=name,
                    partitions=(ReassignablePartition(partition_index=0, replicas=replicas),),
                ),
            ),
        )
        response = gateway().request_controller(request)
        assert response.error_code == 0, response

    try:
        move((1, 2))

        def listed() -> list[dict]:
            found = operator.get(f"{base}/topics/-/partitions/-/reassignment").json()["data"]
            return [r for r in found if r["topic_name"] == name]

        wait_until(lambda: listed(), 10, lambda: "the reassignment never showed")
        (entry,) = listed()
        assert entry["kind"] == "KafkaReassignment"
        assert entry["partition_id"] == 0
        assert entry["adding_replicas"] == [2]
        assert entry["removing_replicas"] == []
        assert entry["metadata"]["resource_name"].endswith(
            f"/topic={name}/partition=0/reassignment"
        )
        one = operator.get(f"{_topics()}/{name}/partitions/0/reassignment").json()
        assert one["adding_replicas"] == [2]
        by_topic = operator.get(f"{_topics()}/{name}/partitions/-/reassignment").json()
        assert [r["partition_id"] for r in by_topic["data"]] == [0]
    finally:
        move(None)  # cancel
        operator.delete(rate)
        operator.delete(throttled)

"""REST Proxy v3 clusters, brokers and broker configs, and v2 ``/kafka/brokers``, against the
shared 3-broker cluster."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import ConfigResource
from django.conf import settings
from rest_framework.test import APIClient

from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = pytest.mark.django_db


def _described(cluster: Cluster, broker: str) -> dict:
    """AdminClient.describe_configs of one broker (the client lives until the answer)."""
    admin = cluster.admin()
    resource = ConfigResource("broker", broker)
    return admin.describe_configs([resource])[resource].result(10)


def _base() -> str:
    return f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}"


def test_cluster_list_and_detail_link_to_controller_brokers_topics(
    cp_cluster: Cluster, viewer: APIClient
) -> None:
    listed = viewer.get("/kafka/v3/clusters")
    assert listed.status_code == 200
    body = listed.json()
    assert body["kind"] == "KafkaClusterList"
    assert body["metadata"]["next"] is None
    (cluster,) = body["data"]
    cid = settings.WEIR_CLUSTER_ID
    assert cluster["cluster_id"] == cid
    assert cluster["kind"] == "KafkaCluster"
    assert cluster["metadata"]["resource_name"] == f"crn:///kafka={cid}"
    assert cluster["metadata"]["self"].endswith(f"/kafka/v3/clusters/{cid}")
    detail = viewer.get(_base()).json()
    controller = cp_cluster.controller()
    assert detail["controller"]["related"].endswith(f"{_base()}/brokers/{controller}")
    assert detail["brokers"]["related"].endswith(f"{_base()}/brokers")
    assert detail["topics"]["related"].endswith(f"{_base()}/topics")
    assert detail["partition_reassignments"]["related"].endswith(
        "/topics/-/partitions/-/reassignment"
    )


def test_unknown_cluster_id_is_404(viewer: APIClient) -> None:
    response = viewer.get("/kafka/v3/clusters/not-this-one/brokers")
    assert response.status_code == 404
    assert response.json()["error_code"] == 404
    assert "not-this-one" in response.json()["message"]


def test_brokers_list_and_detail_with_host_port_rack(
    cp_cluster: Cluster, viewer: APIClient
) -> None:
    brokers = viewer.get(f"{_base()}/brokers").json()
    assert brokers["kind"] == "KafkaBrokerList"
    ids = [b["broker_id"] for b in brokers["data"]]
    assert ids == [1, 2, 3]
    one = viewer.get(f"{_base()}/brokers/2").json()
    assert one["kind"] == "KafkaBroker"
    assert one["host"] == "127.0.0.1"
    assert one["port"] == cp_cluster[2].port
    # The rack is the one the broker registered with (``runbroker --rack``), or null.
    from controlplane.cluster import gateway

    assert one["rack"] == gateway().image().brokers[2].rack
    assert one["metadata"]["resource_name"].endswith("/broker=2")
    assert one["configs"]["related"].endswith("/brokers/2/configs")
    missing = viewer.get(f"{_base()}/brokers/99")
    assert missing.status_code == 404
    assert "broker 99" in missing.json()["message"]
    garbage = viewer.get(f"{_base()}/brokers/abc")
    assert garbage.status_code == 404
    assert "'abc'" in garbage.json()["message"]


def test_v2_brokers_lists_ids_in_v2_content_type(cp_cluster: Cluster, viewer: APIClient) -> None:
    response = viewer.get("/kafka/brokers")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.kafka.v2+json"
    assert response.json() == {"brokers": [1, 2, 3]}


def test_broker_configs_list_get_set_and_reset(cp_cluster: Cluster, operator: APIClient) -> None:
    url = f"{_base()}/brokers/1/configs"
    listed = operator.get(url).json()
    assert listed["kind"] == "KafkaBrokerConfigList"
    by_name = {c["name"]: c for c in listed["data"]}
    entry = by_name["log.retention.ms"]
    assert set(entry) >= {
        "name",
        "value",
        "is_default",
        "is_read_only",
        "is_sensitive",
        "source",
        "synonyms",
        "broker_id",
    }
    one = operator.get(f"{url}/min.insync.replicas").json()
    assert one["kind"] == "KafkaBrokerConfig"
    assert one["broker_id"] == 1
    assert one["metadata"]["resource_name"].endswith("/broker=1/config=min.insync.replicas")

    name = "log.cleaner.delete.retention.ms"
    put = operator.put(f"{url}/{name}", {"value": "16000"}, format="json")
    assert put.status_code == 204, put.content

    def seen() -> str | None:
        return _described(cp_cluster, "1")[name].value

    wait_until(lambda: seen() == "16000", 10, lambda: f"{name} never became 16000")
    got = operator.get(f"{url}/{name}").json()
    assert got["value"] == "16000"
    every = operator.get(f"{_base()}/brokers/-/configs").json()
    assert every["kind"] == "KafkaBrokerConfigList"
    assert [(c["broker_id"], c["value"]) for c in every["data"] if c["name"] == name] == [
        (1, "16000")
    ]
    assert got["source"] == "DYNAMIC_BROKER_CONFIG"
    assert got["is_default"] is False
    assert operator.delete(f"{url}/{name}").status_code == 204
    wait_until(lambda: seen() != "16000", 10, lambda: f"{name} was never reset")
    batch = operator.post(
        f"{url}:alter",
        {"data": [{"name": name, "value": "17000"}, {"name": name + "x", "value": "1"}]},
        format="json",
    )
    assert batch.status_code == 400
    assert name + "x" in batch.json()["message"]
    assert operator.get(f"{url}/{name}").json()["value"] != "17000"  # all or nothing
    batch = operator.post(
        f"{url}:alter",
        {"data": [{"name": name, "value": "17000"}, {"name": name, "operation": "DELETE"}]},
        format="json",
    )
    assert batch.status_code == 400
    assert "duplicate" in batch.json()["message"]


def test_broker_config_bad_input_names_the_problem(
    cp_cluster: Cluster, operator: APIClient, viewer: APIClient
) -> None:
    url = f"{_base()}/brokers/1/configs"
    unknown = operator.get(f"{url}/no.such.config")
    assert unknown.status_code == 404
    assert "no.such.config" in unknown.json()["message"]
    bad_value = operator.put(
        f"{url}/log.cleaner.delete.retention.ms", {"value": "abc"}, format="json"
    )
    assert bad_value.status_code == 400
    assert "abc" in bad_value.json()["message"]
    no_value = operator.put(f"{url}/log.cleaner.delete.retention.ms", {}, format="json")
    assert no_value.status_code == 400
    assert "value" in no_value.json()["message"]
    denied = viewer.put(f"{url}/log.cleaner.delete.retention.ms", {"value": "1"}, format="json")
    assert denied.status_code == 403


def test_cluster_wide_broker_configs(cp_cluster: Cluster, operator: APIClient) -> None:
    url = f"{_base()}/broker-configs"
    name = "log.cleaner.delete.retention.ms"
    assert operator.put(f"{url}/{name}", {"value": "18000"}, format="json").status_code == 204
    try:
        listed = operator.get(url).json()
        assert listed["kind"] == "KafkaClusterConfigList"
        entry = {c["name"]: c for c in listed["data"]}[name]
        assert entry["value"] == "18000"
        assert entry["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        assert entry["config_type"] == "BROKER"
        one = operator.get(f"{url}/{name}").json()
        assert one["kind"] == "KafkaClusterConfig"
        assert one["metadata"]["resource_name"].endswith(f"/broker-config={name}")

        def broker_value() -> str | None:
            return _described(cp_cluster, "3")[name].value

        wait_until(lambda: broker_value() == "18000", 10, lambda: "default never applied")
        batch = operator.post(
            f"{url}:alter", {"data": [{"name": name, "operation": "DELETE"}]}, format="json"
        )
        assert batch.status_code == 204
        assert operator.get(f"{url}/{name}").status_code == 404
    finally:
        operator.delete(f"{url}/{name}")

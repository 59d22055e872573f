"""``/metrics``: Prometheus text for the control plane and every broker, on the shared cluster.

Records are produced and consumed with confluent-kafka, then the scrape must show the
brokers' bytes in/out and request counters grown, the partition's LEO equal to what was
produced and the group's lag equal to HW - committed offset.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from controlplane import metrics
from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(client: APIClient, query: str = "") -> Samples:
    response = client.get("/metrics" + query)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum over every series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= set(ls))


@pytest.fixture
def fresh_lag(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scrape fetches committed offsets anew (the cache would hide a new commit)."""
    monkeypatch.setattr(metrics, "LAG_CACHE_S", 0.0)


def test_scrape_shows_traffic_offsets_and_group_lag(
    cp_cluster: Cluster, anonymous: APIClient, unique: Callable[[str], str], fresh_lag: None
) -> None:
    topic, group = unique("metered"), unique("metered-group")
    cp_cluster.create_topic(topic, replication_factor=3)
    leader = str(cp_cluster.leader(topic))
    before = scrape(anonymous)
    produced, payload = 50, b"m" * 1000
    producer = Producer({"bootstrap.servers": cp_cluster.bootstrap(), "linger.ms": 5})
    for _ in range(produced):
        producer.produce(topic, value=payload, partition=0)
    assert producer.flush(20) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": cp_cluster.bootstrap(),
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        read = 0
        deadline = time.monotonic() + 20
        while read < produced and time.monotonic() < deadline:
            read += len(consumer.consume(produced, timeout=1))
        assert read == produced
        committed = 20
        consumer.commit(offsets=[TopicPartition(topic, 0, committed)], asynchronous=False)
    finally:
        consumer.close()

    def grown() -> Samples | None:
        after = scrape(anonymous)
        labels = {"topic": topic, "partition": "0"}
        ready = (
            value(after, "kafka_log_log_logendoffset", **labels) == produced
            and value(after, "kafka_topic_partition_current_offset", **labels) == produced
            and value(after, "kafka_consumergroup_lag", group=group, **labels) is not None
            and total(after, "kafka_server_brokertopicmetrics_bytesout_total", broker=leader)
            - total(before, "kafka_server_brokertopicmetrics_bytesout_total", broker=leader)
            >= produced * len(payload)
        )
        return after if ready else None

    after = wait_until(grown, 20, lambda: "the scrape did not catch up with the traffic")
    labels = {"topic": topic, "partition": "0"}
    assert value(after, "kafka_consumergroup_lag", group=group, **labels) == produced - committed
    assert value(after, "kafka_consumergroup_current_offset", group=group, **labels) == committed
    assert value(after, "kafka_log_log_logstartoffset", **labels) == 0
    assert value(after, "kafka_log_log_size", **labels) >= produced * len(payload)
    assert value(after, "kafka_topic_partition_replicas", **labels) == 3
    assert value(after, "kafka_topic_partition_leader", **labels) == int(leader)

    def grew(name: str, **ls: str) -> float:
        return total(after, name, **ls) - total(before, name, **ls)

    assert grew("kafka_server_brokertopicmetrics_bytesin_total", broker=leader) >= (
        produced * len(payload)
    )
    assert (
        grew("kafka_network_requestmetrics_requests_total", broker=leader, request="Produce") >= 1
    )
    assert grew("kafka_network_requestmetrics_requests_total", broker=leader, request="Fetch") >= 1
    assert (
        grew("kafka_network_requestmetrics_totaltimems_count", broker=leader, request="Fetch") >= 1
    )
    # Followers fetch from the leader too: replication bytes are part of bytes out.
    assert grew("kafka_server_brokertopicmetrics_replicationbytesout_total", broker=leader) >= (
        2 * produced * len(payload)
    )
    inf = total(
        after,
        "kafka_network_requestmetrics_totaltimems_bucket",
        broker=leader,
        request="Produce",
        le="+Inf",
    )
    assert inf == value(
        after, "kafka_network_requestmetrics_totaltimems_count", broker=leader, request="Produce"
    )
    # Cluster health.
    assert value(after, "kafka_brokers") == 3
    assert value(after, "weir_controller_id") in (1, 2, 3)
    assert value(after, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert total(after, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(after, "weir_broker_up", broker="2") == 1
    for broker in ("1", "2", "3"):
        assert (
            value(after, "kafka_server_replicamanager_underreplicatedpartitions", broker=broker)
            is not None
        )


def test_http_requests_are_counted_by_route(viewer: APIClient, anonymous: APIClient) -> None:
    viewer.get("/api/me/")
    samples = scrape(anonymous)
    assert (
        value(samples, "weir_http_requests_total", route="/api/me/", method="GET", status="200")
        >= 1
    )
    assert total(samples, "weir_http_request_duration_seconds_count", route="/api/me/") >= 1


def test_one_brokers_series(cp_cluster: Cluster, anonymous: APIClient) -> None:
    samples = wait_until(
        lambda: (
            (s := scrape(anonymous, "?broker=2"))
            and total(s, "kafka_network_requestmetrics_requests_total") > 0
            and s
        ),
        10,
        "broker 2 published no request metrics",
    )
    brokers = {dict(labels).get("broker") for _, labels in samples}
    assert brokers == {"2"}
    assert value(samples, "kafka_server_brokertopicmetrics_bytesin_total", broker="2") is not None
    # The broker process's own gauges (weir.process_stats), read from /proc by the broker.
    assert value(samples, "weir_broker_process_resident_memory_bytes", broker="2") > 20_000_000
    assert value(samples, "weir_broker_process_open_fds", broker="2") > 3
    assert value(samples, "weir_broker_asyncio_tasks", broker="2") >= 1
    assert value(samples, "weir_broker_producer_ids", broker="2") >= 0
    assert anonymous.get("/metrics?broker=x").status_code == 400
    assert anonymous.get("/metrics?broker=99").status_code == 404


def test_metrics_can_require_a_viewer(
    cp_cluster: Cluster, settings, anonymous: APIClient, viewer: APIClient
) -> None:
    settings.WEIR_METRICS_REQUIRE_AUTH = "1"
    assert anonymous.get("/metrics").status_code == 401
    assert viewer.get("/metrics").status_code == 200
    settings.WEIR_METRICS_REQUIRE_AUTH = "0"
    assert anonymous.get("/metrics").status_code == 200


def test_a_single_replica_topic_counts_as_under_min_isr(
    cp_cluster: Cluster, anonymous: APIClient, unique: Callable[[str], str]
) -> None:
    # The cluster's min.insync.replicas is 2 (a static broker config the brokers publish).
    topic = cp_cluster.create_topic(unique("lonely"), replica_assignment=[[3]])
    samples = wait_until(
        lambda: (
            (s := scrape(anonymous))
            and value(s, "kafka_topic_partition_in_sync_replica", topic=topic, partition="0") == 1
            and value(s, "kafka_server_replicamanager_underminisrpartitioncount", broker="3")
            and s
        ),
        10,
        "no under-min-ISR partition on broker 3",
    )
    assert value(samples, "weir_cluster_under_min_isr_partitions") >= 1
    labels = {"topic": topic, "partition": "0"}
    assert value(samples, "kafka_topic_partition_under_replicated_partition", **labels) == 0

"""The control plane against a broker it can only use over SASL: the authorizer is on, the
PLAINTEXT listener's ANONYMOUS may do nothing, and ``User:weir-controlplane`` (SCRAM-SHA-512)
is a super user. With ``WEIR_KAFKA_LISTENER=SASL_PLAINTEXT`` and those credentials the REST
proxy creates and lists topics and produces, the SCRAM users API answers, and the monitor
reads a group's lag — all through the SASL listener."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from django.conf import settings as django_settings
from rest_framework.test import APIClient

from controlplane.cluster import ClusterGateway, reset_gateways
from controlplane.kafka_security import KafkaSecurity
from groups.monitor import Monitor
from tests.controlplane.lag_helpers import wait_high_watermarks
from tests.weir.security.acl_fixtures import STANDARD_AUTHORIZER
from tests.weir.security.conftest import SaslBroker, add_user, running_sasl_broker

pytestmark = pytest.mark.django_db

USER, PASSWORD = "weir-controlplane", "cp-secret-512"
SASL_CONFIG = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.username": USER,
    "sasl.password": PASSWORD,
}


@pytest.fixture(scope="module")
def secured(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    configs = (
        f"authorizer.class.name={STANDARD_AUTHORIZER}",
        f"super.users=User:{USER}",
        "group.initial.rebalance.delay.ms=0",
    )
    directory: Path = tmp_path_factory.mktemp("sasl-cp")
    with running_sasl_broker(redis_server, directory, configs) as broker:
        add_user(redis_server, broker.cluster_id, USER, PASSWORD, ("SCRAM-SHA-512",))
        try:
            yield broker
        finally:
            reset_gateways()  # close this module's clients before their broker stops


@pytest.fixture
def sasl_settings(secured: SaslBroker, settings: object) -> Iterator[None]:
    """Django settings of a control plane that reaches the cluster only over SASL."""
    values = {
        "WEIR_REDIS_URL": secured.redis_url,
        "WEIR_CLUSTER_ID": secured.cluster_id,
        "WEIR_BOOTSTRAP_SERVERS": "",
        "WEIR_KAFKA_LISTENER": "SASL_PLAINTEXT",
        "WEIR_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "WEIR_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "WEIR_KAFKA_SASL_USERNAME": USER,
        "WEIR_KAFKA_SASL_PASSWORD": PASSWORD,
    }
    for name, value in values.items():
        setattr(settings, name, value)
    yield


def _commit(broker: SaslBroker, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": broker.sasl, "group.id": group, **SASL_CONFIG})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_rest_proxy_scram_api_and_monitor_work_over_the_sasl_listener(
    secured: SaslBroker, sasl_settings: None, admin: APIClient
) -> None:
    topics = f"/kafka/v3/clusters/{secured.cluster_id}/topics"
    created = admin.post(
        topics,
        {"topic_name": "secured-orders", "partitions_count": 1, "replication_factor": 1},
        format="json",
    )
    assert created.status_code == 201, created.content
    listed = admin.get(topics)
    assert listed.status_code == 200, listed.content
    assert "secured-orders" in [t["topic_name"] for t in listed.json()["data"]]

    for i in range(3):
        produced = admin.post(
            f"{topics}/secured-orders/records",
            {"value": {"type": "JSON", "data": {"n": i}}},
            format="json",
        )
        assert produced.status_code == 200, produced.content
        assert produced.json()["offset"] == i

    users = admin.get("/api/scram-users/")
    assert users.status_code == 200, users.content
    assert {"name": USER, "mechanisms": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]} in (
        users.json()
    )

    _commit(secured, "secured-readers", "secured-orders", 1)
    wait_high_watermarks({("secured-orders", 0): 3})  # the leader publishes it every second
    from controlplane.cluster import gateway

    gw = gateway()
    assert gw.security.listener == "SASL_PLAINTEXT"
    assert gw.bootstrap_servers() == secured.sasl  # the SASL endpoint, not the primary
    monitor = Monitor(gw, store_history=False)
    try:
        (group,) = [g for g in monitor.tick() if g.group == "secured-readers"]
    finally:
        monitor.close()
    (partition,) = group.partitions
    assert (partition.committed, partition.high_watermark, partition.lag) == (1, 3, 2)


def test_without_the_credentials_the_brokers_refuse_the_control_plane(
    secured: SaslBroker, settings: object, admin: APIClient
) -> None:
    """The check above can fail: as ANONYMOUS on PLAINTEXT the same calls are denied, and the
    API says whose permission is missing instead of failing (or crashing) obscurely."""
    settings.WEIR_REDIS_URL = secured.redis_url
    settings.WEIR_CLUSTER_ID = secured.cluster_id
    settings.WEIR_BOOTSTRAP_SERVERS = ""
    settings.WEIR_KAFKA_LISTENER = "PLAINTEXT"
    listed = admin.get("/api/scram-users/")
    assert listed.status_code == 403, listed.content
    assert "control plane's Kafka principal may not" in listed.json()["message"]
    assert "CLUSTER_AUTHORIZATION_FAILED" in listed.json()["message"]
    body = {"name": "eve", "mechanism": "SCRAM-SHA-256", "password": "x"}
    changed = admin.post("/api/scram-users/", body, format="json")
    assert changed.status_code == 403, changed.content
    assert "CLUSTER_AUTHORIZATION_FAILED" in changed.json()["message"]
    anonymous = ClusterGateway(
        redis_url=secured.redis_url,
        cluster_id=secured.cluster_id,
        security=KafkaSecurity(listener="PLAINTEXT"),
    )
    try:
        assert anonymous.bootstrap_servers() == secured.plaintext
    finally:
        anonymous.close()


def test_a_listener_no_broker_has_is_a_clear_error(secured: SaslBroker) -> None:
    from controlplane.errors import KafkaUnavailable

    gw = ClusterGateway(
        redis_url=secured.redis_url,
        cluster_id=secured.cluster_id,
        security=KafkaSecurity(listener="SASL_SSL"),
    )
    try:
        with pytest.raises(
            KafkaUnavailable, match=r"listener named 'SASL_SSL' \(WEIR_KAFKA_LISTENER\)"
        ):
            gw.bootstrap_servers()
        with pytest.raises(
            KafkaUnavailable,
            match=r"has no listener 'SASL_SSL' \(WEIR_KAFKA_LISTENER\); it registered",
        ):
            gw.request_broker(1, None)
    finally:
        gw.close()
    assert django_settings.WEIR_KAFKA_LISTENER == ""  # the module's settings were restored

"""Three brokers that replicate over a SASL_SSL listener (``inter.broker.listener.name``).

Each broker has its PLAINTEXT primary listener (``--listen``, used by the test harness to see
that it is up) and a SASL_SSL listener; brokers reach each other on SASL_SSL, logging in with
SCRAM-SHA-512 as ``User:broker``, which is in ``super.users``. The authorizer is on, so an
unauthenticated follower could not fetch (ClusterAction): a full ISR proves replication
runs authenticated over TLS. Clients use SASL_SSL as ``User:admin`` (also a super user).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from tests.weir.clients.conftest import free_port
from tests.weir.cluster.conftest import (
    BROKER_IDS,
    FAST_CONFIGS,
    Cluster,
    merge_configs,
    new_cluster,
    raw_request,
    wait_until,
)
from tests.weir.security.acl_fixtures import STANDARD_AUTHORIZER
from tests.weir.security.conftest import add_user
from tests.weir.security.tls_certs import TlsCerts, tls_certs  # noqa: F401
from weir.security.client import ClientSecurity
from weir.security.tls import client_ssl_context

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PASSWORDS = {"broker": "broker-secret", "admin": "admin-secret", "alice": "alice-secret"}


class SecureCluster:
    """The cluster, each broker's SASL_SSL port and how a client logs in there."""

    def __init__(self, cluster: Cluster, sasl_ports: dict[int, int], certs: TlsCerts) -> None:
        self.cluster = cluster
        self.sasl_ports = sasl_ports
        self.certs = certs

    def security(self, user: str) -> ClientSecurity:
        return ClientSecurity(
            protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            username=user,
            password=PASSWORDS[user],
            ssl_context=client_ssl_context(ca_location=self.certs.ca, check_hostname=True),
        )

    def client_config(self, only: list[int] | None = None) -> dict[str, Any]:
        ids = self.cluster.running() if only is None else only
        return {
            "bootstrap.servers": ",".join(f"127.0.0.1:{self.sasl_ports[i]}" for i in ids),
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": self.certs.ca,
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "admin",
            "sasl.password": PASSWORDS["admin"],
        }


@pytest.fixture(scope="module")
def secure_cluster(
    redis_server: str,
    tmp_path_factory: pytest.TempPathFactory,
    tls_certs: TlsCerts,  # noqa: F811
) -> Iterator[SecureCluster]:
    cluster_id = f"ibsec-{uuid.uuid4().hex[:12]}"
    for user, password in PASSWORDS.items():
        add_user(redis_server, cluster_id, user, password, ("SCRAM-SHA-512",))
    directory: Path = tmp_path_factory.mktemp("inter-broker-sasl-ssl")
    configs = merge_configs(
        FAST_CONFIGS,
        [
            f"authorizer.class.name={STANDARD_AUTHORIZER}",
            "super.users=User:broker;User:admin",
            "inter.broker.listener.name=SASL_SSL",
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config="
            f'{SCRAM_MODULE} required username="broker" password="{PASSWORDS["broker"]}";',
            f"listener.name.sasl_ssl.ssl.keystore.location={tls_certs.server_keystore}",
            f"listener.name.sasl_ssl.ssl.truststore.location={tls_certs.ca}",
        ],
    )
    sasl_ports = {i: free_port() for i in BROKER_IDS}
    cluster = new_cluster(
        directory,
        redis_url=redis_server,
        cluster_id=cluster_id,
        configs=configs,
        broker_configs={
            i: [f"listeners=SASL_SSL://127.0.0.1:{port}"] for i, port in sasl_ports.items()
        },
    )
    secure = SecureCluster(cluster, sasl_ports, tls_certs)
    # The harness watches the cluster over SASL_SSL as the admin user.
    cluster.observer = lambda i: (sasl_ports[i], secure.security("admin"))
    cluster.start_all(30)
    try:
        yield secure
    finally:
        cluster.stop_all()


def _metadata(topics: list[str] | None = None) -> MetadataRequest:
    return MetadataRequest(
        topics=None
        if topics is None
        else tuple(MetadataRequestTopic(topic_id=None, name=t) for t in topics),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def _request(port: int, body: Any, security: ClientSecurity) -> Any:
    return raw_request(port, body, timeout=10, security=security, client_id="ib-test")


def test_each_listener_names_every_broker_by_its_endpoint_on_that_listener(
    secure_cluster: SecureCluster,
) -> None:
    cluster, sasl_ports = secure_cluster.cluster, secure_cluster.sasl_ports
    on_sasl = _request(sasl_ports[1], _metadata(), secure_cluster.security("admin"))
    assert {(b.node_id, b.host, b.port) for b in on_sasl.brokers} == {
        (i, "127.0.0.1", sasl_ports[i]) for i in BROKER_IDS
    }
    on_plaintext = raw_request(cluster[2].port, _metadata())
    assert {(b.node_id, b.host, b.port) for b in on_plaintext.brokers} == {
        (i, "127.0.0.1", cluster[i].port) for i in BROKER_IDS
    }

    # FindCoordinator on SASL_SSL names the coordinator (whichever broker) by its SASL_SSL port.
    def coordinator() -> Any:
        response = _request(
            sasl_ports[3],
            FindCoordinatorRequest(key_type=0, coordinator_keys=("ib-group",)),
            secure_cluster.security("admin"),
        )
        (found,) = response.coordinators
        return found if found.error_code == 0 else None

    found = wait_until(coordinator, 20, "a coordinator for ib-group")
    assert (found.host, found.port) == ("127.0.0.1", sasl_ports[found.node_id])


def test_replication_over_sasl_ssl_survives_losing_the_leader(
    secure_cluster: SecureCluster,
) -> None:
    cluster = secure_cluster.cluster
    topic = f"ib-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(secure_cluster.client_config())
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])
    futures[topic].result(20)
    cluster.wait_full_isr(topic)

    # The authorizer is on: a user without ACLs may not even see the topic.
    denied = _request(
        secure_cluster.sasl_ports[1], _metadata([topic]), secure_cluster.security("alice")
    )
    assert denied.topics[0].error_code == 29  # TOPIC_AUTHORIZATION_FAILED

    producer = Producer({**secure_cluster.client_config(), "acks": "all"})
    values = [f"v{i}".encode() for i in range(50)]
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(20) == 0
    info = cluster.wait_full_isr(topic)
    assert sorted(info.isr) == list(BROKER_IDS)

    old_leader = info.leader
    cluster.stop(old_leader)
    cluster.wait_partition(
        topic, lambda p: p.leader not in (-1, old_leader), what="a new leader", timeout=30
    )
    consumer = Consumer(
        {
            **secure_cluster.client_config(),
            "group.id": f"ib-reader-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    received: list[bytes] = []
    try:

        def read_all() -> bool:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                received.append(message.value())
            return len(received) >= len(values)

        wait_until(read_all, 30, lambda: f"read {len(received)} of {len(values)}", interval=0)
    finally:
        consumer.close()
    assert received == values

"""Real clients over TLS: one broker with PLAINTEXT, SSL (client certificates required, a
PKCS12 keystore) and SASL_SSL (SCRAM, a PEM keystore) listeners and the authorizer on.

``User:alice`` (SCRAM over SASL_SSL) is the super user who creates topics and ACLs; the SSL
clients are the certificate principals ``User:CN=writer,OU=eng,O=Acme`` (all on topics and
groups prefixed ``tls-``) and ``User:CN=reader,OU=eng,O=Acme`` (only what a test grants).
"""

from __future__ import annotations

import socket
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.weir.inprocess import ThreadedBroker
from tests.weir.security.conftest import AUTHORIZER_CONFIGS, USERS, broker_with_users
from tests.weir.security.round_trips import (
    aiokafka_round_trip,
    confluent_round_trip,
    confluent_values,
    kafka_python_conf,
    kafka_python_round_trip,
)
from tests.weir.security.tls_certs import ClientCert, TlsCerts, tls_certs  # noqa: F401

pytestmark = [
    # kafka-python 3.0 loads its SASL message schemas lazily through importlib.resources.
    pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning"),
]


@dataclass
class TlsBroker:
    broker: ThreadedBroker  # in-process (tests/weir/inprocess.py)
    ssl_port: int
    sasl_ssl_port: int
    certs: TlsCerts
    log_path: Path

    @property
    def ssl(self) -> str:
        return f"127.0.0.1:{self.ssl_port}"

    @property
    def sasl_ssl(self) -> str:
        return f"127.0.0.1:{self.sasl_ssl_port}"


@pytest.fixture(scope="module")
def tls_broker(
    redis_server: str,
    tmp_path_factory: pytest.TempPathFactory,
    tls_certs: TlsCerts,  # noqa: F811
) -> Iterator[TlsBroker]:
    with broker_with_users(
        redis_server,
        tmp_path_factory.mktemp("tls-broker"),
        [
            "listeners=SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            *AUTHORIZER_CONFIGS,
            "group.initial.rebalance.delay.ms=0",
            # SSL: a PKCS12 keystore, client certificates required.
            f"listener.name.ssl.ssl.keystore.location={tls_certs.server_p12}",
            "listener.name.ssl.ssl.keystore.type=PKCS12",
            f"listener.name.ssl.ssl.keystore.password={TlsCerts.P12_PASSWORD}",
            "listener.name.ssl.ssl.client.auth=required",
            # SASL_SSL (and the SSL truststore): the unprefixed configs, a PEM keystore.
            f"ssl.keystore.location={tls_certs.server_keystore}",
            f"ssl.truststore.location={tls_certs.ca}",
        ],
    ) as process:
        broker = TlsBroker(
            process,
            process.listener_port("SSL"),
            process.listener_port("SASL_SSL"),
            tls_certs,
            process.log_path,
        )
        _create_acls(
            broker,
            [
                AclBinding(
                    rtype,
                    "tls-",
                    ResourcePatternType.PREFIXED,
                    tls_certs.writer.principal,
                    "*",
                    AclOperation.ALL,
                    AclPermissionType.ALLOW,
                )
                for rtype in (ResourceType.TOPIC, ResourceType.GROUP)
            ],
        )
        yield broker


# -- client configurations --------------------------------------------------------------------
def _alice(broker: TlsBroker, password: str = USERS["alice"][0]) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.sasl_ssl,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": broker.certs.ca,
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": password,
    }


def _cert_conf(broker: TlsBroker, client: ClientCert) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.ssl,
        "security.protocol": "SSL",
        "ssl.ca.location": broker.certs.ca,
        "ssl.certificate.location": client.cert,
        "ssl.key.location": client.key,
    }


def _create_acls(broker: TlsBroker, bindings: list[AclBinding]) -> None:
    admin = AdminClient(_alice(broker))
    for future in admin.create_acls(bindings).values():
        future.result(timeout=10)


def _create_topic(broker: TlsBroker, prefix: str) -> str:
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(_alice(broker))
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(timeout=10)
    return topic


# -- SSL with client certificates ---------------------------------------------------------------
def test_confluent_kafka_round_trip_with_client_certificate(tls_broker: TlsBroker) -> None:
    topic = _create_topic(tls_broker, "tls-ck")
    confluent_round_trip(
        _cert_conf(tls_broker, tls_broker.certs.writer), topic, group=f"tls-g-{topic}"
    )


def test_kafka_python_round_trip_with_client_certificate(tls_broker: TlsBroker) -> None:
    topic = _create_topic(tls_broker, "tls-kp")
    kafka_python_round_trip(
        kafka_python_conf(_cert_conf(tls_broker, tls_broker.certs.writer)),
        topic,
        group=f"tls-kp-{topic}",
    )


async def test_aiokafka_round_trip_with_client_certificate(tls_broker: TlsBroker) -> None:
    from aiokafka.helpers import create_ssl_context

    certs = tls_broker.certs
    topic = _create_topic(tls_broker, "tls-aio")
    context = create_ssl_context(
        cafile=certs.ca, certfile=certs.writer.cert, keyfile=certs.writer.key
    )
    conf = {"bootstrap_servers": tls_broker.ssl, "security_protocol": "SSL"}
    await aiokafka_round_trip({**conf, "ssl_context": context}, topic, group=f"tls-aio-{topic}")


def test_certificate_without_write_acl_gets_topic_authorization_failed(
    tls_broker: TlsBroker,
) -> None:
    certs = tls_broker.certs
    topic = _create_topic(tls_broker, "tls-ro")
    _create_acls(
        tls_broker,
        [
            AclBinding(
                ResourceType.TOPIC,
                topic,
                ResourcePatternType.LITERAL,
                certs.reader.principal,
                "*",
                AclOperation.DESCRIBE,
                AclPermissionType.ALLOW,
            )
        ],
    )
    errors: list[KafkaError | None] = []
    producer = Producer(
        {
            **_cert_conf(tls_broker, certs.reader),
            "enable.idempotence": False,
            "message.timeout.ms": 5000,
        }
    )
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    assert len(errors) == 1
    assert errors[0] is not None
    assert errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # The writer's certificate, with Write on tls-*, may produce to the same topic.
    writer = Producer(_cert_conf(tls_broker, certs.writer))
    writer.produce(topic, b"w")
    assert writer.flush(15) == 0


def test_metadata_shows_a_certificate_only_the_topics_it_may_describe(
    tls_broker: TlsBroker,
) -> None:
    certs = tls_broker.certs
    visible = _create_topic(tls_broker, "tls-visible")
    hidden = _create_topic(tls_broker, "tls-hidden")
    _create_acls(
        tls_broker,
        [
            AclBinding(
                ResourceType.TOPIC,
                visible,
                ResourcePatternType.LITERAL,
                certs.reader.principal,
                "*",
                AclOperation.DESCRIBE,
                AclPermissionType.ALLOW,
            )
        ],
    )
    reader_topics = AdminClient(_cert_conf(tls_broker, certs.reader)).list_topics(timeout=10)
    writer_topics = AdminClient(_cert_conf(tls_broker, certs.writer)).list_topics(timeout=10)
    assert visible in reader_topics.topics
    assert hidden not in reader_topics.topics
    assert {visible, hidden} <= set(writer_topics.topics)
    # The SSL listener advertises itself.
    assert [(b.host, b.port) for b in reader_topics.brokers.values()] == [
        ("127.0.0.1", tls_broker.ssl_port)
    ]


# -- SASL_SSL -------------------------------------------------------------------------------
def test_confluent_kafka_round_trip_over_sasl_ssl(tls_broker: TlsBroker) -> None:
    topic = _create_topic(tls_broker, "sasl-ssl-ck")
    confluent_round_trip(_alice(tls_broker), topic)


def test_kafka_python_round_trip_over_sasl_ssl(tls_broker: TlsBroker) -> None:
    topic = _create_topic(tls_broker, "sasl-ssl-kp")
    kafka_python_round_trip(kafka_python_conf(_alice(tls_broker)), topic)


async def test_aiokafka_round_trip_over_sasl_ssl(tls_broker: TlsBroker) -> None:
    from aiokafka.helpers import create_ssl_context

    topic = _create_topic(tls_broker, "sasl-ssl-aio")
    conf = kafka_python_conf(_alice(tls_broker))
    conf["ssl_context"] = create_ssl_context(cafile=conf.pop("ssl_cafile"))
    await aiokafka_round_trip(conf, topic)


def test_wrong_password_over_sasl_ssl_is_an_authentication_failure(
    tls_broker: TlsBroker,
) -> None:
    errors: list[KafkaError] = []
    admin = AdminClient(
        {**_alice(tls_broker, "wrong"), "error_cb": errors.append, "reconnect.backoff.ms": 2000}
    )
    with pytest.raises(Exception):  # noqa: B017 - librdkafka surfaces it as a KafkaException
        admin.list_topics(timeout=2)
    admin.poll(0.5)  # error_cb runs from poll
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


# -- failed handshakes --------------------------------------------------------------------------
def _handshake(broker: TlsBroker, client: ClientCert) -> bytes:
    """TLS handshake with ``client``'s certificate, then an ApiVersions v0 request; what
    comes back (b"" when the broker closes the connection)."""
    context = ssl.create_default_context(cafile=broker.certs.ca)
    context.load_cert_chain(client.cert, client.key)
    with socket.create_connection(("127.0.0.1", broker.ssl_port), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                # TLS 1.3: the server checks the client certificate after the client's
                # handshake is done; its verdict arrives with the first read.
                tls.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")
                return tls.recv(4096)
        except (ssl.SSLError, ConnectionError):
            return b""


def test_untrusted_certificate_and_plaintext_client_are_dropped_others_keep_working(
    tls_broker: TlsBroker,
) -> None:
    certs = tls_broker.certs
    assert _handshake(tls_broker, certs.untrusted) == b""
    # A plaintext Kafka client (ApiVersions v0) on the TLS port: the broker reads it as a
    # broken ClientHello and closes; no Kafka response comes back.
    with socket.create_connection(("127.0.0.1", tls_broker.ssl_port), timeout=10) as raw:
        raw.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")
        assert raw.recv(4096)[:4] != b"\x00\x00\x00\x0a"
        assert raw.recv(4096) == b""  # closed
    # Garbage, then a hang-up halfway through.
    with socket.create_connection(("127.0.0.1", tls_broker.ssl_port), timeout=10) as raw:
        raw.sendall(b"\x16\x03\x01\x00")
    # The trusted client on the same listener is served.
    answer = _handshake(tls_broker, certs.writer)
    assert answer[4:8] == b"\x00\x00\x00\x01"  # the ApiVersions response's correlation id
    topic = _create_topic(tls_broker, "tls-after")
    confluent_round_trip(_cert_conf(tls_broker, certs.writer), topic, group=f"tls-g-{topic}")
    log = tls_broker.log_path.read_text()
    assert "TLS handshake failed" in log
    assert "Traceback" not in log


def test_large_fetch_responses_cross_tls_intact(tls_broker: TlsBroker) -> None:
    """Fetch responses past 64 KB leave as pread pieces of up to 1 MB written through TLS."""
    topic = _create_topic(tls_broker, "tls-big")
    conf = _cert_conf(tls_broker, tls_broker.certs.writer)
    values = [bytes([i]) * 200_000 for i in range(12)]  # ~2.4 MB, several 1 MB pieces
    producer = Producer({**conf, "compression.type": "none", "linger.ms": 50})
    for value in values:
        producer.produce(topic, value=value)
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            **conf,
            "group.id": f"tls-g-{topic}",
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 8 * 1024 * 1024,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
        }
    )
    assert confluent_values(consumer, topic, len(values), polls=60) == values


# -- the control plane as a TLS client ------------------------------------------------------------
@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_control_plane_connects_over_tls_with_its_own_credentials(
    tls_broker: TlsBroker, listener: str
) -> None:
    """The gateway's two kinds of client, librdkafka (AdminClient) and Weir's kio
    BrokerClient, both reach the broker through the TLS listener named by
    ``WEIR_KAFKA_LISTENER``: with the writer's certificate on SSL, as alice on SASL_SSL."""
    from kio.schema.describe_cluster.v0.request import DescribeClusterRequest

    from controlplane.cluster import ClusterGateway
    from controlplane.kafka_security import KafkaSecurity

    certs = tls_broker.certs
    if listener == "SSL":
        security = KafkaSecurity.checked(
            listener="SSL",
            protocol="SSL",
            ca_location=certs.ca,
            certificate_location=certs.writer.cert,
            key_location=certs.writer.key,
        )
        endpoint, port = tls_broker.ssl, tls_broker.ssl_port
    else:
        security = KafkaSecurity.checked(
            listener="SASL_SSL",
            protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            username="alice",
            password=USERS["alice"][0],
            ca_location=certs.ca,
        )
        endpoint, port = tls_broker.sasl_ssl, tls_broker.sasl_ssl_port
    topic = _create_topic(tls_broker, "tls-cp")
    gateway = ClusterGateway(
        redis_url=tls_broker.broker.redis_url,
        cluster_id=tls_broker.broker.cluster_id,
        security=security,
    )
    try:
        assert gateway.bootstrap_servers() == endpoint
        assert topic in gateway.admin().list_topics(timeout=10).topics
        described = gateway.request_broker(
            1, DescribeClusterRequest(include_cluster_authorized_operations=True)
        )
        # The broker answered on the TLS listener, so it names itself by that endpoint; the
        # writer holds no cluster ACL, alice is a super user.
        assert [(b.host, b.port) for b in described.brokers] == [("127.0.0.1", port)]
        assert (described.cluster_authorized_operations != 0) == (listener == "SASL_SSL")
    finally:
        gateway.close()

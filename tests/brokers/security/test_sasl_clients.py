"""Real Kafka clients over SASL_PLAINTEXT: SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

from tests.brokers.security.conftest import SaslBroker


def _sasl_conf(broker: SaslBroker, mechanism: str, user: str, password: str) -> dict:
    return {
        "bootstrap.servers": broker.sasl,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def _produce_consume(conf: dict) -> None:
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for i in range(5):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(100):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            values.append(message.value())
            if len(values) == 5:
                break
    finally:
        consumer.close()
    assert values == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize(
    ("mechanism", "user", "password"),
    [
        ("SCRAM-SHA-512", "alice", "alice-secret"),
        ("SCRAM-SHA-256", "alice", "alice-secret"),
        ("PLAIN", "alice", "alice-secret"),
        ("PLAIN", "bob", "bob-secret"),  # only a SCRAM-SHA-256 credential to verify against
    ],
)
def test_confluent_kafka_produces_and_consumes_over_sasl(
    sasl_broker: SaslBroker, mechanism: str, user: str, password: str
) -> None:
    _produce_consume(_sasl_conf(sasl_broker, mechanism, user, password))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_wrong_password_is_reported_as_authentication_failure(
    sasl_broker: SaslBroker, mechanism: str
) -> None:
    errors: list[KafkaError] = []
    conf = _sasl_conf(sasl_broker, mechanism, "alice", "wrong")
    admin = AdminClient({**conf, "error_cb": errors.append, "reconnect.backoff.ms": 2000})
    with pytest.raises(Exception):  # noqa: B017 - librdkafka surfaces it as a KafkaException
        admin.list_topics(timeout=2)
    admin.poll(0.5)  # error_cb runs from poll
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert any(
        "SASL_AUTHENTICATION_FAILED" in e.str() or "Authentication failed" in e.str()
        for e in errors
    ), errors


def test_unknown_user_is_rejected(sasl_broker: SaslBroker) -> None:
    errors: list[KafkaError] = []
    conf = _sasl_conf(sasl_broker, "SCRAM-SHA-256", "mallory", "x")
    admin = AdminClient({**conf, "error_cb": errors.append, "reconnect.backoff.ms": 2000})
    with pytest.raises(Exception):  # noqa: B017
        admin.list_topics(timeout=2)
    admin.poll(0.5)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_metadata_advertises_the_listener_the_client_connected_to(
    sasl_broker: SaslBroker,
) -> None:
    sasl = AdminClient(_sasl_conf(sasl_broker, "SCRAM-SHA-512", "alice", "alice-secret"))
    brokers = sasl.list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", sasl_broker.sasl_port)]
    plain = AdminClient({"bootstrap.servers": sasl_broker.plaintext})
    brokers = plain.list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", sasl_broker.process.port)]


# kafka-python 3.0 loads its SASL message schemas lazily through importlib.resources.read_text.
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
def test_kafka_python_scram_sha_512_round_trip(sasl_broker: SaslBroker) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    topic = f"kp-{uuid.uuid4().hex[:8]}"
    conf = {
        "bootstrap_servers": sasl_broker.sasl,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    producer = KafkaProducer(**conf)
    producer.send(topic, b"hello").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", **conf)
    values: list[bytes] = []
    try:
        for _ in range(40):
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
            if values:
                break
    finally:
        consumer.close()
    assert values == [b"hello"]


async def test_aiokafka_scram_sha_256_round_trip(sasl_broker: SaslBroker) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = f"aio-{uuid.uuid4().hex[:8]}"
    conf = {
        "bootstrap_servers": sasl_broker.sasl,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
    }
    producer = AIOKafkaProducer(**conf)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"hi")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **conf)
    await consumer.start()
    try:
        message = await asyncio.wait_for(consumer.getone(), 15)
    finally:
        await consumer.stop()
    assert message.value == b"hi"


def test_plaintext_listener_is_unchanged_and_anonymous(sasl_broker: SaslBroker) -> None:
    _produce_consume({"bootstrap.servers": sasl_broker.plaintext})

"""Real Kafka clients over SASL_PLAINTEXT: SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient

from tests.weir.security.conftest import SaslBroker, sasl_conf
from tests.weir.security.round_trips import (
    aiokafka_round_trip,
    confluent_round_trip,
    kafka_python_conf,
    kafka_python_round_trip,
)


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
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    confluent_round_trip(sasl_conf(sasl_broker.sasl, user, mechanism, password), topic, count=5)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_wrong_password_is_reported_as_authentication_failure(
    sasl_broker: SaslBroker, mechanism: str
) -> None:
    errors: list[KafkaError] = []
    conf = sasl_conf(sasl_broker.sasl, "alice", mechanism, "wrong")
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
    conf = sasl_conf(sasl_broker.sasl, "mallory", "SCRAM-SHA-256", "x")
    admin = AdminClient({**conf, "error_cb": errors.append, "reconnect.backoff.ms": 2000})
    with pytest.raises(Exception):  # noqa: B017
        admin.list_topics(timeout=2)
    admin.poll(0.5)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


def test_metadata_advertises_the_listener_the_client_connected_to(
    sasl_broker: SaslBroker,
) -> None:
    sasl = AdminClient(sasl_conf(sasl_broker.sasl, "alice", "SCRAM-SHA-512", "alice-secret"))
    brokers = sasl.list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", sasl_broker.sasl_port)]
    plain = AdminClient({"bootstrap.servers": sasl_broker.plaintext})
    brokers = plain.list_topics(timeout=10).brokers
    assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", sasl_broker.broker.port)]


# kafka-python 3.0 loads its SASL message schemas lazily through importlib.resources.read_text.
@pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")
def test_kafka_python_scram_sha_512_round_trip(sasl_broker: SaslBroker) -> None:
    conf = sasl_conf(sasl_broker.sasl, "alice", "SCRAM-SHA-512", "alice-secret")
    kafka_python_round_trip(kafka_python_conf(conf), f"kp-{uuid.uuid4().hex[:8]}")


async def test_aiokafka_scram_sha_256_round_trip(sasl_broker: SaslBroker) -> None:
    conf = sasl_conf(sasl_broker.sasl, "alice", "SCRAM-SHA-256", "alice-secret")
    await aiokafka_round_trip(kafka_python_conf(conf), f"aio-{uuid.uuid4().hex[:8]}")


def test_plaintext_listener_is_unchanged_and_anonymous(sasl_broker: SaslBroker) -> None:
    topic = f"plain-{uuid.uuid4().hex[:8]}"
    confluent_round_trip({"bootstrap.servers": sasl_broker.plaintext}, topic, count=5)

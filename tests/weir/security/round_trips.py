"""Produce-then-consume round trips with each real client, for the security tests.

Each helper produces to ``topic`` with the given client configuration, consumes from the
earliest offset in ``group`` and asserts that exactly what it produced came back. The
configuration carries the security settings (SASL, TLS) under test.
"""

from __future__ import annotations

import asyncio
from typing import Any

from confluent_kafka import Consumer, Producer

__all__ = [
    "aiokafka_round_trip",
    "confluent_round_trip",
    "confluent_values",
    "kafka_python_conf",
    "kafka_python_round_trip",
]

# librdkafka's name of a security setting -> kafka-python's (and aiokafka's) keyword.
_KAFKA_PYTHON_NAMES = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
}


def kafka_python_conf(conf: dict[str, Any]) -> dict[str, Any]:
    """The librdkafka settings ``conf`` as kafka-python's keyword arguments (aiokafka takes
    the same ones but for TLS files, which it reads from an ``ssl_context``)."""
    return {_KAFKA_PYTHON_NAMES[name]: value for name, value in conf.items()}


def confluent_values(consumer: Consumer, topic: str, count: int, polls: int) -> list[bytes]:
    """Subscribe ``consumer`` to ``topic`` and poll (half a second at most each time, at most
    ``polls`` times) until ``count`` values came; the values, and the consumer closed."""
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(polls):
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            values.append(message.value())
            if len(values) == count:
                break
    finally:
        consumer.close()
    return values


def confluent_round_trip(
    conf: dict[str, Any], topic: str, *, group: str | None = None, count: int = 3
) -> None:
    producer = Producer(conf)
    for i in range(count):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer(
        {**conf, "group.id": group or f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    values = confluent_values(consumer, topic, count, polls=100)
    assert values == [f"m{i}".encode() for i in range(count)]


def kafka_python_round_trip(conf: dict[str, Any], topic: str, *, group: str | None = None) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(**conf)
    try:
        producer.send(topic, b"hello").get(timeout=15)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic, group_id=group or f"kp-{topic}", auto_offset_reset="earliest", **conf
    )
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


async def aiokafka_round_trip(
    conf: dict[str, Any], topic: str, *, group: str | None = None
) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    producer = AIOKafkaProducer(**conf)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"hi")
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        topic, group_id=group or f"aio-{topic}", auto_offset_reset="earliest", **conf
    )
    await consumer.start()
    try:
        message = await asyncio.wait_for(consumer.getone(), 15)
    finally:
        await consumer.stop()
    assert message.value == b"hi"

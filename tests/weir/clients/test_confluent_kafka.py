"""librdkafka (confluent-kafka) against a real in-process broker (tests/weir/inprocess.py)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from tests.weir.clients.helpers import CODECS, create_topic
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration


def consume_all(bootstrap: str, topic: str, count: int, partitions: int = 1) -> list:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    messages = []
    deadline = time.monotonic() + 30
    while len(messages) < count and time.monotonic() < deadline:
        batch = consumer.consume(num_messages=1000, timeout=0.5)
        for message in batch:
            assert message.error() is None, message.error()
            messages.append(message)
    consumer.close()
    return messages


@pytest.mark.parametrize("codec", CODECS)
def test_keyed_records_with_headers_round_trip_in_every_codec(
    broker: ThreadedBroker, codec: str
) -> None:
    topic = create_topic(broker.bootstrap, f"codec-{codec}")
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 5}
    )
    sent = []
    for i in range(500):
        key = f"key-{i % 7}".encode()
        value = f"value-{i}-".encode() * 10
        headers = [("h", str(i).encode())]
        timestamp = 1_700_000_000_000 + i
        producer.produce(topic, value=value, key=key, headers=headers, timestamp=timestamp)
        sent.append((key, value, timestamp))
    assert producer.flush(20) == 0
    received = consume_all(broker.bootstrap, topic, len(sent))
    assert [m.offset() for m in received] == list(range(len(sent)))
    assert [(m.key(), m.value(), m.timestamp()[1]) for m in received] == sent
    assert received[3].headers() == [("h", b"3")]


def test_offsets_for_times_finds_first_record_at_or_after(broker: ThreadedBroker) -> None:
    topic = "by-time"
    create_topic(broker.bootstrap, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for i in range(100):
        producer.produce(topic, value=b"x", timestamp=1_600_000_000_000 + i * 1000)
    producer.flush(20)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "t"})
    found = consumer.offsets_for_times(
        [TopicPartition(topic, 0, 1_600_000_000_000 + 42_500)], timeout=10
    )
    assert found[0].offset == 43
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    assert (low, high) == (0, 100)
    consumer.close()


def test_delete_records_moves_log_start_offset(broker: ThreadedBroker) -> None:
    topic = "trim"
    create_topic(broker.bootstrap, topic)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(50):
        producer.produce(topic, value=str(i).encode())
    producer.flush(20)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, 0, 20)])
    result = futures[TopicPartition(topic, 0, 20)].result(15)
    assert result.low_watermark == 20
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "t"})
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    assert (low, high) == (20, 50)
    consumer.close()


def test_admin_creates_alters_and_deletes_topics(broker: ThreadedBroker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("adm", num_partitions=2, replication_factor=1)])["adm"].result(15)
    with pytest.raises(KafkaException) as exists:
        admin.create_topics([NewTopic("adm", 1, 1)])["adm"].result(15)
    assert exists.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    with pytest.raises(KafkaException) as bad_name:
        admin.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"].result(15)
    assert bad_name.value.args[0].code() == 17  # INVALID_TOPIC_EXCEPTION
    with pytest.raises(KafkaException) as bad_rf:
        admin.create_topics([NewTopic("rf", 1, 3)])["rf"].result(15)
    assert bad_rf.value.args[0].name() == "INVALID_REPLICATION_FACTOR"
    admin.create_partitions([NewPartitions("adm", 5)])["adm"].result(15)
    assert len(admin.list_topics(timeout=10).topics["adm"].partitions) == 5
    admin.delete_topics(["adm"])["adm"].result(15)
    assert "adm" not in admin.list_topics(timeout=10).topics
    assert not (broker.data_dir / "adm-0").exists()


def test_idempotent_producer_delivers_20000_records_exactly_once(broker: ThreadedBroker) -> None:
    topic = "idem"
    create_topic(broker.bootstrap, topic)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 2,
            "batch.num.messages": 500,
        }
    )
    for i in range(20_000):
        while True:
            try:
                producer.produce(topic, value=str(i).encode())
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    received = consume_all(broker.bootstrap, topic, 20_000)
    assert [int(m.value()) for m in received] == list(range(20_000))

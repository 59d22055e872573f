"""What the leader does to produced batches, per topic config, seen by real clients.

compression.type: confluent-kafka and kafka-python produce in their own codecs to a topic whose
``compression.type`` names another; the batches on disk are in the topic's codec (or the
producer's, for ``producer``), and both clients read back every record with its offset,
key, value, headers and timestamp. Changing the config (IncrementalAlterConfigs) applies to
the next append, as Kafka's dynamic topic configs do.

message.timestamp.before/after.max.ms: a record stamped too far from the broker's clock is
refused with INVALID_TIMESTAMP, which the client reports for that record only.
"""

from __future__ import annotations

import time

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.weir.inprocess import ThreadedBroker

from .helpers import (
    CODEC_IDS,
    consume_confluent,
    consume_kafka_python,
    create_topic,
    make_records,
    produce_confluent,
    produce_kafka_python,
    stored_batches,
)


def _set_compression(bootstrap: str, topic: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    change = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry("compression.type", value, incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([change])[change].result(15)


def test_the_topic_codec_is_stored_and_every_client_reads_it(broker: ThreadedBroker) -> None:
    topic = create_topic(broker.bootstrap, "recompressed", **{"compression.type": "zstd"})
    written = make_records("confluent", 40)
    offsets = produce_confluent(broker.bootstrap, topic, written, codec="lz4")
    python_written = make_records("python", 40, base_timestamp=1_700_000_100_000)
    offsets += produce_kafka_python(broker.bootstrap, topic, python_written, codec="gzip")
    assert {h.compression for h in stored_batches(broker.data_dir, topic)} == {CODEC_IDS["zstd"]}

    _set_compression(broker.bootstrap, topic, "producer")
    kept = make_records("kept", 10, base_timestamp=1_700_000_200_000)
    offsets += produce_confluent(broker.bootstrap, topic, kept, codec="snappy")
    assert stored_batches(broker.data_dir, topic)[-1].compression == CODEC_IDS["snappy"]

    expected = list(zip(offsets, written + python_written + kept, strict=True))
    assert consume_confluent(broker.bootstrap, topic, len(expected)) == expected
    assert consume_kafka_python(broker.bootstrap, topic, len(expected)) == expected


def test_a_record_outside_the_timestamp_limits_gets_invalid_timestamp(
    broker: ThreadedBroker,
) -> None:
    topic = create_topic(
        broker.bootstrap,
        "timestamp-limits",
        **{"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "0"},
    )
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0})
    outcomes: dict[str, object] = {}

    def delivered(err: object, msg: object) -> None:
        outcomes[msg.value().decode()] = err  # type: ignore[attr-defined]

    now = int(time.time() * 1000)
    for value, timestamp in (("now", now - 1000), ("old", now - 7_200_000), ("future", 2**50)):
        producer.produce(topic, value=value.encode(), timestamp=timestamp, on_delivery=delivered)
        producer.flush(15)
    assert outcomes["now"] is None
    for refused in ("old", "future"):
        assert outcomes[refused].code() == KafkaError.INVALID_TIMESTAMP  # type: ignore[attr-defined]

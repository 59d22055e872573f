"""A topic's compression.type with real clients: stored in the topic's codec, read by all.

confluent-kafka and kafka-python produce in their own codecs to a topic whose
``compression.type`` names another; the batches on disk are in the topic's codec (or the
producer's, for ``producer``), and both clients read back every record with its offset,
key, value, headers and timestamp. Changing the config (IncrementalAlterConfigs) applies to
the next append, as Kafka's dynamic topic configs do.
"""

from __future__ import annotations

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

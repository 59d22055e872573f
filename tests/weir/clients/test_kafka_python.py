"""kafka-python 3 against a real in-process broker (manual assignment: no consumer groups yet)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import pairwise

import pytest

from tests.weir.clients.helpers import (
    CODEC_IDS,
    CODECS,
    consume_kafka_python,
    kafka,
    kafka_python_consumer,
    make_records,
    produce_kafka_python,
    stored_batches,
)
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration

Errors = kafka.errors
AlterConfigOp = kafka.admin.AlterConfigOp
ConfigResource = kafka.admin.ConfigResource


@pytest.fixture
def admin(module_broker: ThreadedBroker) -> Iterator[kafka.KafkaAdminClient]:
    client = kafka.KafkaAdminClient(bootstrap_servers=module_broker.bootstrap)
    yield client
    client.close()


def create(admin: kafka.KafkaAdminClient, name: str, partitions: int = 1, **configs: str) -> None:
    admin.create_topics(
        {name: {"num_partitions": partitions, "replication_factor": 1, "configs": configs}}
    )


@pytest.mark.parametrize("codec", CODECS)
def test_keyed_records_with_headers_round_trip_in_every_codec(
    module_broker: ThreadedBroker, admin: kafka.KafkaAdminClient, codec: str
) -> None:
    topic = f"kp-codec-{codec}"
    create(admin, topic)
    sent = make_records("kafka-python", 300)
    offsets = produce_kafka_python(module_broker.bootstrap, topic, sent, codec=codec)
    assert offsets == list(range(300))

    received = consume_kafka_python(module_broker.bootstrap, topic, 300)
    assert [offset for offset, _ in received] == list(range(300))
    assert [rec for _, rec in received] == sent

    # The batches reached the disk compressed as the client sent them (pass-through).
    batches = stored_batches(module_broker.data_dir, topic)
    assert {b.compression for b in batches} == {CODEC_IDS[codec]}
    assert sum(b.records_count for b in batches) == 300
    assert len(batches) < 300  # the client batched; each batch is a multi-record unit

    # A fetch from inside a (compressed) batch starts exactly at the asked offset.
    tail = consume_kafka_python(module_broker.bootstrap, topic, 163, start=137)
    assert [offset for offset, _ in tail] == list(range(137, 300))
    assert [rec for _, rec in tail] == sent[137:]


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_offsets_for_times_and_beginning_end_offsets(
    module_broker: ThreadedBroker, admin: kafka.KafkaAdminClient, codec: str
) -> None:
    topic = f"kp-times-{codec}"
    create(admin, topic)
    base = 1_600_000_000_000
    records = [
        replace(rec, timestamp=base + i * 1000) for i, rec in enumerate(make_records("kp", 100))
    ]
    produce_kafka_python(module_broker.bootstrap, topic, records, codec=codec)
    assert len(stored_batches(module_broker.data_dir, topic)) < 100  # lookups look inside

    consumer = kafka_python_consumer(module_broker.bootstrap)
    try:
        tp = kafka.TopicPartition(topic, 0)
        found = consumer.offsets_for_times({tp: base + 42_500})[tp]
        assert (found.offset, found.timestamp) == (43, base + 43_000)
        exact = consumer.offsets_for_times({tp: base + 7_000})[tp]
        assert (exact.offset, exact.timestamp) == (7, base + 7_000)
        first = consumer.offsets_for_times({tp: 0})[tp]
        assert (first.offset, first.timestamp) == (0, base)
        assert consumer.offsets_for_times({tp: base + 100_000})[tp] is None
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: 100}
    finally:
        consumer.close()


def test_delete_records_moves_log_start_offset(
    module_broker: ThreadedBroker, admin: kafka.KafkaAdminClient
) -> None:
    topic = "kp-trim"
    create(admin, topic)
    sent = make_records("kp", 50)
    produce_kafka_python(module_broker.bootstrap, topic, sent)
    tp = kafka.TopicPartition(topic, 0)
    result = admin.delete_records({tp: 30})
    assert result[tp]["low_watermark"] == 30
    assert result[tp]["error_code"] == 0

    consumer = kafka_python_consumer(module_broker.bootstrap, auto_offset_reset="earliest")
    try:
        assert consumer.beginning_offsets([tp]) == {tp: 30}
        assert consumer.end_offsets([tp]) == {tp: 50}
        # Offset 0 is now below the log start: OFFSET_OUT_OF_RANGE, reset to earliest (30).
        consumer.assign([tp])
        consumer.seek(tp, 0)
        received = []
        for _ in range(40):
            for batch in consumer.poll(timeout_ms=250).values():
                received += [(m.offset, m.value) for m in batch]
            if len(received) >= 20:
                break
        assert received == [(i, sent[i].value) for i in range(30, 50)]
    finally:
        consumer.close()

    with pytest.raises(Errors.OffsetOutOfRangeError):
        admin.delete_records({tp: 51})


def test_admin_creates_alters_and_deletes_topics(
    module_broker: ThreadedBroker, admin: kafka.KafkaAdminClient
) -> None:
    create(admin, "kp-adm", partitions=2, **{"retention.ms": "86400000"})
    assert "kp-adm" in admin.list_topics()
    with pytest.raises(Errors.TopicAlreadyExistsError):
        create(admin, "kp-adm")
    with pytest.raises(Errors.InvalidTopicError):
        admin.create_topics({"bad/name": {}})
    with pytest.raises(Errors.InvalidReplicationFactorError):
        admin.create_topics({"kp-rf3": {"replication_factor": 3}})
    assert "kp-rf3" not in admin.list_topics()

    admin.create_partitions({"kp-adm": 5})
    (described,) = admin.describe_topics(["kp-adm"])
    partitions = sorted(described["partitions"], key=lambda p: p["partition_index"])
    assert [p["partition_index"] for p in partitions] == [0, 1, 2, 3, 4]
    assert all(p["leader_id"] == 1 and p["replica_nodes"] == [1] for p in partitions)
    assert (module_broker.data_dir / "kp-adm-4").is_dir()
    with pytest.raises(Errors.InvalidPartitionsError):
        admin.create_partitions({"kp-adm": 3})  # partitions never shrink

    # Records go to a new partition at once.
    sent = make_records("kp", 5)
    offsets = produce_kafka_python(module_broker.bootstrap, "kp-adm", sent, partition=4)
    assert offsets == [0, 1, 2, 3, 4]

    admin.delete_topics(["kp-adm"])
    assert "kp-adm" not in admin.list_topics()
    assert not (module_broker.data_dir / "kp-adm-0").exists()
    with pytest.raises(Errors.UnknownTopicOrPartitionError):
        admin.delete_topics(["kp-adm"])


def test_describe_and_alter_configs(
    module_broker: ThreadedBroker, admin: kafka.KafkaAdminClient
) -> None:
    topic = "kp-configs"
    create(admin, topic, **{"retention.ms": "12345"})
    resource = ConfigResource("TOPIC", topic)

    def overrides() -> dict[str, tuple[str, str]]:
        described = admin.describe_configs([ConfigResource("TOPIC", topic)])["topic"][topic]
        return {k: (v["value"], v["config_source"]) for k, v in described.items()}

    assert overrides() == {"retention.ms": ("12345", "DYNAMIC_TOPIC_CONFIG")}
    everything = admin.describe_configs([resource], config_filter="all")["topic"][topic]
    assert everything["cleanup.policy"]["value"] == "delete"
    assert everything["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    assert everything["segment.bytes"]["config_type"] == "INT"
    synonyms = admin.describe_configs([resource], include_synonyms=True)["topic"][topic]
    assert synonyms["retention.ms"]["synonyms"][0] == {
        "name": "retention.ms",
        "value": "12345",
        "source": "DYNAMIC_TOPIC_CONFIG",
    }

    # IncrementalAlterConfigs: SET, APPEND to a list, then SUBTRACT and DELETE.
    changes = {"retention.ms": "999", "cleanup.policy": (AlterConfigOp.APPEND, "compact")}
    assert admin.alter_configs([ConfigResource("TOPIC", topic, changes)]) == {
        "topic": {topic: "OK"}
    }
    assert overrides() == {
        "retention.ms": ("999", "DYNAMIC_TOPIC_CONFIG"),
        "cleanup.policy": ("delete,compact", "DYNAMIC_TOPIC_CONFIG"),
    }
    changes = {
        "cleanup.policy": (AlterConfigOp.SUBTRACT, "delete"),
        "retention.ms": (AlterConfigOp.DELETE, None),
    }
    admin.alter_configs([ConfigResource("TOPIC", topic, changes)])
    assert overrides() == {"cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG")}

    # Legacy AlterConfigs (the client re-sends the other overrides, as it must).
    legacy = ConfigResource("TOPIC", topic, {"segment.ms": "100000"})
    admin.alter_configs([legacy], incremental=False)
    assert overrides() == {
        "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG"),
        "segment.ms": ("100000", "DYNAMIC_TOPIC_CONFIG"),
    }

    bad = admin.alter_configs([ConfigResource("TOPIC", topic, {"retention.ms": "abc"})])
    assert "InvalidConfigurationError" in bad["topic"][topic]
    assert "retention.ms" in bad["topic"][topic]
    missing = admin.alter_configs(
        [ConfigResource("TOPIC", "kp-nosuch", {"retention.ms": "1"})], raise_on_unknown=False
    )
    assert "UnknownTopicOrPartitionError" in missing["topic"]["kp-nosuch"]

    broker = admin.describe_configs([ConfigResource("BROKER", "1")], config_filter="all")
    configs = broker["broker"]["1"]
    assert configs["num.partitions"]["value"] == "1"
    assert configs["log.retention.hours"]["value"] == "168"
    assert configs["auto.create.topics.enable"]["value"] == "true"


def test_idempotent_producer_writes_sequenced_batches_once(
    module_broker: ThreadedBroker, admin: kafka.KafkaAdminClient
) -> None:
    topic = "kp-idem"
    create(admin, topic, partitions=2)
    producer = kafka.KafkaProducer(
        bootstrap_servers=module_broker.bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=2,
        batch_size=4096,
    )
    try:
        futures = [
            producer.send(topic, value=str(i).encode(), partition=i % 2) for i in range(4000)
        ]
        producer.flush(30)
        offsets = [f.get(10).offset for f in futures]
    finally:
        producer.close(timeout=10)
    assert offsets == [i // 2 for i in range(4000)]

    for partition in (0, 1):
        received = consume_kafka_python(module_broker.bootstrap, topic, 2000, partition=partition)
        assert [int(rec.value) for _, rec in received] == list(range(partition, 4000, 2))
        batches = stored_batches(module_broker.data_dir, topic, partition)
        assert len(batches) > 1
        assert len({b.producer_id for b in batches}) == 1
        assert batches[0].producer_id >= 0
        assert {b.producer_epoch for b in batches} == {0}
        assert batches[0].base_sequence == 0
        for previous, batch in pairwise(batches):
            assert batch.base_sequence == previous.last_sequence + 1
            assert batch.base_offset == previous.next_offset

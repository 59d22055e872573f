"""Transactions with real clients against one in-process broker: with confluent-kafka
(librdkafka) commit and abort across partitions, read_committed against read_uncommitted,
the LSO holding consumers at an open transaction, and a zombie fenced by a new producer with
the same id; with aiokafka a transactional producer and a read_committed consumer.

One broker, so ``__transaction_state`` is created with RF 1 and min ISR 1 (Kafka refuses
the defaults, 3 and 2, on a smaller cluster just the same)."""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioPartition
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.weir.inprocess import ThreadedBroker, threaded_broker

TXN_CONFIGS = (
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "transaction.state.log.num.partitions=4",
    "group.initial.rebalance.delay.ms=0",
)


@pytest.fixture(scope="module")
def broker(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    directory: Path = tmp_path_factory.mktemp("txn-broker")
    with threaded_broker(
        data_dir=directory / "broker-1", redis_url=redis_server, configs=TXN_CONFIGS
    ) as found:
        yield found


def topic(broker: ThreadedBroker, partitions: int = 2) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def producer(broker: ThreadedBroker, transactional_id: str) -> Producer:
    found = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 60_000,
        }
    )
    found.init_transactions(20)
    return found


def read(broker: ThreadedBroker, name: str, partitions: int, isolation: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(name, p, 0) for p in range(partitions)])
    values, ends = [], 0
    try:
        while ends < partitions:
            message = consumer.poll(10)
            assert message is not None, f"no end of partition after {values}"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                ends += 1
                continue
            values.append(message.value())
    finally:
        consumer.close()
    return sorted(values)


def test_committed_records_are_read_aborted_ones_only_by_read_uncommitted(
    broker: ThreadedBroker,
) -> None:
    name = topic(broker)
    txn = producer(broker, f"tid-{uuid.uuid4().hex[:6]}")
    txn.begin_transaction()
    for i in range(4):
        txn.produce(name, value=b"kept-%d" % i, partition=i % 2)
    txn.commit_transaction(20)
    txn.begin_transaction()
    for i in range(4):
        txn.produce(name, value=b"dropped-%d" % i, partition=i % 2)
    txn.flush(10)  # on the brokers: abort_transaction would purge unsent records
    txn.abort_transaction(20)
    txn.begin_transaction()
    txn.produce(name, value=b"after", partition=0)
    txn.commit_transaction(20)
    kept = sorted([b"kept-%d" % i for i in range(4)] + [b"after"])
    assert read(broker, name, 2, "read_committed") == kept
    everything = read(broker, name, 2, "read_uncommitted")
    assert everything == sorted(kept + [b"dropped-%d" % i for i in range(4)])


def test_read_committed_stops_at_an_open_transaction_until_it_commits(
    broker: ThreadedBroker,
) -> None:
    name = topic(broker, partitions=1)
    txn = producer(broker, f"tid-{uuid.uuid4().hex[:6]}")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce(name, value=b"before", partition=0)
    plain.flush(10)
    txn.begin_transaction()
    txn.produce(name, value=b"open", partition=0)
    txn.flush(10)
    plain.produce(name, value=b"behind", partition=0)
    plain.flush(10)
    # The LSO is the open transaction's first offset: "behind" waits with it.
    assert read(broker, name, 1, "read_committed") == [b"before"]
    # ListOffsets latest: the LSO for read_committed, the HW for read_uncommitted.
    for isolation, latest in (("read_committed", 1), ("read_uncommitted", 3)):
        consumer = Consumer(
            {"bootstrap.servers": broker.bootstrap, "group.id": "lso", "isolation.level": isolation}
        )
        found = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=10)
        consumer.close()
        assert found == (0, latest), isolation
    txn.commit_transaction(20)
    assert read(broker, name, 1, "read_committed") == [b"before", b"behind", b"open"]


def test_a_new_producer_with_the_same_id_fences_the_old_one_and_aborts_its_transaction(
    broker: ThreadedBroker,
) -> None:
    name = topic(broker, partitions=1)
    tid = f"tid-{uuid.uuid4().hex[:6]}"
    zombie = producer(broker, tid)
    zombie.begin_transaction()
    zombie.produce(name, value=b"zombie", partition=0)
    zombie.flush(10)
    successor = producer(broker, tid)  # aborts the zombie's open transaction
    successor.begin_transaction()
    successor.produce(name, value=b"successor", partition=0)
    successor.commit_transaction(20)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(10)
    assert raised.value.args[0].fatal(), raised.value.args[0]  # fenced: this producer is done
    assert read(broker, name, 1, "read_committed") == [b"successor"]


def test_aiokafka_commits_and_aborts_and_its_read_committed_consumer_sees_only_commits(
    broker: ThreadedBroker,
) -> None:
    name = topic(broker)

    async def run() -> tuple[list[bytes], list[bytes]]:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, transactional_id=f"aio-{uuid.uuid4().hex[:6]}"
        )
        await producer.start()
        try:
            async with producer.transaction():
                for i in range(3):
                    await producer.send_and_wait(name, b"aio-kept-%d" % i, partition=i % 2)
            await producer.begin_transaction()
            await producer.send_and_wait(name, b"aio-dropped", partition=0)
            await producer.abort_transaction()
        finally:
            await producer.stop()
        seen: dict[str, list[bytes]] = {}
        for isolation in ("read_committed", "read_uncommitted"):
            consumer = AIOKafkaConsumer(
                bootstrap_servers=broker.bootstrap,
                isolation_level=isolation,
                auto_offset_reset="earliest",
                enable_auto_commit=False,
            )
            await consumer.start()
            try:
                parts = [AioPartition(name, p) for p in range(2)]
                consumer.assign(parts)
                await consumer.seek_to_beginning(*parts)
                ends = await consumer.end_offsets(parts)
                values: list[bytes] = []
                deadline = asyncio.get_running_loop().time() + 20
                while True:
                    positions = [await consumer.position(p) for p in parts]
                    if all(at >= ends[p] for at, p in zip(positions, parts, strict=True)):
                        break
                    assert asyncio.get_running_loop().time() < deadline, (isolation, values)
                    batch = await consumer.getmany(timeout_ms=500)
                    values += [m.value for messages in batch.values() for m in messages]
                seen[isolation] = sorted(values)
            finally:
                await consumer.stop()
        return seen["read_committed"], seen["read_uncommitted"]

    committed, uncommitted = asyncio.run(run())
    kept = [b"aio-kept-%d" % i for i in range(3)]
    assert committed == kept
    assert uncommitted == sorted([*kept, b"aio-dropped"])


def test_consume_transform_produce_commits_output_and_offsets_together(
    broker: ThreadedBroker,
) -> None:
    source, sink = topic(broker, partitions=1), topic(broker, partitions=1)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        plain.produce(source, value=b"in-%d" % i, partition=0)
    plain.flush(10)
    group = f"etl-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([source])
    txn = producer(broker, f"etl-{uuid.uuid4().hex[:6]}")

    def step(count: int, commit: bool) -> None:
        got = []
        while len(got) < count:
            got += [m for m in consumer.consume(count - len(got), timeout=10) if not m.error()]
        txn.begin_transaction()
        for message in got:
            txn.produce(sink, value=message.value().replace(b"in", b"out"), partition=0)
        txn.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 20
        )
        if commit:
            txn.commit_transaction(20)
        else:
            txn.flush(10)
            txn.abort_transaction(20)

    step(6, commit=True)
    step(4, commit=False)  # output and offsets of these four are thrown away together
    consumer.close()
    assert read(broker, sink, 1, "read_committed") == sorted(b"out-%d" % i for i in range(6))
    checker = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    (committed,) = checker.committed([TopicPartition(source, 0)], timeout=10)
    checker.close()
    assert committed.offset == 6  # the aborted transaction's offsets never counted


def test_kafka_python_commits_and_aborts(broker: ThreadedBroker) -> None:
    from tests.weir.clients.helpers import kafka  # imported with its schema warnings shielded

    name = topic(broker)
    with warnings.catch_warnings():
        # kafka-python 3.0 loads the transaction APIs' JSON schemas on first use through
        # importlib.resources.read_text, deprecated in Python 3.11 (see helpers.py).
        warnings.simplefilter("ignore", DeprecationWarning)
        _kafka_python_transactions(kafka.KafkaProducer, broker.bootstrap, name)
    kept = [b"kp-kept-%d" % i for i in range(3)]
    assert read(broker, name, 2, "read_committed") == kept
    assert read(broker, name, 2, "read_uncommitted") == sorted([*kept, b"kp-dropped"])


def _kafka_python_transactions(make: Any, bootstrap: str, name: str) -> None:
    txn = make(bootstrap_servers=bootstrap, transactional_id=f"kp-{uuid.uuid4().hex[:6]}")
    try:
        txn.init_transactions()
        txn.begin_transaction()
        for i in range(3):
            txn.send(name, value=b"kp-kept-%d" % i, partition=i % 2)
        txn.commit_transaction()
        txn.begin_transaction()
        txn.send(name, value=b"kp-dropped", partition=1)
        txn.flush()
        txn.abort_transaction()
    finally:
        txn.close(timeout=10)

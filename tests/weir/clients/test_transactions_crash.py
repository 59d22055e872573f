"""Transactions across a kill -9 of a real broker process (the transaction coordinator and
the partitions' leader at once) and its restart: an open transaction survives in the
producer state and the transaction log, keeps read_committed consumers below it, and can be
committed by its producer, or aborted by a successor that fences it."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.weir.clients.conftest import BrokerProcess
from tests.weir.clients.helpers import create_topic
from tests.weir.clients.test_crash_recovery import CRASH_CONFIGS, restart_after_crash

StartBroker = Callable[..., BrokerProcess]
CONFIGS = [
    *CRASH_CONFIGS,
    "transaction.state.log.replication.factor=1",
    "transaction.state.log.min.isr=1",
    "transaction.state.log.num.partitions=2",
]


def producer(bootstrap: str, transactional_id: str) -> Producer:
    found = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    found.init_transactions(30)
    return found


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    try:
        while True:
            message = consumer.poll(15)
            assert message is not None, f"no end of partition after {values}"
            if message.error():
                assert message.error().code() == KafkaError._PARTITION_EOF
                return values
            values.append(message.value())
    finally:
        consumer.close()


def open_transaction(bootstrap: str, topic: str, tid: str, values: list[bytes]) -> Producer:
    txn = producer(bootstrap, tid)
    txn.begin_transaction()
    for value in values:
        txn.produce(topic, value=value, partition=0)
    assert txn.flush(15) == 0  # on the broker (acks=all), not yet committed
    return txn


def test_an_open_transaction_survives_kill9_and_commits_after_the_restart(
    start_broker: StartBroker,
) -> None:
    broker = start_broker(configs=CONFIGS)
    create_topic(broker.bootstrap, "txn-crash", partitions=1)
    values = [b"in-flight-%d" % i for i in range(10)]
    txn = open_transaction(broker.bootstrap, "txn-crash", f"tid-{uuid.uuid4().hex[:6]}", values)
    broker.kill9()
    restart_after_crash(broker)
    # Recovered from the log: still undecided, so invisible to read_committed.
    assert committed_values(broker.bootstrap, "txn-crash") == []
    txn.commit_transaction(60)  # the reloaded coordinator finishes it
    assert committed_values(broker.bootstrap, "txn-crash") == values


def test_a_successor_fences_a_transaction_left_open_by_a_crash_and_it_is_never_read(
    start_broker: StartBroker,
) -> None:
    broker = start_broker(configs=CONFIGS)
    create_topic(broker.bootstrap, "txn-fenced", partitions=1)
    tid = f"tid-{uuid.uuid4().hex[:6]}"
    open_transaction(broker.bootstrap, "txn-fenced", tid, [b"zombie"])
    broker.kill9()
    restart_after_crash(broker)
    successor = producer(broker.bootstrap, tid)  # aborts the zombie's transaction first
    successor.begin_transaction()
    successor.produce("txn-fenced", value=b"successor", partition=0)
    successor.commit_transaction(30)
    assert committed_values(broker.bootstrap, "txn-fenced") == [b"successor"]

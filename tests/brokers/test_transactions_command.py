"""``manage.py transactions`` (kafka-transactions.sh parity) against one in-process broker,
with an open transaction left by a confluent-kafka producer: ``list``, ``describe`` and
``describe-producers`` show it with Kafka's columns; ``abort --start-offset`` writes its ABORT
marker, so read_committed consumers read past it; ``find-hanging`` lists a transactional batch
no coordinator knows and not the open transaction its coordinator does; errors read as Kafka's
tool prints them.

The broker fixture is ``tests/weir/clients/test_transactions.py``'s (module-scoped, so this
module gets a broker of its own): one broker, ``__transaction_state`` with RF 1, min ISR 1."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from datetime import timedelta

import crc32c
import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode

from tests.suite.commands import failed_cleanly, manage, succeeded
from tests.weir.clients.test_transactions import broker, read, topic
from tests.weir.inprocess import ThreadedBroker

pytestmark = pytest.mark.integration

__all__ = ["broker"]  # the fixture (one broker, RF 1 state topic), used by name below

TRANSACTIONAL = 0x10  # record batch attribute bit
CRC_AT, BASE_SEQUENCE_AT = 17, 53  # byte offsets in a magic-v2 batch header


def transactions(broker: ThreadedBroker, *args: str) -> list[str]:
    return ["transactions", "--bootstrap-server", broker.bootstrap, *args]


def rows(output: str) -> list[list[str]]:
    """A table Kafka's way (padded, tab separated) as lists of cells, header first."""
    return [[cell.strip() for cell in line.split("\t")[:-1]] for line in output.splitlines()]


def open_transaction(broker: ThreadedBroker, name: str, tid: str) -> Producer:
    """After ``before`` (from an idempotent producer) a transaction left open, then ``behind``."""
    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    plain.produce(name, value=b"before", partition=0)
    plain.flush(10)
    txn = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": tid,
            "transaction.timeout.ms": 300_000,
        }
    )
    txn.init_transactions(20)
    txn.begin_transaction()
    txn.produce(name, value=b"open", partition=0)
    txn.flush(10)  # on the broker, never committed
    plain.produce(name, value=b"behind", partition=0)
    plain.flush(10)
    return txn


def read_committed(broker: ThreadedBroker, name: str) -> list[bytes]:
    return read(broker, name, 1, "read_committed")


def new_topic(broker: ThreadedBroker) -> str:
    return topic(broker, partitions=1)


def test_an_open_transaction_is_listed_described_and_aborted(broker: ThreadedBroker) -> None:
    name = new_topic(broker)
    tid = f"tool-{uuid.uuid4().hex[:6]}"
    open_transaction(broker, name, tid)
    assert read_committed(broker, name) == [b"before"]  # held at the open transaction

    listed = rows(succeeded(manage(*transactions(broker, "list"))))
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    (mine,) = [r for r in listed[1:] if r[0] == tid]
    assert mine[1] == str(broker.broker_id) and mine[3] == "Ongoing"
    producer_id = mine[2]
    ongoing = rows(succeeded(manage(*transactions(broker, "list", "--state", "Ongoing"))))
    assert tid in [r[0] for r in ongoing[1:]]
    empty = rows(succeeded(manage(*transactions(broker, "list", "--state", "CompleteAbort"))))
    assert tid not in [r[0] for r in empty[1:]]

    described = rows(
        succeeded(manage(*transactions(broker, "describe", "--transactional-id", tid)))
    )
    assert described[0] == [
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "TransactionTimeoutMs",
        "CurrentTransactionStartTimeMs",
        "TransactionDurationMs",
        "TopicPartitions",
    ]
    (row,) = described[1:]
    assert row[:3] == [str(broker.broker_id), tid, producer_id]
    assert row[4:6] == ["Ongoing", "300000"]
    assert int(row[6]) > 0 and int(row[7]) >= 0
    assert row[8] == f"{name}-0"

    producers = rows(
        succeeded(
            manage(*transactions(broker, "describe-producers", "--topic", name, "--partition", "0"))
        )
    )
    assert producers[0] == [
        "ProducerId",
        "ProducerEpoch",
        "LatestCoordinatorEpoch",
        "LastSequence",
        "LastTimestamp",
        "CurrentTransactionStartOffset",
    ]
    by_id = {r[0]: r for r in producers[1:]}
    assert by_id[producer_id][5] == "1"  # "before" is offset 0, the transaction starts at 1
    idempotent = [r for r in producers[1:] if r[0] != producer_id]
    assert idempotent and all(r[5] == "None" for r in idempotent)

    wrong = failed_cleanly(
        manage(
            *transactions(broker, "abort", "--topic", name, "--partition", "0"),
            *("--start-offset", "0"),
        )
    )
    assert f"Could not find any open transactions starting at offset 0 on partition {name}-0" in (
        wrong
    )
    assert read_committed(broker, name) == [b"before"]

    aborted = manage(
        *transactions(broker, "abort", "--topic", name, "--partition", "0"),
        *("--start-offset", "1"),
    )
    succeeded(aborted)
    # The LSO moved: the aborted record is skipped, the record behind it is read.
    assert read_committed(broker, name) == [b"before", b"behind"]
    after = rows(
        succeeded(
            manage(*transactions(broker, "describe-producers", "--topic", name, "--partition", "0"))
        )
    )
    assert {r[0]: r for r in after[1:]}[producer_id][5] == "None"


def test_errors_name_the_kafka_error_or_the_flag(broker: ThreadedBroker) -> None:
    unknown = failed_cleanly(
        manage(*transactions(broker, "describe", "--transactional-id", "never-used"))
    )
    assert "Failed to describe transaction state of transactional-id `never-used`" in unknown
    assert "TRANSACTIONAL_ID_NOT_FOUND" in unknown

    missing = failed_cleanly(
        manage(*transactions(broker, "describe-producers", "--topic", "no-such-topic"))
    )
    assert "--partition" in missing

    no_topic = failed_cleanly(
        manage(
            *transactions(broker, "describe-producers", "--topic", "no-such-topic"),
            *("--partition", "0"),
        )
    )
    assert "Failed to describe producers for partition no-such-topic-0 on leader" in no_topic
    assert "UNKNOWN_TOPIC_OR_PARTITION" in no_topic

    bad_state = failed_cleanly(manage(*transactions(broker, "list", "--state", "Sleeping")))
    assert "--state" in bad_state and "Sleeping" in bad_state


def write_hanging_batch(broker: ThreadedBroker, name: str) -> int:
    """A transactional batch from an idempotent producer id the coordinator never saw (no
    AddPartitionsToTxn; Weir, like Kafka without KIP-890's verification, takes it): Kafka's
    classic hanging transaction. Its producer id."""
    from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
    from kio.schema.produce.v9.request import (
        PartitionProduceData,
        ProduceRequest,
        TopicProduceData,
    )

    from weir.client import BrokerClient
    from weir.protocol.batch_builder import build_batch

    async def run() -> int:
        client = BrokerClient("127.0.0.1", broker.port, client_id="hanging-writer")
        try:
            init = await client.request(
                InitProducerIdRequest(
                    transactional_id=None,
                    transaction_timeout=timedelta(milliseconds=-1),
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            assert init.error_code == ErrorCode.none
            batch = build_batch(
                [(None, b"hanging")],
                timestamp_ms=int(time.time() * 1000),
                attributes=TRANSACTIONAL,
                producer_id=init.producer_id,
                producer_epoch=init.producer_epoch,
            )
            struct.pack_into(">i", batch, BASE_SEQUENCE_AT, 0)  # the producer's first batch
            struct.pack_into(">I", batch, CRC_AT, crc32c.crc32c(bytes(batch[CRC_AT + 4 :])))
            produced = await client.request(
                ProduceRequest(
                    transactional_id=None,
                    acks=-1,
                    timeout=timedelta(seconds=5),
                    topic_data=(
                        TopicProduceData(
                            name=name,
                            partition_data=(PartitionProduceData(index=0, records=bytes(batch)),),
                        ),
                    ),
                )
            )
            answer = produced.responses[0].partition_responses[0]
            assert answer.error_code == ErrorCode.none, answer
            return int(init.producer_id)
        finally:
            await client.close()

    return asyncio.run(run())


def test_find_hanging_lists_what_no_coordinator_will_finish(broker: ThreadedBroker) -> None:
    name = new_topic(broker)
    open_transaction(broker, name, f"tool-{uuid.uuid4().hex[:6]}")  # known to its coordinator
    hanging_pid = write_hanging_batch(broker, name)
    time.sleep(0.01)  # older than the 0-minute timeout below

    found = rows(
        succeeded(
            manage(
                *transactions(broker, "find-hanging", "--broker-id", str(broker.broker_id)),
                *("--max-transaction-timeout", "0"),
            )
        )
    )
    assert found[0] == [
        "Topic",
        "Partition",
        "ProducerId",
        "ProducerEpoch",
        "CoordinatorEpoch",
        "StartOffset",
        "LastTimestamp",
        "Duration(min)",
    ]
    mine = [r for r in found[1:] if r[0] == name]
    assert [(r[1], r[2], r[5]) for r in mine] == [("0", str(hanging_pid), "3")]

    # The default 15 minutes: too young to count as hanging.
    young = rows(
        succeeded(
            manage(*transactions(broker, "find-hanging", "--broker-id", str(broker.broker_id)))
        )
    )
    assert [r for r in young[1:] if r[0] == name] == []

    succeeded(
        manage(
            *transactions(broker, "abort", "--topic", name, "--partition", "0"),
            *("--start-offset", "3"),
        )
    )
    assert read_committed(broker, name) == [b"before"]  # still held by the known transaction

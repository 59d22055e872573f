"""``manage.py transactions``: ``kafka-transactions.sh`` parity.

    manage.py transactions [--bootstrap-server H:P] list [--state Ongoing ...]
    manage.py transactions describe --transactional-id ID
    manage.py transactions describe-producers --topic T --partition P [--broker-id B]
    manage.py transactions abort --topic T --partition P --start-offset N
    manage.py transactions find-hanging --broker-id B [--max-transaction-timeout MIN]

A Kafka client like Kafka's tool, with the same requests and columns: ``list`` asks every
live broker (ListTransactions: each answers for the transactional ids it coordinates);
``describe`` finds the transaction coordinator (FindCoordinator, key type 1) and asks it
(DescribeTransactions); ``describe-producers`` asks the partition's leader (DescribeProducers);
``abort`` finds the producer whose open transaction starts at ``--start-offset`` there and has
the leader write an ABORT marker for it (WriteTxnMarkers, which needs ClusterAction), so the
partition's last stable offset moves past a hanging transaction; ``find-hanging`` lists open
transactions on a broker's partitions older than ``--max-transaction-timeout`` whose
coordinator does not know them as ongoing. Tables are printed as Kafka's tool prints them
(columns padded, tab separated); errors read as its errors do.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from kio.schema.describe_producers.v0.request import DescribeProducersRequest, TopicRequest
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.list_transactions.v1.request import ListTransactionsRequest
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)

from brokers.management.kafka_admin import add_bootstrap_argument, kafka_error_text, tool_target
from brokers.management.protocol_admin import (
    ClusterInfo,
    cluster_info,
    send_to_any_broker,
    send_to_broker,
)
from weir.topic_names import INTERNAL_TOPICS

TRANSACTION_KEY = 1  # FindCoordinator key type of a transactional id
COORDINATOR_RETRIES = 10  # the state topic may still be loading or being created

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId",
    "TransactionalId",
    "ProducerId",
    "ProducerEpoch",
    "TransactionState",
    "TransactionTimeoutMs",
    "CurrentTransactionStartTimeMs",
    "TransactionDurationMs",
    "TopicPartitions",
)
PRODUCER_HEADERS = (
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic",
    "Partition",
    "ProducerId",
    "ProducerEpoch",
    "CoordinatorEpoch",
    "StartOffset",
    "LastTimestamp",
    "Duration(min)",
)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Kafka's ``prettyPrintTable``: each column padded to its widest cell, tab after each."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    lines = [
        "".join(f"{cell:<{w}}\t" for cell, w in zip(row, widths, strict=True))
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def failed(message: str, code: int, detail: str | None = None) -> CommandError:
    """Kafka's ``printErrorAndExit(message, cause)`` with the Kafka error as the cause."""
    return CommandError(f"{message}: {kafka_error_text(code, detail)}")


class Command(BaseCommand):
    help = (
        "Analyze the transactional state of producers in the cluster; detect and recover "
        "from hanging transactions (kafka-transactions.sh parity)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_bootstrap_argument(parser)
        commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
        listing = commands.add_parser("list", help="list transactions")
        listing.add_argument(
            "--state",
            action="append",
            default=[],
            help="only transactions in this state (Ongoing, PrepareCommit, ...; repeatable)",
        )
        describe = commands.add_parser(
            "describe", help="describe the state of an active transactional-id"
        )
        describe.add_argument("--transactional-id", required=True, help="transactional id")
        producers = commands.add_parser(
            "describe-producers",
            help="describe the states of active producers for a topic partition",
        )
        producers.add_argument(
            "--broker-id",
            type=int,
            help="optional broker id to describe the producer state on a specific replica",
        )
        producers.add_argument("--topic", required=True, help="topic name")
        producers.add_argument("--partition", type=int, required=True, help="partition number")
        abort = commands.add_parser(
            "abort", help="abort a hanging transaction (requires administrative privileges)"
        )
        abort.add_argument("--topic", required=True, help="topic name")
        abort.add_argument("--partition", type=int, required=True, help="partition number")
        abort.add_argument(
            "--start-offset", type=int, required=True, help="start offset of the transaction"
        )
        hanging = commands.add_parser("find-hanging", help="find hanging transactions")
        hanging.add_argument(
            "--broker-id",
            type=int,
            required=True,
            help="broker id to search for hanging transactions",
        )
        hanging.add_argument(
            "--max-transaction-timeout",
            type=int,
            default=15,
            help="maximum transaction timeout in minutes to limit the scope of the search",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action = {
            "list": self._list,
            "describe": self._describe,
            "describe-producers": self._describe_producers,
            "abort": self._abort,
            "find-hanging": self._find_hanging,
        }[options["command"]]
        output = action(options)
        if output:
            self.stdout.write(output)

    # -- list --------------------------------------------------------------------------------
    def _list(self, options: dict[str, Any]) -> str:
        target = tool_target(options)
        rows = []
        for node_id in sorted(cluster_info(target).brokers):
            response = send_to_broker(
                target, node_id, ListTransactionsRequest(state_filters=tuple(options["state"]))
            )
            if response.error_code != ErrorCode.none:
                raise failed("Failed to list transactions", response.error_code)
            if response.unknown_state_filters:
                unknown = ", ".join(response.unknown_state_filters)
                raise CommandError(f"--state: unknown transaction state {unknown}")
            for listing in response.transaction_states:
                rows.append(
                    (
                        listing.transactional_id,
                        str(node_id),
                        str(listing.producer_id),
                        listing.transaction_state,
                    )
                )
        return table(LIST_HEADERS, sorted(rows))

    # -- describe ----------------------------------------------------------------------------
    def _describe(self, options: dict[str, Any]) -> str:
        target = tool_target(options)
        tid = options["transactional_id"]
        failure = f"Failed to describe transaction state of transactional-id `{tid}`"
        coordinator = transaction_coordinator(target, tid, failure)
        response = send_to_broker(
            target, coordinator, DescribeTransactionsRequest(transactional_ids=(tid,))
        )
        (state,) = response.transaction_states
        if state.error_code != ErrorCode.none:
            raise failed(failure, state.error_code)
        start_ms = int(state.transaction_start_time.timestamp() * 1000)
        if start_ms > 0:
            start, duration = str(start_ms), str(int(time.time() * 1000) - start_ms)
        else:
            start = duration = "None"
        partitions = ",".join(
            f"{topic.topic}-{index}" for topic in state.topics for index in topic.partitions
        )
        row = (
            str(coordinator),
            tid,
            str(state.producer_id),
            str(state.producer_epoch),
            state.transaction_state,
            str(int(state.transaction_timeout.total_seconds() * 1000)),
            start,
            duration,
            partitions,
        )
        return table(DESCRIBE_HEADERS, [row])

    # -- describe-producers ------------------------------------------------------------------
    def _describe_producers(self, options: dict[str, Any]) -> str:
        topic, index, broker = options["topic"], options["partition"], options["broker_id"]
        where = f"broker {broker}" if broker is not None else "leader"
        failure = f"Failed to describe producers for partition {topic}-{index} on {where}"
        producers = partition_producers(tool_target(options), topic, index, broker, failure)
        rows = [
            (
                str(p.producer_id),
                str(p.producer_epoch),
                str(p.coordinator_epoch),
                str(p.last_sequence),
                str(p.last_timestamp),
                str(p.current_txn_start_offset) if p.current_txn_start_offset >= 0 else "None",
            )
            for p in producers
        ]
        return table(PRODUCER_HEADERS, rows)

    # -- abort -------------------------------------------------------------------------------
    def _abort(self, options: dict[str, Any]) -> str:
        target = tool_target(options)
        topic, index, start = options["topic"], options["partition"], options["start_offset"]
        producers = partition_producers(
            target,
            topic,
            index,
            None,
            f"Failed to validate producer state for partition {topic}-{index}",
        )
        found = next((p for p in producers if p.current_txn_start_offset == start), None)
        if found is None:
            raise CommandError(
                f"Could not find any open transactions starting at offset {start} "
                f"on partition {topic}-{index}"
            )
        # -1 (no marker seen yet from any coordinator): 0 is at most any coordinator epoch.
        coordinator_epoch = max(found.coordinator_epoch, 0)
        spec = (
            f"AbortTransactionSpec(topicPartition={topic}-{index}, "
            f"producerId={found.producer_id}, producerEpoch={found.producer_epoch}, "
            f"coordinatorEpoch={coordinator_epoch})"
        )
        leader = partition_leader(target, topic, index, f"Failed to abort transaction {spec}")
        marker = WritableTxnMarker(
            producer_id=found.producer_id,
            producer_epoch=found.producer_epoch,
            transaction_result=False,
            topics=(WritableTxnMarkerTopic(name=topic, partition_indexes=(index,)),),
            coordinator_epoch=coordinator_epoch,
        )
        response = send_to_broker(target, leader, WriteTxnMarkersRequest(markers=(marker,)))
        for result in response.markers:
            for topic_result in result.topics:
                for partition in topic_result.partitions:
                    if partition.error_code != ErrorCode.none:
                        raise failed(f"Failed to abort transaction {spec}", partition.error_code)
        return ""

    # -- find-hanging ------------------------------------------------------------------------
    def _find_hanging(self, options: dict[str, Any]) -> str:
        target = tool_target(options)
        broker = options["broker_id"]
        max_timeout_ms = options["max_transaction_timeout"] * 60_000
        info = cluster_info(target)
        if broker not in info.brokers:
            raise CommandError(f"--broker-id: broker {broker} is not in the cluster")
        wanted = sorted(
            (name, index)
            for name, replicas in info.topics.items()
            for index, nodes in replicas.items()
            if broker in nodes and name not in INTERNAL_TOPICS  # as Kafka's listTopics()
        )
        now_ms = int(time.time() * 1000)
        open_txns = []  # (topic, index, producer state)
        failure = f"Failed to describe producers for {len(wanted)} partitions on broker {broker}"
        if wanted:
            by_topic: dict[str, list[int]] = {}
            for name, index in wanted:
                by_topic.setdefault(name, []).append(index)
            request = DescribeProducersRequest(
                topics=tuple(
                    TopicRequest(name=name, partition_indexes=tuple(parts))
                    for name, parts in by_topic.items()
                )
            )
            response = send_to_broker(target, broker, request)
            for topic in response.topics:
                for partition in topic.partitions:
                    if partition.error_code == ErrorCode.not_leader_or_follower:
                        continue  # a follower here: its leader answers for it
                    if partition.error_code != ErrorCode.none:
                        raise failed(failure, partition.error_code, partition.error_message)
                    for p in partition.active_producers:
                        if (
                            p.current_txn_start_offset >= 0
                            and now_ms - p.last_timestamp > max_timeout_ms
                        ):
                            open_txns.append((topic.name, int(partition.partition_index), p))
        hanging = [t for t in open_txns if not known_ongoing(target, info, t)]
        rows = [
            (
                name,
                str(index),
                str(p.producer_id),
                str(p.producer_epoch),
                str(p.coordinator_epoch),
                str(p.current_txn_start_offset),
                str(p.last_timestamp),
                str((now_ms - p.last_timestamp) // 60_000),
            )
            for name, index, p in hanging
        ]
        return table(HANGING_HEADERS, rows)


def known_ongoing(target: Any, info: ClusterInfo, txn: tuple[str, int, Any]) -> bool:
    """Whether the transaction's coordinator still counts ``txn``'s partition in a live
    transaction of its producer (so it will write the marker itself), as Kafka's tool checks:
    the producer id's transactional id from ListTransactions, then DescribeTransactions."""
    name, index, producer = txn
    for node_id in sorted(info.brokers):
        response = send_to_broker(
            target,
            node_id,
            ListTransactionsRequest(producer_id_filters=(producer.producer_id,)),
        )
        for listing in response.transaction_states:
            if listing.producer_id != producer.producer_id:
                continue
            described = send_to_broker(
                target,
                node_id,
                DescribeTransactionsRequest(transactional_ids=(listing.transactional_id,)),
            )
            for state in described.transaction_states:
                if state.error_code != ErrorCode.none:
                    return False
                return any(
                    topic.topic == name and index in topic.partitions for topic in state.topics
                )
    return False


def transaction_coordinator(target: Any, tid: str, failure: str) -> int:
    """The node id of ``tid``'s transaction coordinator (FindCoordinator, key type 1)."""
    request = FindCoordinatorRequest(key_type=TRANSACTION_KEY, coordinator_keys=(tid,))
    retriable = {ErrorCode.coordinator_not_available, ErrorCode.coordinator_load_in_progress}
    for attempt in range(COORDINATOR_RETRIES):
        (found,) = send_to_any_broker(target, request).coordinators
        if found.error_code == ErrorCode.none:
            return int(found.node_id)
        if found.error_code not in retriable or attempt == COORDINATOR_RETRIES - 1:
            raise failed(failure, found.error_code, found.error_message)
        time.sleep(0.5)
    raise AssertionError("unreachable")


def partition_leader(target: Any, topic: str, index: int, failure: str) -> int:
    leader = cluster_info(target).leaders.get(topic, {}).get(index)
    if leader is None:
        raise failed(failure, ErrorCode.unknown_topic_or_partition)
    if leader < 0:
        raise failed(failure, ErrorCode.leader_not_available)
    return leader


def partition_producers(
    target: Any, topic: str, index: int, broker: int | None, failure: str
) -> tuple[Any, ...]:
    """The active producers of a partition as its leader (or ``broker``) reports them."""
    node = broker if broker is not None else partition_leader(target, topic, index, failure)
    request = DescribeProducersRequest(
        topics=(TopicRequest(name=topic, partition_indexes=(index,)),)
    )
    response = send_to_broker(target, node, request)
    (found,) = (p for t in response.topics for p in t.partitions)
    if found.error_code != ErrorCode.none:
        raise failed(failure, found.error_code, found.error_message)
    return tuple(found.active_producers)

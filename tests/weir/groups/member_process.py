"""A consumer-group member in its own process, reporting what it owns as JSON lines.

    python -m tests.weir.groups.member_process LIBRARY ASSIGNOR BOOTSTRAP TOPIC GROUP

LIBRARY is confluent, kafka-python or aiokafka. Every change of the partitions the member
owns is printed as ``{"owned": [...], "t": <CLOCK_MONOTONIC ns>}`` *before* the member acts on
it (a revocation is printed when the client revokes, an assignment when it assigns), so the
test can rebuild who owned what at every moment across processes. SIGTERM makes the member
give everything up (printing ``[]``), leave the group cleanly and exit.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import time
import warnings
from typing import Any

stopping = threading.Event()


def report(owned: set[int]) -> None:
    print(json.dumps({"owned": sorted(owned), "t": time.monotonic_ns()}), flush=True)


def run_confluent(assignor: str, bootstrap: str, topic: str, group: str) -> None:
    from confluent_kafka import Consumer

    owned: set[int] = set()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "partition.assignment.strategy": assignor,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 300,
            "auto.offset.reset": "earliest",
        }
    )

    def assigned(c: Any, parts: list[Any]) -> None:
        owned.update(p.partition for p in parts)
        report(owned)

    def revoked(c: Any, parts: list[Any]) -> None:
        owned.difference_update(p.partition for p in parts)
        report(owned)

    consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
    while not stopping.is_set():
        consumer.poll(0.1)
    owned.clear()
    report(owned)
    consumer.close()


def run_kafka_python(assignor: str, bootstrap: str, topic: str, group: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import kafka
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    strategies = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }
    owned: set[int] = set()

    class Listener(kafka.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            owned.difference_update(p.partition for p in revoked)
            report(owned)

        def on_partitions_assigned(self, assigned: Any) -> None:
            owned.update(p.partition for p in assigned)
            report(owned)

    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        partition_assignment_strategy=[strategies[assignor]],
        session_timeout_ms=6000,
        heartbeat_interval_ms=300,
        auto_offset_reset="earliest",
    )
    consumer.subscribe(topics=[topic], listener=Listener())
    # kafka-python 3.0.12 loses an assignment when its first JoinGroup races the first
    # metadata answer for the topic: the rejoin that the metadata change triggers completes
    # between two polls, need_rejoin() is then False and the finished join is never applied
    # (no callback, heartbeats stay off). A blocking metadata fetch before the first poll
    # keeps the subscription's metadata ready before the member joins.
    consumer.topics()
    while not stopping.is_set():
        consumer.poll(timeout_ms=100)
    owned.clear()
    report(owned)
    consumer.close()


def run_aiokafka(assignor: str, bootstrap: str, topic: str, group: str) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    strategies = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
    }
    owned: set[int] = set()

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            owned.difference_update(p.partition for p in revoked)
            report(owned)

        async def on_partitions_assigned(self, assigned: Any) -> None:
            owned.update(p.partition for p in assigned)
            report(owned)

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            partition_assignment_strategy=(strategies[assignor],),
            session_timeout_ms=6000,
            heartbeat_interval_ms=300,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        consumer.subscribe(topics=[topic], listener=Listener())
        try:
            while not stopping.is_set():
                await consumer.getmany(timeout_ms=100)
        finally:
            owned.clear()
            report(owned)
            await consumer.stop()

    asyncio.run(main())


RUNNERS = {
    "confluent": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


def main() -> None:
    library, assignor, bootstrap, topic, group = sys.argv[1:6]
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    RUNNERS[library](assignor, bootstrap, topic, group)


if __name__ == "__main__":
    main()

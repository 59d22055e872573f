"""Fixtures for the Spark tests: one real SparkSession and the shared 3-broker cluster.

Starting Spark (a JVM) costs seconds, so one ``local[2]`` session serves the whole run (its
JVM is shut down at the end). The
brokers are the control-plane tests' ``cp_cluster`` (real ``runbroker`` processes, RF 3),
shared too; tests isolate by unique topic names. ``produce`` writes records with
confluent-kafka and returns what the brokers acknowledged (partition, offset, timestamp), so a
test compares what Spark read with what was really written.
"""

from __future__ import annotations

import hashlib
import subprocess
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer

from benchmarks import common as benchmark_common
from tests.weir.cluster.conftest import Cluster


@dataclass(frozen=True, slots=True)
class Sent:
    """One acknowledged record."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One session for the run (the ``spark`` xdist group keeps its tests on one worker)."""
    from pyspark import SparkContext

    from spark_jobs.session import spark_session

    session = spark_session(app_name="weir-tests", master="local[2]")
    try:
        yield session
    finally:
        session.stop()
        # stop() ends the SparkContext but leaves the JVM running until this process exits;
        # shut it down now, so nothing outlives the tests that needed it.
        gateway = SparkContext._gateway
        if gateway is not None:
            gateway.shutdown()
            process = getattr(gateway, "proc", None)
            if process is not None:
                if process.stdin is not None:
                    process.stdin.close()  # the JVM exits when its parent's pipe closes
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            SparkContext._gateway = None
            SparkContext._jvm = None


@pytest.fixture(scope="session")
def bootstrap(cp_cluster: Cluster) -> str:
    return cp_cluster.bootstrap()


@pytest.fixture
def topic_name() -> str:
    return f"spark-{uuid.uuid4().hex[:10]}"


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Create ``name`` (RF 3) and wait until every partition has a leader."""
    benchmark_common.create_topic(bootstrap, name, partitions, replication_factor=3)


def produce(
    bootstrap: str,
    records: Iterable[tuple],
) -> list[Sent]:
    """Produce ``(topic, partition, key, value[, timestamp_ms[, headers]])`` tuples in order."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    sent: list[Sent] = []
    failures: list[str] = []

    def delivered(err: object, msg: object, headers: tuple = ()) -> None:
        # Delivery reports carry no headers: keep the ones that were sent.
        if err is not None:
            failures.append(str(err))
            return
        sent.append(
            Sent(
                msg.topic(),  # type: ignore[attr-defined]
                msg.partition(),  # type: ignore[attr-defined]
                msg.offset(),  # type: ignore[attr-defined]
                msg.key(),  # type: ignore[attr-defined]
                msg.value(),  # type: ignore[attr-defined]
                msg.timestamp()[1],  # type: ignore[attr-defined]
                headers,
            )
        )

    for record in records:
        topic, partition, key, value, *rest = record
        kwargs: dict[str, object] = {}
        if rest and rest[0] is not None:
            kwargs["timestamp"] = rest[0]
        headers = tuple(rest[1]) if len(rest) > 1 and rest[1] else ()
        if headers:
            kwargs["headers"] = list(headers)
        producer.produce(
            topic,
            value,
            key,
            partition=partition,
            on_delivery=lambda err, msg, h=headers: delivered(err, msg, h),
            **kwargs,
        )
        producer.poll(0)
    assert producer.flush(30) == 0, "records still in flight after 30s"
    assert not failures, failures
    return sent


def digest(rows: Iterable[tuple]) -> str:
    """Order-independent hash of ``(topic, partition, offset, key, value)`` tuples."""
    h = hashlib.sha256()
    for topic, partition, offset, key, value in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        h.update(f"{topic}\0{partition}\0{offset}\0".encode())
        h.update(b"K" + bytes(key) if key is not None else b"N")
        h.update(b"V" + bytes(value) if value is not None else b"N")
    return h.hexdigest()


def sent_digest(sent: Iterable[Sent]) -> str:
    return digest((s.topic, s.partition, s.offset, s.key, s.value) for s in sent)


def frame_digest(frame: object) -> tuple[int, str]:
    """(row count, digest) of a DataFrame in the Kafka source schema."""
    rows = frame.select("topic", "partition", "offset", "key", "value").collect()  # type: ignore[attr-defined]
    return len(rows), digest(tuple(r) for r in rows)

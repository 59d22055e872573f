"""Shared helpers of the cluster tests: producing, reading back, invariants, load threads."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)

from tests.weir.cluster.conftest import (
    Cluster,
    RawConnection,
    batch_summary,
    wait_until,
)
from tests.weir.log.conftest import make_batch

KEYS = 4


def produce(
    cluster: Cluster,
    topic: str,
    values: list[bytes],
    *,
    acks: str = "all",
    only: list[int] | None = None,
    timeout: float = 20.0,
    **config: Any,
) -> list[tuple[bytes, int | None, KafkaError | None]]:
    """Produce ``values`` to partition 0; (value, offset, error) per record, in send order."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap(only),
            "acks": acks,
            "linger.ms": 2,
            "topic.metadata.refresh.interval.ms": 1000,
            "retry.backoff.ms": 100,
            **config,
        }
    )
    results: dict[int, tuple[bytes, int | None, KafkaError | None]] = {}

    def delivered(index: int, err: KafkaError | None, message: Any) -> None:
        results[index] = (message.value(), None if err else message.offset(), err)

    for index, value in enumerate(values):
        producer.produce(
            topic,
            value=value,
            partition=0,
            on_delivery=lambda err, msg, i=index: delivered(i, err, msg),
        )
    remaining = producer.flush(timeout)
    assert remaining == 0, f"{remaining} records undelivered\n{cluster.describe(topic)}"
    return [results[i] for i in range(len(values))]


def produce_ok(cluster: Cluster, topic: str, values: list[bytes], **kw: Any) -> list[int]:
    """Produce and require every record to be acknowledged; their offsets."""
    outcome = produce(cluster, topic, values, **kw)
    errors = [(v, e) for v, _, e in outcome if e is not None]
    assert not errors, f"{errors[:5]}\n{cluster.describe(topic)}"
    return [offset for _, offset, _ in outcome]  # type: ignore[misc]


def values_of(records: list[tuple[int, bytes | None, bytes | None]]) -> list[bytes]:
    return [value for _, _, value in records]  # type: ignore[misc]


def assert_dense(records: list[tuple[int, Any, Any]], cluster: Cluster, topic: str) -> None:
    offsets = [offset for offset, _, _ in records]
    assert offsets == list(range(len(offsets))), (
        f"offsets are not dense from 0: {_gaps(offsets)}\n{cluster.describe(topic)}"
    )


def _gaps(offsets: list[int]) -> list[tuple[int, int]]:
    return [(a, b) for a, b in itertools.pairwise(offsets) if b != a + 1][:10]


def assert_replicas_identical(cluster: Cluster, topic: str) -> None:
    """Stop every broker and compare the replicas' segment bytes."""
    cluster.stop_all()
    dumps = {i: cluster.log_bytes(i, topic) for i in sorted(cluster.brokers)}
    if len(set(dumps.values())) != 1:
        summaries = "\n".join(
            f"  broker {i}: {len(data)} bytes, batches {batch_summary(data)}"
            for i, data in dumps.items()
        )
        pytest.fail(f"replicas of {topic}-0 differ:\n{summaries}\n{cluster.log_tails()}")


def raw_produce(topic: str, value: bytes, *, acks: int, timeout_ms: int = 10_000) -> Any:
    return ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=timedelta(milliseconds=timeout_ms),
        topic_data=(
            TopicProduceData(
                name=topic,
                partition_data=(PartitionProduceData(index=0, records=make_batch([value])),),
            ),
        ),
    )


def unacknowledged_appends(
    cluster: Cluster, broker_id: int, topic: str, values: list[bytes]
) -> list[int]:
    """acks=all produces (one batch each) to a leader whose followers cannot fetch: each is
    appended, then times out unacknowledged. The offsets they were appended at."""
    offsets = []
    conn = RawConnection(cluster[broker_id].port)
    try:
        for value in values:
            conn.send(raw_produce(topic, value, acks=-1, timeout_ms=300))
            answer = conn.receive(timeout=10).responses[0].partition_responses[0]
            assert answer.error_code == ErrorCode.request_timed_out, (
                f"{value!r}: {answer}\n{cluster.describe(topic)}"
            )
            offsets.append(answer.base_offset)
    finally:
        conn.close()
    return offsets


def others(broker_id: int, *exclude: int) -> list[int]:
    return [i for i in (1, 2, 3) if i != broker_id and i not in exclude]


def create_led_topic(
    cluster: Cluster,
    topic: str,
    leader: int | None = None,
    *,
    config: dict[str, str] | None = None,
) -> tuple[int, list[int]]:
    """Create one-partition ``topic`` whose preferred leader (first replica) is ``leader``, by
    default a broker that is not the controller (so losing the leader does not also move the
    controller), and the other two brokers its followers; ``(leader, followers)``."""
    if leader is None:
        leader = others(cluster.controller())[0]
    followers = others(leader)
    cluster.create_topic(topic, replica_assignment=[[leader, *followers]], config=config)
    return leader, followers


class KeyedWriter(threading.Thread):
    """An idempotent acks=all producer writing ``k<n>:<seq>`` records until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="keyed-writer", daemon=True)
        self.topic = topic
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 120_000,
                "topic.metadata.refresh.interval.ms": 1000,
                "retry.backoff.ms": 100,
                "retry.backoff.max.ms": 500,
                "reconnect.backoff.max.ms": 500,
                "error_cb": self._on_error,
            }
        )
        self.acked: dict[bytes, int] = {}
        self.failed: list[tuple[bytes, KafkaError]] = []
        self.client_errors: list[KafkaError] = []
        self.sent = 0
        self.unflushed = -1
        self._stop_event = threading.Event()
        self._lock = threading.Lock()

    def _on_error(self, err: KafkaError) -> None:
        self.client_errors.append(err)

    def _delivered(self, err: KafkaError | None, message: Any) -> None:
        with self._lock:
            if err is None:
                self.acked[message.value()] = message.offset()
            else:
                self.failed.append((message.value(), err))

    @property
    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def run(self) -> None:
        seq = 0
        while not self._stop_event.is_set():
            key = f"k{seq % KEYS}".encode()
            value = key + b":" + str(seq).encode()
            try:
                self.producer.produce(
                    self.topic, key=key, value=value, partition=0, on_delivery=self._delivered
                )
            except BufferError:
                self.producer.poll(0.1)
                continue
            seq += 1
            self.sent = seq
            self.producer.poll(0)
            time.sleep(0.002)
        self.unflushed = self.producer.flush(30)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(90)

    def wait_progress(self, count: int, cluster: Cluster, timeout: float = 30.0) -> None:
        """Wait until ``count`` more records are acknowledged."""
        target = self.acked_count + count
        wait_until(
            lambda: self.acked_count >= target,
            timeout,
            lambda: (
                f"acked {self.acked_count}/{target} (failed {self.failed[:3]}, "
                f"client errors {self.client_errors[-3:]})\n{cluster.describe(self.topic)}"
            ),
        )


class Tailer(threading.Thread):
    """A consumer following partition 0 from offset 0, remembering what it was served."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="tailer", daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "tailer",
                "enable.auto.commit": False,
                "topic.metadata.refresh.interval.ms": 1000,
                "auto.offset.reset": "error",  # a reset would hide a truncation
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        self.seen: list[tuple[int, bytes]] = []
        self.errors: list[KafkaError] = []
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            while not self._stop_event.is_set():
                for message in self.consumer.consume(num_messages=500, timeout=0.2):
                    if message.error() is not None:
                        self.errors.append(message.error())
                    else:
                        self.seen.append((message.offset(), message.value()))
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(30)


def assert_served_records_survived(
    tailer: Tailer, records: list[tuple[int, Any, Any]], cluster: Cluster, topic: str
) -> None:
    """Everything a consumer was served is in the final log at the same offset (never
    above the HW, never truncated later)."""
    final = {offset: value for offset, _, value in records}
    changed = [(o, v, final.get(o)) for o, v in tailer.seen if final.get(o) != v]
    assert not changed, (
        f"consumers were served records the log no longer has (offset, served, now): "
        f"{changed[:10]}\n{cluster.describe(topic)}"
    )
    offsets = [o for o, _ in tailer.seen]
    assert offsets == sorted(set(offsets)), f"consumer saw offsets out of order: {_gaps(offsets)}"
    resets = [
        e
        for e in tailer.errors
        if e.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET)
    ]
    assert not resets, f"the consumer's position fell outside the log: {resets[:3]}"

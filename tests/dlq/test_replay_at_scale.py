"""A replay of 100,000 dead letters through the real path: the API on daphne queues the job,
a real Celery worker runs it, and every record lands in its original topic and partition
exactly once (none lost, none duplicated), after which the DLQ is purged."""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.controlplane_fixtures import PASSWORD, Dashboard
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.integration

RECORDS = 100_000
DLQ_PARTITIONS = 2
ORIGINAL_PARTITIONS = 3


def call(dashboard: Dashboard, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        dashboard.url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
    )
    request.add_header("Content-Type", "application/json")
    token = base64.b64encode(f"operator:{PASSWORD}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def produce_dead_letters(cluster: Cluster, dlq: str, original: str) -> None:
    """Record i: key k<i>, value v<i>, in DLQ partition i % 2, a dead letter of offset i of
    ``original``'s partition i % 3 (Kafka Connect's headers)."""
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": RECORDS,
        }
    )
    failed: list[Any] = []
    for i in range(RECORDS):
        producer.produce(
            dlq,
            key=b"k%d" % i,
            value=b"v%d" % i,
            partition=i % DLQ_PARTITIONS,
            headers=[
                ("__connect.errors.topic", original.encode()),
                ("__connect.errors.partition", b"%d" % (i % ORIGINAL_PARTITIONS)),
                ("__connect.errors.offset", b"%d" % i),
                ("__connect.errors.exception.class.name", b"org.example.Boom"),
            ],
            on_delivery=lambda err, _msg: failed.append(err) if err else None,
        )
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0 and not failed, failed[:3]


def read_everything(cluster: Cluster, topic: str) -> list[tuple[int, bytes, bytes, bytes]]:
    """(partition, key, value, weir.replay.source) of every record of ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": "dlq-scale-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(ORIGINAL_PARTITIONS)])
    found: list[tuple[int, bytes, bytes, bytes]] = []
    ends = 0
    deadline = time.monotonic() + 120
    while ends < ORIGINAL_PARTITIONS and time.monotonic() < deadline:
        for message in consumer.consume(10_000, timeout=1):
            if message.error():
                ends += 1
                continue
            source = dict(message.headers())["weir.replay.source"]
            found.append((message.partition(), message.key(), message.value(), source))
    consumer.close()
    return found


def test_replaying_100k_dead_letters_loses_and_duplicates_nothing_then_purges(
    dashboard: Dashboard, cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    original = cp_cluster.create_topic(unique("orders"), partitions=ORIGINAL_PARTITIONS)
    dlq = cp_cluster.create_topic(f"{original}-dlq", partitions=DLQ_PARTITIONS)
    produce_dead_letters(cp_cluster, dlq, original)

    status, answer = call(
        dashboard, "POST", f"/api/dlq/{dlq}/replay/", {"all": True, "purge": True}
    )
    assert status == 202, answer
    job_id = answer["job"]["id"]
    deadline = time.monotonic() + 240
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, job = call(dashboard, "GET", f"/api/jobs/{job_id}/")
        assert status == 200, job
        if job["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.5)
    assert job.get("status") == "succeeded", f"{job}\n{dashboard.log_tail()}"
    assert job["detail"]["replayed"] == RECORDS
    assert job["detail"]["purged"] == [
        {"partition": p, "low_watermark": RECORDS // DLQ_PARTITIONS} for p in range(DLQ_PARTITIONS)
    ]

    copies = read_everything(cp_cluster, original)
    sources = Counter(source for *_, source in copies)
    duplicated = [s for s, n in sources.items() if n > 1]
    assert not duplicated, f"{len(duplicated)} records replayed twice, e.g. {duplicated[:3]}"
    expected = {
        f"{dlq}/{i % DLQ_PARTITIONS}/{i // DLQ_PARTITIONS}".encode() for i in range(RECORDS)
    }
    missing = expected - set(sources)
    assert not missing, f"{len(missing)} records lost, e.g. {sorted(missing)[:3]}"
    assert len(copies) == RECORDS
    # Each record went back to the partition its headers named, with its key and value.
    for partition, key, value, _ in copies:
        i = int(key[1:])
        assert (partition, value) == (i % ORIGINAL_PARTITIONS, b"v%d" % i)

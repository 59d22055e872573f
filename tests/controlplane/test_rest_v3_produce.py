"""REST Proxy v3 produce: JSON/BINARY/STRING records, key routing by the Java client's murmur2,
streamed mode with one delivery report per record, and bad input — every produced record read
back with confluent-kafka."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition
from django.conf import settings
from rest_framework.test import APIClient

from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.django_db


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the Java producer's partitioner hash), as an unsigned int."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4 : i * 4 + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length & ~3
    extra = length % 4
    if extra == 3:
        h ^= data[tail + 2] << 16
    if extra >= 2:
        h ^= data[tail + 1] << 8
    if extra >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h


def java_partition(key: bytes, partitions: int) -> int:
    """``Utils.toPositive(Utils.murmur2(key)) % numPartitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def test_murmur2_matches_kafkas_test_vectors() -> None:
    # From Kafka's UtilsTest.testMurmur2 (signed Java ints).
    vectors = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536}
    for data, expected in vectors.items():
        assert murmur2(data) == expected & 0xFFFFFFFF


def read(cluster: Cluster, topic: str, partition: int, count: int) -> list[Message]:
    """The first ``count`` records of ``topic``-``partition``."""
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": "rest-produce-reader",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        found: list[Message] = []
        deadline = time.monotonic() + 20
        while len(found) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=count, timeout=0.5):
                error = message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    pytest.fail(f"consumer error {error}")
                if error is None:
                    found.append(message)
        assert len(found) >= count, f"read {len(found)} of {count} records of {topic}"
        return found[:count]
    finally:
        consumer.close()


def _records(topic: str) -> str:
    return f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}/topics/{topic}/records"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_produce_json_binary_string_with_headers_and_timestamp(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("produce"), partitions=2)
    bodies = [
        {
            "partition_id": 1,
            "headers": [{"name": "trace", "value": _b64(b"abc")}, {"name": "empty", "value": None}],
            "key": {"type": "STRING", "data": "order-1"},
            "value": {"type": "JSON", "data": {"amount": 12, "items": [1, 2]}},
            "timestamp": "2024-05-01T12:00:00.250Z",
        },
        {
            "partition_id": 1,
            "key": {"type": "BINARY", "data": _b64(b"\x00\x01\xff")},
            "value": {"type": "BINARY", "data": _b64(b"raw bytes")},
        },
        {"partition_id": 1, "value": {"type": "STRING", "data": "no key"}},
        {"partition_id": 1},
    ]
    reports = []
    for body in bodies:
        response = operator.post(_records(topic), body, format="json")
        assert response.status_code == 200, response.content
        reports.append(response.json())
    first = reports[0]
    assert first["error_code"] == 200
    assert first["cluster_id"] == settings.WEIR_CLUSTER_ID
    assert first["topic_name"] == topic
    assert first["partition_id"] == 1
    assert first["timestamp"] == "2024-05-01T12:00:00.250Z"
    assert first["key"] == {"type": "STRING", "size": len(b"order-1")}
    value_bytes = json.dumps({"amount": 12, "items": [1, 2]}, separators=(",", ":")).encode()
    assert first["value"] == {"type": "JSON", "size": len(value_bytes)}
    assert [r["offset"] for r in reports] == [0, 1, 2, 3]
    assert reports[1]["key"] == {"type": "BINARY", "size": 3}
    assert reports[2]["key"] is None
    assert reports[3]["value"] is None
    messages = read(cp_cluster, topic, 1, 4)
    assert [(m.key(), m.value()) for m in messages] == [
        (b"order-1", value_bytes),
        (b"\x00\x01\xff", b"raw bytes"),
        (None, b"no key"),
        (None, None),
    ]
    assert messages[0].headers() == [("trace", b"abc"), ("empty", None)]
    assert messages[0].timestamp()[1] == 1714564800250


def test_keyed_records_land_where_the_java_partitioner_puts_them(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("routing"), partitions=5)
    keys = [f"customer-{i}" for i in range(20)]
    stream = "".join(
        json.dumps({"key": {"type": "STRING", "data": k}, "value": {"data": i}})
        for i, k in enumerate(keys)
    )
    response = operator.post(_records(topic), stream, content_type="application/json")
    assert response.status_code == 200
    reports = [json.loads(line) for line in response.content.decode().splitlines()]
    assert len(reports) == 20
    assert all(r["error_code"] == 200 for r in reports)
    assert [r["partition_id"] for r in reports] == [java_partition(k.encode(), 5) for k in keys]
    assert len({r["partition_id"] for r in reports}) > 1
    # What was written where agrees with the reports.
    partition = reports[0]["partition_id"]
    mine = [r for r in reports if r["partition_id"] == partition]
    messages = read(cp_cluster, topic, partition, len(mine))
    assert [m.offset() for m in messages] == [r["offset"] for r in mine]
    assert {m.key().decode() for m in messages} == {
        k for k, r in zip(keys, reports, strict=True) if r["partition_id"] == partition
    }


def test_streamed_mode_reports_each_record_and_failures_alone(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("stream"), partitions=1)
    documents = [
        {"partition_id": 0, "value": {"type": "STRING", "data": "one"}},
        {"partition_id": 9, "value": {"type": "STRING", "data": "nowhere"}},
        {"partition_id": 0, "value": {"type": "XML", "data": "x"}},
        {"partition_id": 0, "value": {"type": "BINARY", "data": _b64(b"z" * 1_100_000)}},
        {"partition_id": 0, "value": {"type": "STRING", "data": "two"}},
    ]
    body = "\n".join(json.dumps(d) for d in documents)
    response = operator.post(_records(topic), body, content_type="application/json")
    assert response.status_code == 200
    reports = [json.loads(line) for line in response.content.decode().splitlines()]
    assert [r["error_code"] for r in reports] == [200, 404, 400, 413, 200]
    assert "partition 9" in reports[1]["message"]
    assert "XML" in reports[2]["message"]
    assert "too large" in reports[3]["message"]
    assert [reports[0]["offset"], reports[4]["offset"]] == [0, 1]
    assert [m.value() for m in read(cp_cluster, topic, 0, 2)] == [b"one", b"two"]


def test_produce_bad_input_is_4xx_naming_the_problem(
    cp_cluster: Cluster,
    operator: APIClient,
    viewer: APIClient,
    unique: Callable[[str], str],
) -> None:
    topic = cp_cluster.create_topic(unique("badproduce"), partitions=1)
    url = _records(topic)
    missing = operator.post(_records(unique("nope")), {"value": {"data": 1}}, format="json")
    assert missing.status_code == 404
    assert missing.json()["error_code"] == 404
    assert "topic" in missing.json()["message"]
    malformed = operator.post(url, '{"value": {', content_type="application/json")
    assert malformed.status_code == 400
    assert "JSON parse error" in malformed.json()["message"]
    wrong_type = operator.post(url, {"value": {"type": "XML", "data": "<a/>"}}, format="json")
    assert wrong_type.status_code == 400
    assert "XML" in wrong_type.json()["message"]
    bad_base64 = operator.post(url, {"key": {"type": "BINARY", "data": "@@@"}}, format="json")
    assert bad_base64.status_code == 400
    assert "key.data" in bad_base64.json()["message"]
    bad_partition = operator.post(url, {"partition_id": 3, "value": {"data": 1}}, format="json")
    assert bad_partition.status_code == 404
    assert "partition 3" in bad_partition.json()["message"]
    negative = operator.post(url, {"partition_id": -1}, format="json")
    assert negative.status_code == 400
    assert "partition_id" in negative.json()["message"]
    empty = operator.post(url, "", content_type="application/json")
    assert empty.status_code == 400
    text = operator.post(url, "hello", content_type="text/plain")
    assert text.status_code == 415
    assert viewer.post(url, {"value": {"data": 1}}, format="json").status_code == 403


def test_batch_reports_successes_and_failures_by_entry_id(
    cp_cluster: Cluster,
    operator: APIClient,
    viewer: APIClient,
    unique: Callable[[str], str],
) -> None:
    """Confluent's records:batch: 207 with each entry's report under its id; a bad entry fails
    alone, a bad batch is 422 with error code 42208."""
    topic = cp_cluster.create_topic(unique("batch"), partitions=1)
    url = _records(topic) + ":batch"
    entries = [
        {"id": "a-1", "partition_id": 0, "value": {"type": "STRING", "data": "one"}},
        {"id": "b_2", "partition_id": 0, "value": {"type": "XML", "data": "x"}},
        {"id": "c3", "partition_id": 0, "key": {"type": "STRING", "data": "k"}},
    ]
    response = operator.post(url, {"entries": entries}, format="json")
    assert response.status_code == 207, response.content
    body = response.json()
    assert [(s["id"], s["partition_id"], s["offset"]) for s in body["successes"]] == [
        ("a-1", 0, 0),
        ("c3", 0, 1),
    ]
    assert body["successes"][0]["value"] == {"type": "STRING", "size": 3}
    assert body["successes"][1]["key"] == {"type": "STRING", "size": 1}
    assert "error_code" not in body["successes"][0]
    assert [(f["id"], f["error_code"]) for f in body["failures"]] == [("b_2", 400)]
    assert "XML" in body["failures"][0]["message"]
    assert [m.value() for m in read(cp_cluster, topic, 0, 2)] == [b"one", None]

    one = {"id": "x", "value": {"data": 1}}
    for bad, words in (
        ({}, "empty"),
        ({"entries": []}, "Empty batch"),
        ({"entries": [one, one]}, "not distinct"),
        ({"entries": [{**one, "id": 7}]}, "identifier"),
        ({"entries": [{**one, "id": "has space"}]}, "identifier"),
        ({"entries": [{**one, "id": f"e{i}"} for i in range(11)]}, "Too many"),
    ):
        refused = operator.post(url, bad, format="json")
        assert refused.status_code == 422, (bad, refused.content)
        assert refused.json()["error_code"] == 42208
        assert words in refused.json()["message"]
    assert viewer.post(url, {"entries": [one]}, format="json").status_code == 403

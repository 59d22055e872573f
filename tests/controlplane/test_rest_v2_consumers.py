"""REST Proxy v2 consumer instances: the full cycle Confluent's clients run, on the real
cluster — create, subscribe or assign, read records, commit, read offsets, seek, delete."""

from __future__ import annotations

import base64
import json
import time

import pytest
from confluent_kafka import Producer
from django.test import override_settings
from rest_framework.test import APIClient

from groups.consumer_instances import registry

pytestmark = [pytest.mark.django_db, pytest.mark.integration]

V2 = "application/vnd.kafka.v2+json"


def _produce(
    cluster, topic: str, values: list[bytes], partition: int = 0, key: str = "k{}"
) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": "all"})
    for i, value in enumerate(values):
        producer.produce(topic, value, key=key.format(i).encode(), partition=partition)
    assert producer.flush(20) == 0


def _post(client: APIClient, path: str, body: dict, ctype: str = V2):
    return client.post(path, json.dumps(body), content_type=ctype)


def _read_all(client: APIClient, base: str, count: int, accept: str) -> list[dict]:
    records: list[dict] = []
    deadline = time.monotonic() + 30
    while len(records) < count and time.monotonic() < deadline:
        response = client.get(f"{base}/records?timeout=1000", HTTP_ACCEPT=accept)
        assert response.status_code == 200, response.content
        assert response["Content-Type"].startswith(accept)
        records += response.json()
    return records


def test_json_consumer_subscribes_reads_commits_seeks_and_is_deleted(
    cp_cluster, operator: APIClient, unique
) -> None:
    topic, group = unique("v2-json"), unique("v2-json-group")
    cp_cluster.create_topic(topic, partitions=1, replication_factor=3)
    _produce(cp_cluster, topic, [b'{"n": %d}' % i for i in range(5)], key='"k{}"')

    created = _post(
        operator,
        f"/kafka/consumers/{group}",
        {"name": "c1", "format": "json", "auto.offset.reset": "earliest"},
    )
    assert created.status_code == 200, created.content
    assert created["Content-Type"].startswith(V2)
    base = f"/kafka/consumers/{group}/instances/c1"
    assert created.json() == {"instance_id": "c1", "base_uri": f"http://testserver{base}"}
    duplicate = _post(operator, f"/kafka/consumers/{group}", {"name": "c1", "format": "json"})
    assert (duplicate.status_code, duplicate.json()["error_code"]) == (409, 40902)

    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    assert operator.get(f"{base}/subscription").json() == {"topics": [topic]}
    accept = "application/vnd.kafka.json.v2+json"
    records = _read_all(operator, base, 5, accept)
    assert [r["value"] for r in records] == [{"n": i} for i in range(5)]
    assert [r["key"] for r in records] == [f"k{i}" for i in range(5)]
    assert [r["offset"] for r in records] == list(range(5))

    assert _post(operator, f"{base}/offsets", {}).status_code == 200
    committed = operator.generic(
        "GET",
        f"{base}/offsets",
        json.dumps({"partitions": [{"topic": topic, "partition": 0}]}),
        content_type=V2,
    )
    assert committed.json()["offsets"][0]["offset"] == 5

    assert (
        _post(
            operator,
            f"{base}/positions",
            {"offsets": [{"topic": topic, "partition": 0, "offset": 3}]},
        ).status_code
        == 204
    )
    again = _read_all(operator, base, 2, accept)
    assert [r["offset"] for r in again][:2] == [3, 4]

    wrong_accept = operator.get(
        f"{base}/records", HTTP_ACCEPT="application/vnd.kafka.binary.v2+json"
    )
    assert (wrong_accept.status_code, wrong_accept.json()["error_code"]) == (406, 40601)

    assert operator.delete(base).status_code == 204
    gone = operator.get(f"{base}/records", HTTP_ACCEPT=accept)
    assert (gone.status_code, gone.json()["error_code"]) == (404, 40403)


def test_binary_consumer_with_manual_assignment_seeks_to_beginning_and_end(
    cp_cluster, viewer: APIClient, unique
) -> None:
    topic, group = unique("v2-bin"), unique("v2-bin-group")
    cp_cluster.create_topic(topic, partitions=2, replication_factor=3)
    _produce(cp_cluster, topic, [bytes([i, 255]) for i in range(4)], partition=1)
    assert (
        _post(viewer, f"/kafka/consumers/{group}", {"name": "b1", "format": "binary"}).status_code
        == 200
    )
    base = f"/kafka/consumers/{group}/instances/b1"
    parts = {"partitions": [{"topic": topic, "partition": 1}]}
    assert _post(viewer, f"{base}/assignments", parts).status_code == 204
    assert viewer.get(f"{base}/assignments").json() == parts
    assert _post(viewer, f"{base}/positions/beginning", parts).status_code == 204
    accept = "application/vnd.kafka.binary.v2+json"
    records = _read_all(viewer, base, 4, accept)
    assert [base64.b64decode(r["value"]) for r in records] == [bytes([i, 255]) for i in range(4)]
    assert base64.b64decode(records[0]["key"]) == b"k0"
    # Committing moves the group's position: an operator's right, not a viewer's.
    assert _post(viewer, f"{base}/offsets", {}).status_code == 403
    assert _post(viewer, f"{base}/positions/end", parts).status_code == 204
    _produce(cp_cluster, topic, [b"new"], partition=1)
    newer = _read_all(viewer, base, 1, accept)
    assert [(r["offset"], base64.b64decode(r["value"])) for r in newer] == [(4, b"new")]
    assert viewer.delete(base).status_code == 204


def test_bad_input_gets_confluent_error_codes(cp_cluster, operator: APIClient, unique) -> None:
    group = unique("v2-bad")
    avro = _post(operator, f"/kafka/consumers/{group}", {"name": "a", "format": "avro"})
    assert (avro.status_code, avro.json()["error_code"]) == (422, 42204)
    assert "Schema Registry" in avro.json()["message"]
    malformed = operator.post(f"/kafka/consumers/{group}", "{nope", content_type=V2)
    assert malformed.status_code == 400
    assert _post(operator, f"/kafka/consumers/{group}", {"name": "x"}).status_code == 200
    base = f"/kafka/consumers/{group}/instances/x"
    missing = _post(
        operator,
        f"{base}/assignments",
        {"partitions": [{"topic": "no-such-topic", "partition": 0}]},
    )
    assert (missing.status_code, missing.json()["error_code"]) == (404, 40401)
    both = _post(operator, f"{base}/subscription", {"topics": ["a"], "topic_pattern": "b.*"})
    assert both.status_code == 409
    text = operator.post(f"{base}/subscription", "topics", content_type="text/plain")
    assert text.status_code == 415
    assert operator.delete(base).status_code == 204


def test_blank_group_id_is_refused_without_crashing_the_web_process(
    cp_cluster, operator: APIClient
) -> None:
    # librdkafka aborts the process on a blank group.id; the proxy must refuse it first.
    for group in ("%20", "%20%20", "%09"):
        blank = _post(operator, f"/kafka/consumers/{group}", {"name": "x"})
        assert (blank.status_code, blank.json()["error_code"]) == (422, 42201)
        assert "blank" in blank.json()["message"]


def test_idle_instances_expire(cp_cluster, operator: APIClient, unique) -> None:
    group = unique("v2-idle")
    with override_settings(WEIR_CONSUMER_INSTANCE_TIMEOUT_MS=300):
        assert _post(operator, f"/kafka/consumers/{group}", {"name": "idle"}).status_code == 200
        assert (group, "idle") in registry.names()
        time.sleep(0.5)
        registry.expire()
        assert (group, "idle") not in registry.names()
        gone = operator.get(f"/kafka/consumers/{group}/instances/idle/subscription")
        assert gone.status_code == 404


def test_record_that_is_not_json_is_reported_and_stays_unread(
    cp_cluster, operator: APIClient, unique
) -> None:
    topic, group = unique("v2-notjson"), unique("v2-notjson-group")
    cp_cluster.create_topic(topic, partitions=1, replication_factor=3)
    _produce(cp_cluster, topic, [b"not json"], key='"k{}"')
    body = {"name": "j", "format": "json", "auto.offset.reset": "earliest"}
    assert _post(operator, f"/kafka/consumers/{group}", body).status_code == 200
    base = f"/kafka/consumers/{group}/instances/j"
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    accept = "application/vnd.kafka.json.v2+json"
    codes = []
    deadline = time.monotonic() + 30
    while len(codes) < 2 and time.monotonic() < deadline:
        response = operator.get(f"{base}/records?timeout=1000", HTTP_ACCEPT=accept)
        if response.status_code != 200:
            codes.append((response.status_code, response.json()["error_code"]))
        else:
            assert response.json() == []
    assert codes == [(422, 42205), (422, 42205)]
    assert operator.delete(base).status_code == 204

"""REST Proxy v2: topics, partitions and offsets, and produce in the json and binary embedded
formats (to a topic and to a partition), with Confluent's content types and error codes."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from tests.controlplane.test_rest_v3_produce import java_partition, read
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.django_db

JSON_V2 = "application/vnd.kafka.json.v2+json"
BINARY_V2 = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"


def _post(client: APIClient, url: str, body: object, content_type: str, **extra: str):
    return client.post(url, json.dumps(body), content_type=content_type, **extra)


def test_produce_json_to_topic_routes_keys_like_java(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("v2json"), partitions=3)
    records = [{"key": f"user-{i}", "value": {"n": i}} for i in range(6)]
    records.append({"value": [1, 2, 3], "partition": 2})
    response = _post(operator, f"/kafka/topics/{topic}", {"records": records}, JSON_V2)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == V2
    body = response.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    offsets = body["offsets"]
    assert len(offsets) == 7
    assert all(o["error_code"] is None and o["error"] is None for o in offsets)
    expected = [java_partition(json.dumps(f"user-{i}").encode(), 3) for i in range(6)] + [2]
    assert [o["partition"] for o in offsets] == expected
    on_two = [i for i, o in enumerate(offsets) if o["partition"] == 2]
    messages = read(cp_cluster, topic, 2, len(on_two))
    assert [m.offset() for m in messages] == [offsets[i]["offset"] for i in on_two]
    assert messages[-1].value() == b"[1,2,3]"
    for message, i in zip(messages[:-1], on_two[:-1], strict=True):
        assert message.key() == json.dumps(f"user-{i}").encode()
        assert json.loads(message.value()) == {"n": i}


def test_produce_binary_to_partition_and_read_offsets(
    cp_cluster: Cluster, operator: APIClient, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("v2bin"), partitions=2)
    payloads = [b"\x00\x01binary", b"second", b""]
    records = [
        {"key": base64.b64encode(b"k").decode(), "value": base64.b64encode(p).decode()}
        for p in payloads
    ]
    url = f"/kafka/topics/{topic}/partitions/1"
    response = _post(operator, url, {"records": records}, BINARY_V2)
    assert response.status_code == 200, response.content
    offsets = response.json()["offsets"]
    assert [(o["partition"], o["offset"]) for o in offsets] == [(1, 0), (1, 1), (1, 2)]
    messages = read(cp_cluster, topic, 1, 3)
    assert [(m.key(), m.value()) for m in messages] == [(b"k", p) for p in payloads]
    marks = viewer.get(f"{url}/offsets")
    assert marks.status_code == 200
    assert marks.json() == {"beginning_offset": 0, "end_offset": 3}


def test_v2_topic_and_partition_metadata(
    cp_cluster: Cluster, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("v2meta"), replica_assignment=[[1, 2, 3], [3, 1, 2]])
    names = viewer.get("/kafka/topics")
    assert names.status_code == 200
    assert names["Content-Type"] == V2
    assert topic in names.json()
    described = viewer.get(f"/kafka/topics/{topic}").json()
    assert described["name"] == topic
    assert described["configs"]["cleanup.policy"] == "delete"
    leader = cp_cluster.leader(topic, 1)
    second = described["partitions"][1]
    assert second["partition"] == 1
    assert second["leader"] == leader
    assert second["replicas"] == [
        {"broker": b, "leader": b == leader, "in_sync": True} for b in (3, 1, 2)
    ]
    listed = viewer.get(f"/kafka/topics/{topic}/partitions").json()
    assert listed == described["partitions"]
    assert viewer.get(f"/kafka/topics/{topic}/partitions/1").json() == second
    plain = viewer.get("/kafka/topics", HTTP_ACCEPT="application/json")
    assert plain["Content-Type"] == "application/json"


def test_v2_errors_use_confluent_codes_and_content_types(
    cp_cluster: Cluster,
    operator: APIClient,
    viewer: APIClient,
    unique: Callable[[str], str],
) -> None:
    topic = cp_cluster.create_topic(unique("v2err"), partitions=1)
    url = f"/kafka/topics/{topic}"
    ok = {"records": [{"value": 1}]}

    def check(response, status: int, code: int, words: str) -> None:
        assert response.status_code == status, response.content
        assert response["Content-Type"] == V2
        body = response.json()
        assert body["error_code"] == code, body
        assert words in body["message"], body

    check(_post(operator, f"/kafka/topics/{unique('no')}", ok, JSON_V2), 404, 40401, "topic")
    check(viewer.get(f"/kafka/topics/{unique('no')}"), 404, 40401, "not found")
    check(_post(operator, f"{url}/partitions/5", ok, JSON_V2), 404, 40402, "partition 5")
    check(viewer.get(f"{url}/partitions/5"), 404, 40402, "partition 5")
    check(viewer.get(f"{url}/partitions/x/offsets"), 404, 40402, "'x'")
    check(
        _post(operator, url, {"records": [{"value": 1, "partition": 4}]}, JSON_V2),
        404,
        40402,
        "partition 4",
    )
    check(operator.post(url, "hello", content_type="text/plain"), 415, 415, "Content-Type")
    check(
        _post(operator, url, ok, "application/vnd.kafka.avro.v2+json"),
        422,
        42202,
        "value schema",
    )
    check(
        _post(operator, url, {**ok, "value_schema": '{"type": "int"}'}, JSON_V2),
        422,
        42205,
        "Schema Registry",
    )
    check(
        _post(operator, url, {"records": [{"value": "not base64!"}]}, BINARY_V2),
        422,
        42203,
        "base64",
    )
    check(_post(operator, url, {"records": []}, JSON_V2), 422, 42203, "records")
    check(operator.post(url, '{"records": [', content_type=JSON_V2), 400, 400, "JSON")
    denied = viewer.generic("POST", url, json.dumps(ok), content_type=JSON_V2)
    check(denied, 403, 403, "needs the operator role")
    not_acceptable = _post(operator, url, ok, JSON_V2, HTTP_ACCEPT="text/html")
    assert not_acceptable.status_code == 406
    assert not_acceptable.json()["error_code"] == 406
    # Nothing above was written.
    assert viewer.get(f"{url}/partitions/0/offsets").json()["end_offset"] == 0


def test_record_that_fails_gets_confluents_error_code_and_the_others_are_written(
    cp_cluster: Cluster, operator: APIClient, unique: Callable[[str], str]
) -> None:
    """Confluent reports a record Kafka refused with error_code 50002 (50003 when retriable),
    partition and offset null, and still writes the rest of the request."""
    topic = cp_cluster.create_topic(unique("v2fail"), partitions=1)
    big = base64.b64encode(b"z" * 1_100_000).decode()
    records = [{"value": base64.b64encode(v).decode()} for v in (b"one", b"two")]
    records.insert(1, {"value": big})
    response = _post(operator, f"/kafka/topics/{topic}", {"records": records}, BINARY_V2)
    assert response.status_code == 200, response.content
    offsets = response.json()["offsets"]
    assert [(o["partition"], o["offset"], o["error_code"]) for o in offsets] == [
        (0, 0, None),
        (None, None, 50002),
        (0, 1, None),
    ]
    assert "too large" in offsets[1]["error"]
    assert [m.value() for m in read(cp_cluster, topic, 0, 2)] == [b"one", b"two"]

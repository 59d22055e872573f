"""REST Proxy v2 consumer instances: the full cycle Confluent's clients run, on the real
cluster — create, subscribe or assign, read records, commit, read offsets, seek, delete."""

from __future__ import annotations

import base64
import json
import time

import pytest
from confluent_kafka import Producer
from django.conf import settings
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

    no_body = operator.post(f"{base}/offsets", content_type=V2)
    assert (no_body.status_code, no_body.json()) == (200, [])
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
    xml = _post(operator, f"/kafka/consumers/{group}", {"name": "a", "format": "xml"})
    assert (xml.status_code, xml.json()["error_code"]) == (422, 42204)
    assert "not supported" in xml.json()["message"]
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
    # A commit Kafka refuses: Confluent's mapping of UnknownTopicOrPartitionException.
    unknown = {"offsets": [{"topic": "no-such-topic", "partition": 0, "offset": 1}]}
    refused = _post(operator, f"{base}/offsets", unknown)
    assert (refused.status_code, refused.json()["error_code"]) == (404, 40403)
    assert "Unknown topic or partition" in refused.json()["message"]
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


def _committed(client: APIClient, base: str, partitions: list[dict]) -> list[dict]:
    response = client.generic(
        "GET", f"{base}/offsets", json.dumps({"partitions": partitions}), content_type=V2
    )
    assert response.status_code == 200, response.content
    return response.json()["offsets"]


def test_committing_last_read_offsets_then_restarting_reads_no_record_twice(
    cp_cluster, operator: APIClient, unique
) -> None:
    """Confluent's proxy commits offset + 1 of each given (last read) offset: a consumer that
    commits what it has read and restarts goes on from the next record, and the group's lag
    shows nothing left to read."""
    topic, group = unique("v2-restart"), unique("v2-restart-group")
    cp_cluster.create_topic(topic, partitions=2, replication_factor=3)
    for partition in (0, 1):
        _produce(cp_cluster, topic, [b"p%d-%d" % (partition, i) for i in range(3)], partition)
    accept = "application/vnd.kafka.binary.v2+json"
    created = {"format": "binary", "auto.offset.reset": "earliest"}

    new = _post(operator, f"/kafka/consumers/{group}", {"name": "first", **created})
    assert new.status_code == 200, new.content
    base = f"/kafka/consumers/{group}/instances/first"
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    records = _read_all(operator, base, 6, accept)
    last = {}
    for record in records:
        last[record["partition"]] = max(last.get(record["partition"], -1), record["offset"])
    assert last == {0: 2, 1: 2}
    body = {
        "offsets": [
            {"topic": topic, "partition": p, "offset": o, "metadata": f"p{p}"}
            for p, o in last.items()
        ]
    }
    commit = _post(operator, f"{base}/offsets", body)
    assert (commit.status_code, commit.json()) == (200, [])
    parts = [{"topic": topic, "partition": p} for p in (0, 1)]
    assert sorted(_committed(operator, base, parts), key=lambda o: o["partition"]) == [
        {"topic": topic, "partition": p, "offset": 3, "metadata": f"p{p}"} for p in (0, 1)
    ]
    v3_groups = f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}/consumer-groups"
    lags = operator.get(f"{v3_groups}/{group}/lags")
    assert lags.status_code == 200, lags.content
    rows = lags.json()["data"]
    assert sorted((r["partition_id"], r["current_offset"], r["lag"]) for r in rows) == [
        (0, 3, 0),
        (1, 3, 0),
    ]
    assert operator.delete(base).status_code == 204

    # The restart: a new instance (a new librdkafka consumer) in the same group.
    _produce(cp_cluster, topic, [b"after-restart"], partition=0)
    new = _post(operator, f"/kafka/consumers/{group}", {"name": "second", **created})
    assert new.status_code == 200, new.content
    base = f"/kafka/consumers/{group}/instances/second"
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    again = _read_all(operator, base, 1, accept)
    # Whatever the group would re-deliver comes first in its partition: one more read proves
    # nothing else was waiting.
    again += operator.get(f"{base}/records?timeout=1000", HTTP_ACCEPT=accept).json()
    assert [(r["partition"], r["offset"], base64.b64decode(r["value"])) for r in again] == [
        (0, 3, b"after-restart")
    ]
    assert operator.delete(base).status_code == 204


def test_empty_commit_commits_what_was_returned_and_committed_lists_only_committed(
    cp_cluster, operator: APIClient, unique
) -> None:
    topic, group = unique("v2-empty-commit"), unique("v2-empty-commit-group")
    cp_cluster.create_topic(topic, partitions=2, replication_factor=3)
    _produce(cp_cluster, topic, [b"a", b"b"], partition=1)
    new = _post(operator, f"/kafka/consumers/{group}", {"name": "c", "format": "binary"})
    assert new.status_code == 200, new.content
    base = f"/kafka/consumers/{group}/instances/c"
    parts = [{"topic": topic, "partition": p} for p in (0, 1)]
    assert _post(operator, f"{base}/assignments", {"partitions": parts}).status_code == 204
    assert _post(operator, f"{base}/positions/beginning", {"partitions": parts}).status_code == 204
    assert len(_read_all(operator, base, 2, "application/vnd.kafka.binary.v2+json")) == 2
    # Partitions the group has never committed are left out, as Confluent's proxy does.
    assert _committed(operator, base, parts) == []
    assert _post(operator, f"{base}/offsets", {}).status_code == 200
    # The positions: after the two records read on 1, and where the seek left 0 (Java's
    # commitSync() in Confluent's proxy commits every assigned partition's position).
    assert sorted(_committed(operator, base, parts), key=lambda o: o["partition"]) == [
        {"topic": topic, "partition": 0, "offset": 0, "metadata": ""},
        {"topic": topic, "partition": 1, "offset": 2, "metadata": ""},
    ]
    # A partition the instance no longer owns keeps its committed offset: 0 is committed at
    # 5 by hand, the instance is reassigned to 1 alone and seeks back there, and an empty commit
    # moves 1 only (its stale position on 0 would rewind 0's owner).
    p0_at_5 = {"offsets": [{"topic": topic, "partition": 0, "offset": 4}]}
    assert _post(operator, f"{base}/offsets", p0_at_5).status_code == 200
    only_one = {"partitions": parts[1:]}
    assert _post(operator, f"{base}/assignments", only_one).status_code == 204
    assert _post(operator, f"{base}/positions/beginning", only_one).status_code == 204
    assert _post(operator, f"{base}/offsets", {}).status_code == 200
    assert sorted(_committed(operator, base, parts), key=lambda o: o["partition"]) == [
        {"topic": topic, "partition": 0, "offset": 5, "metadata": ""},
        {"topic": topic, "partition": 1, "offset": 0, "metadata": ""},
    ]
    # A request that names no partitions: Confluent's 40402.
    nothing = operator.generic("GET", f"{base}/offsets", "", content_type=V2)
    assert (nothing.status_code, nothing.json()["error_code"]) == (404, 40402)
    assert operator.delete(base).status_code == 204


def test_seek_to_timestamps_and_offsets_in_one_request(
    cp_cluster, operator: APIClient, unique
) -> None:
    topic, group = unique("v2-seek-ts"), unique("v2-seek-ts-group")
    cp_cluster.create_topic(topic, partitions=2, replication_factor=3)
    producer = Producer({"bootstrap.servers": cp_cluster.bootstrap(), "acks": "all"})
    base_ms = 1_700_000_000_000
    for i in range(4):
        producer.produce(topic, b"t%d" % i, partition=0, timestamp=base_ms + i * 1000)
        producer.produce(topic, b"o%d" % i, partition=1)
    assert producer.flush(20) == 0
    new = _post(operator, f"/kafka/consumers/{group}", {"name": "s", "format": "binary"})
    assert new.status_code == 200, new.content
    base = f"/kafka/consumers/{group}/instances/s"
    parts = [{"topic": topic, "partition": p} for p in (0, 1)]
    assert _post(operator, f"{base}/assignments", {"partitions": parts}).status_code == 204
    seek = {
        # 2023-11-14T22:13:22Z is base_ms + 2 s: the record at offset 2.
        "timestamps": [{"topic": topic, "partition": 0, "timestamp": "2023-11-14T22:13:22Z"}],
        "offsets": [{"topic": topic, "partition": 1, "offset": 3}],
    }
    assert _post(operator, f"{base}/positions", seek).status_code == 204
    records = _read_all(operator, base, 3, "application/vnd.kafka.binary.v2+json")
    assert sorted((r["partition"], r["offset"]) for r in records) == [(0, 2), (0, 3), (1, 3)]
    bad = _post(
        operator,
        f"{base}/positions",
        {"timestamps": [{"topic": topic, "partition": 0, "timestamp": "yesterday"}]},
    )
    assert (bad.status_code, bad.json()["error_code"]) == (422, 42201)
    assert "timestamps[0]" in bad.json()["message"]
    assert operator.delete(base).status_code == 204


def test_read_timeout_and_max_bytes_follow_confluent_defaults(
    cp_cluster, operator: APIClient, unique
) -> None:
    """timeout <= 0 and max_bytes <= 0 mean the defaults (Confluent's -1), not errors; the
    instance's consumer.request.timeout.ms bounds a read's wait."""
    topic, group = unique("v2-read-defaults"), unique("v2-read-defaults-group")
    cp_cluster.create_topic(topic, partitions=1, replication_factor=3)
    _produce(cp_cluster, topic, [b"x"])
    body = {"name": "r", "format": "binary", "auto.offset.reset": "earliest"}
    too_long = _post(
        operator, f"/kafka/consumers/{group}", {**body, "consumer.request.timeout.ms": 10**9}
    )
    assert (too_long.status_code, too_long.json()["error_code"]) == (422, 42204)
    created = _post(
        operator, f"/kafka/consumers/{group}", {**body, "consumer.request.timeout.ms": 500}
    )
    assert created.status_code == 200, created.content
    base = f"/kafka/consumers/{group}/instances/r"
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    accept = "application/vnd.kafka.binary.v2+json"
    records: list[dict] = []
    deadline = time.monotonic() + 30
    while not records and time.monotonic() < deadline:
        response = operator.get(f"{base}/records?timeout=-1&max_bytes=0", HTTP_ACCEPT=accept)
        assert response.status_code == 200, response.content
        records = response.json()
    assert [base64.b64decode(r["value"]) for r in records] == [b"x"]
    assert operator.delete(base).status_code == 204


def test_subscription_and_manual_assignment_are_mutually_exclusive(
    cp_cluster, operator: APIClient, unique
) -> None:
    """As behind Confluent's proxy (Java's IllegalStateException): 409 with 40903 until the
    subscription is deleted, which also drops a manual assignment."""
    topic, group = unique("v2-mixed"), unique("v2-mixed-group")
    cp_cluster.create_topic(topic, partitions=1, replication_factor=3)
    assert _post(operator, f"/kafka/consumers/{group}", {"name": "m"}).status_code == 200
    base = f"/kafka/consumers/{group}/instances/m"
    parts = {"partitions": [{"topic": topic, "partition": 0}]}
    assert _post(operator, f"{base}/assignments", parts).status_code == 204
    mixed = _post(operator, f"{base}/subscription", {"topics": [topic]})
    assert (mixed.status_code, mixed.json()["error_code"]) == (409, 40903)
    assert "mutually exclusive" in mixed.json()["message"]
    assert operator.delete(f"{base}/subscription").status_code == 204
    assert operator.get(f"{base}/assignments").json() == {"partitions": []}
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    mixed = _post(operator, f"{base}/assignments", parts)
    assert (mixed.status_code, mixed.json()["error_code"]) == (409, 40903)
    assert operator.delete(base).status_code == 204


def test_topic_pattern_matches_whole_names_as_javas_pattern(
    cp_cluster, operator: APIClient, unique
) -> None:
    """Confluent's proxy subscribes with java.util.regex: the pattern must match the whole
    topic name, so "prefix-orders" does not take "prefix-orders-eu"."""
    prefix = unique("v2-pattern")
    orders, eu = (
        cp_cluster.create_topic(f"{prefix}-orders"),
        cp_cluster.create_topic(f"{prefix}-orders-eu"),
    )
    _produce(cp_cluster, orders, [b"wanted"])
    _produce(cp_cluster, eu, [b"not-wanted"])
    group = unique("v2-pattern-group")
    body = {"name": "p", "format": "binary", "auto.offset.reset": "earliest"}
    assert _post(operator, f"/kafka/consumers/{group}", body).status_code == 200
    base = f"/kafka/consumers/{group}/instances/p"
    pattern = {"topic_pattern": f"{prefix}-ord[a-z]+"}
    assert _post(operator, f"{base}/subscription", pattern).status_code == 204
    assert operator.get(f"{base}/subscription").json() == {"topics": [orders]}
    accept = "application/vnd.kafka.binary.v2+json"
    records = _read_all(operator, base, 1, accept)
    records += operator.get(f"{base}/records?timeout=1000", HTTP_ACCEPT=accept).json()
    assert [(r["topic"], base64.b64decode(r["value"])) for r in records] == [(orders, b"wanted")]
    bad = _post(operator, f"{base}/subscription", {"topic_pattern": "("})
    assert (bad.status_code, bad.json()["error_code"]) == (422, 42201)
    assert operator.delete(base).status_code == 204


def test_max_bytes_bounds_each_response_and_leaves_the_rest_for_the_next_read(
    cp_cluster, operator: APIClient, unique
) -> None:
    """Confluent's read task adds a record only while keys and values stay under max_bytes;
    the records left over come in the next reads, none lost or repeated. A single record over
    the limit is still returned alone (a Kafka fetch's rule) rather than never."""
    topic, group = unique("v2-max-bytes"), unique("v2-max-bytes-group")
    cp_cluster.create_topic(topic, partitions=1, replication_factor=3)
    _produce(cp_cluster, topic, [bytes([65 + i]) * 100 for i in range(5)] + [b"z" * 500])
    assert _post(operator, f"/kafka/consumers/{group}", {"name": "b"}).status_code == 200
    base = f"/kafka/consumers/{group}/instances/b"
    parts = {"partitions": [{"topic": topic, "partition": 0}]}
    assert _post(operator, f"{base}/assignments", parts).status_code == 204
    assert _post(operator, f"{base}/positions/beginning", parts).status_code == 204
    accept = "application/vnd.kafka.binary.v2+json"
    responses: list[list[dict]] = []
    deadline = time.monotonic() + 30
    while sum(map(len, responses)) < 6 and time.monotonic() < deadline:
        got = operator.get(f"{base}/records?max_bytes=350", HTTP_ACCEPT=accept).json()
        if got:
            responses.append(got)
    offsets = [r["offset"] for response in responses for r in response]
    assert offsets == list(range(6))
    for response in responses:
        size = sum(
            len(base64.b64decode(r["value"])) + len(base64.b64decode(r["key"])) for r in response
        )
        assert size < 350 or len(response) == 1, [r["offset"] for r in response]
    # Each record is 102 bytes with its key: three fit under 350, never four.
    assert max(map(len, responses)) <= 3
    assert responses[-1] == [responses[-1][0]] and responses[-1][0]["offset"] == 5
    assert operator.delete(base).status_code == 204


def test_auto_commit_commits_only_what_reads_returned(
    cp_cluster, operator: APIClient, unique
) -> None:
    """With auto.commit.enable, records librdkafka fetched that a read left for the next one
    (over max_bytes) are not committed: a restarted instance reads them, none is lost."""
    topic, group = unique("v2-auto"), unique("v2-auto-group")
    cp_cluster.create_topic(topic, partitions=1, replication_factor=3)
    _produce(cp_cluster, topic, [bytes([65 + i]) * 100 for i in range(6)])
    body = {"format": "binary", "auto.offset.reset": "earliest", "auto.commit.enable": "true"}
    assert _post(operator, f"/kafka/consumers/{group}", {"name": "a", **body}).status_code == 200
    base = f"/kafka/consumers/{group}/instances/a"
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    accept = "application/vnd.kafka.binary.v2+json"
    first: list[dict] = []
    deadline = time.monotonic() + 30
    while not first and time.monotonic() < deadline:
        first = operator.get(f"{base}/records?max_bytes=250", HTTP_ACCEPT=accept).json()
    assert 1 <= len(first) <= 2
    assert operator.delete(base).status_code == 204  # closing commits what was stored

    assert _post(operator, f"/kafka/consumers/{group}", {"name": "b", **body}).status_code == 200
    base = f"/kafka/consumers/{group}/instances/b"
    assert _post(operator, f"{base}/subscription", {"topics": [topic]}).status_code == 204
    rest = _read_all(operator, base, 6 - len(first), accept)
    assert [r["offset"] for r in first + rest] == list(range(6))
    assert operator.delete(base).status_code == 204

"""``/api/dlq/``: finding dead letter queues, browsing their records with error context, dry
runs, replays (the job run in-process) and purges, against the shared 3-broker cluster with
records produced by confluent-kafka. The replay of 100k records through a real Celery worker
is in ``test_replay_at_scale.py``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from rest_framework.test import APIClient

from controlplane.jobs import job_execute
from controlplane.models import AuditEntry, Job
from tests.controlplane.lag_helpers import produce_records
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.django_db


def connect_headers(topic: str, partition: int, offset: int, message: str) -> list[Any]:
    return [
        ("trace", f"t-{offset}".encode()),
        ("__connect.errors.topic", topic.encode()),
        ("__connect.errors.partition", str(partition).encode()),
        ("__connect.errors.offset", str(offset).encode()),
        ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
        ("__connect.errors.exception.message", message.encode()),
        ("__connect.errors.exception.stacktrace", b"DataException\n\tat Worker.convert"),
    ]


@pytest.fixture
def orders(cp_cluster: Cluster, unique: Callable[[str], str]) -> str:
    """The original topic the dead letters came from (3 partitions, empty)."""
    return cp_cluster.create_topic(unique("orders"), partitions=3)


@pytest.fixture
def dlq(cp_cluster: Cluster, unique: Callable[[str], str], orders: str) -> str:
    """``<orders>.DLT`` (named by the default pattern): offsets 0..5 of partition 0 are
    dead letters of ``orders``: even ones failed with "Unknown magic byte!" (from partition 1),
    odd ones with "timeout" (from partition 2)."""
    name = cp_cluster.create_topic(f"{orders}.DLT", partitions=2)
    records = [
        {
            "key": f"k{i}".encode(),
            "value": f"order-{i}".encode(),
            "headers": connect_headers(
                orders,
                1 if i % 2 == 0 else 2,
                100 + i,
                "Unknown magic byte!" if i % 2 == 0 else "timeout",
            ),
        }
        for i in range(6)
    ]
    produce_records(cp_cluster, name, records)
    return name


def read_all(cluster: Cluster, topic: str, partitions: int) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": "dlq-test-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    found, ends = [], 0
    while ends < partitions:
        message = consumer.poll(10)
        assert message is not None, f"reading {topic} timed out after {len(found)} records"
        if message.error():
            ends += 1
            continue
        found.append(message)
    consumer.close()
    return found


def replay(client: APIClient, topic: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/dlq/{topic}/replay/", body, format="json")


def test_topics_named_by_the_pattern_or_carrying_connect_headers_are_listed(
    viewer: APIClient, cp_cluster: Cluster, unique: Callable[[str], str], dlq: str, orders: str
) -> None:
    by_headers = cp_cluster.create_topic(unique("sink-errors"))
    produce_records(
        cp_cluster, by_headers, [{"value": b"x", "headers": connect_headers(orders, 0, 1, "e")}]
    )
    plain = cp_cluster.create_topic(unique("plain"))
    produce_records(cp_cluster, plain, [{"value": b"x", "headers": [("trace", b"1")]}])
    # Record counts and header detection follow the state leaders publish every second:
    # a new topic shows within a second or two, as on the dashboard's next refresh.
    deadline = time.monotonic() + 10
    while True:
        answer = viewer.get("/api/dlq/")
        assert answer.status_code == 200, answer.json()
        listed = {t["name"]: t for t in answer.json()["topics"]}
        ready = listed.get(dlq, {}).get("records") == 6 and by_headers in listed
        if ready or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert listed[dlq] == {"name": dlq, "partitions": 2, "records": 6, "detected_by": "pattern"}
    assert listed[by_headers]["detected_by"] == "headers"
    assert plain not in listed and orders not in listed
    assert "dlq" in answer.json()["pattern"]
    # The header topic is a DLQ for the other endpoints too; a plain topic is not.
    assert viewer.get(f"/api/dlq/{by_headers}/records/").status_code == 200
    refused = viewer.get(f"/api/dlq/{plain}/records/")
    assert refused.status_code == 404
    assert "WEIR_DLQ_TOPIC_PATTERN" in refused.json()["message"]


def test_records_carry_their_error_context_and_filters_and_pages_narrow_them(
    viewer: APIClient, dlq: str, orders: str
) -> None:
    page = viewer.get(f"/api/dlq/{dlq}/records/").json()
    assert [r["offset"] for r in page["records"]] == list(range(6))
    assert (page["partitions"], page["high_watermark"], page["next"]) == (2, 6, None)
    first = page["records"][0]
    assert first["value"]["text"] == "order-0"
    assert first["error"]["original_topic"] == orders
    assert (first["error"]["original_partition"], first["error"]["original_offset"]) == (1, 100)
    assert first["error"]["exception_class"] == "org.apache.kafka.connect.errors.DataException"
    assert first["error"]["convention"] == "connect"

    def offsets(**query: Any) -> list[int]:
        answer = viewer.get(f"/api/dlq/{dlq}/records/", query)
        assert answer.status_code == 200, answer.json()
        return [r["offset"] for r in answer.json()["records"]]

    assert offsets(exception="MAGIC byte") == [0, 2, 4]
    assert offsets(exception="timeout", q="order-3") == [3]
    assert offsets(original_topic="elsewhere") == []
    assert offsets(start=4) == [4, 5]
    paged = viewer.get(f"/api/dlq/{dlq}/records/", {"limit": 2}).json()
    assert ([r["offset"] for r in paged["records"]], paged["next"]) == ([0, 1], 2)
    assert offsets(partition=1) == []


@pytest.mark.parametrize(
    ("query", "status", "words"),
    [
        ({"partition": 7}, 404, "partition 7"),
        ({"start": 99}, 400, "out of range"),
        ({"limit": 0}, 400, "limit"),
        ({"limit": "many"}, 400, "limit"),
    ],
)
def test_bad_record_queries_get_a_json_error_naming_the_problem(
    viewer: APIClient, dlq: str, query: dict[str, Any], status: int, words: str
) -> None:
    answer = viewer.get(f"/api/dlq/{dlq}/records/", query)
    assert answer.status_code == status, answer.json()
    assert words in answer.json()["message"]


def test_a_dry_run_plans_each_record_back_to_its_original_partition_and_produces_nothing(
    operator: APIClient, cp_cluster: Cluster, dlq: str, orders: str
) -> None:
    answer = replay(operator, dlq, {"all": True, "exception": "magic", "dry_run": True})
    assert answer.status_code == 200, answer.json()
    plan = answer.json()
    assert (plan["dry_run"], plan["scanned"], plan["matched"], plan["skipped"]) == (True, 6, 3, 3)
    assert plan["targets"] == [{"topic": orders, "partition": 1, "records": 3}]
    assert [(s["offset"], s["target_partition"]) for s in plan["sample"]] == [
        (0, 1),
        (2, 1),
        (4, 1),
    ]
    assert plan["problems"] == [] and plan["purge"] is None
    narrowed = replay(operator, dlq, {"all": True, "q": "order-4", "dry_run": True}).json()
    assert [(s["offset"]) for s in narrowed["sample"]] == [4]
    # Elsewhere, by key; and a purge that would delete unreplayed records is a problem.
    other = cp_cluster.create_topic(f"{orders}-retry")
    moved = replay(
        operator,
        dlq,
        {"records": [{"partition": 0, "offset": 1}], "target_topic": other, "dry_run": True},
    ).json()
    assert moved["targets"] == [{"topic": other, "partition": None, "records": 1}]
    refused = replay(
        operator, dlq, {"all": True, "exception": "magic", "purge": True, "dry_run": True}
    ).json()
    assert any("purge would delete offset 1" in p for p in refused["problems"]), refused
    assert read_all(cp_cluster, orders, 3) == []


def test_a_replay_job_produces_the_picked_records_idempotently_then_purges_the_prefix(
    operator: APIClient, cp_cluster: Cluster, dlq: str, orders: str
) -> None:
    picked = [{"partition": 0, "offset": o} for o in (0, 1, 2)]
    answer = replay(operator, dlq, {"records": picked, "purge": True})
    assert answer.status_code == 202, answer.json()
    job = answer.json()["job"]
    assert (job["kind"], job["status"], job["params"]["topic"]) == ("dlq-replay", "queued", dlq)
    done = job_execute(job["id"])
    assert done.status == Job.Status.SUCCEEDED, done.error
    assert done.detail["replayed"] == 3
    assert done.detail["purged"] == [{"partition": 0, "low_watermark": 3}]
    copies = sorted(read_all(cp_cluster, orders, 3), key=lambda m: m.value())
    assert [(m.partition(), m.key(), m.value()) for m in copies] == [
        (1, b"k0", b"order-0"),
        (2, b"k1", b"order-1"),
        (1, b"k2", b"order-2"),
    ]
    headers = dict(copies[0].headers())
    assert headers["trace"] == b"t-100"  # the record's own headers stay
    assert not any(name.startswith("__connect.errors.") for name in headers)
    assert (headers["weir.replay.count"], headers["weir.replay.source"]) == (
        b"1",
        f"{dlq}/0/0".encode(),
    )
    rest = operator.get(f"/api/dlq/{dlq}/records/").json()
    assert (rest["log_start_offset"], [r["offset"] for r in rest["records"]]) == (3, [3, 4, 5])
    audited = AuditEntry.objects.filter(path=f"/api/dlq/{dlq}/replay/").get()
    assert (audited.username, audited.status_code) == ("operator-user", 202)


def test_a_replay_that_cannot_place_every_record_is_refused_whole(
    operator: APIClient, cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("dlq"))
    produce_records(
        cp_cluster,
        name,
        [
            {"value": b"no-context"},
            {"value": b"gone", "headers": connect_headers("deleted-topic", 0, 1, "x")},
        ],
    )
    plan = replay(operator, name, {"all": True, "dry_run": True}).json()
    assert plan["matched"] == 0
    assert any("names no original topic" in p for p in plan["problems"]), plan
    assert any("'deleted-topic', which does not exist" in p for p in plan["problems"]), plan
    job = replay(operator, name, {"all": True}).json()["job"]
    failed = job_execute(job["id"])
    assert failed.status == Job.Status.FAILED
    assert "names no original topic" in failed.error
    assert failed.detail["replayed"] == 0


def test_purge_deletes_before_an_offset_and_checks_its_bounds(
    operator: APIClient, dlq: str
) -> None:
    done = operator.post(
        f"/api/dlq/{dlq}/purge/",
        {"partitions": [{"partition": 0, "before_offset": 4}]},
        format="json",
    )
    assert done.status_code == 200, done.json()
    assert done.json() == {"topic": dlq, "partitions": [{"partition": 0, "low_watermark": 4}]}
    beyond = operator.post(
        f"/api/dlq/{dlq}/purge/",
        {"partitions": [{"partition": 0, "before_offset": 9}]},
        format="json",
    )
    assert beyond.status_code == 400 and "out of range" in beyond.json()["message"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({}, "exactly one of records, ranges and all"),
        ({"all": True, "records": [{"partition": 0, "offset": 0}]}, "exactly one"),
        ({"records": [{"partition": 0, "offset": 0}], "exception": "x"}, "filter ranges"),
        ({"records": [{"partition": 0, "offset": 0}], "q": "x"}, "filter ranges"),
        ({"ranges": [{"partition": 0, "start_offset": 2, "end_offset": 2}]}, "is empty"),
        ({"ranges": [{"partition": 0, "start_offset": 0, "end_offset": 60}]}, "out of range"),
        ({"ranges": [{"partition": 5, "start_offset": 0, "end_offset": 1}]}, "no partition 5"),
        ({"records": [{"partition": 0, "offset": 60}]}, "offset 60 is out of range"),
        ({"records": [{"partition": 0, "offset": -1}]}, "offset"),
        ({"all": True, "target_topic": "no-such-topic"}, "no-such-topic"),
        ({"all": "yes please"}, "all"),
    ],
)
def test_bad_replay_requests_get_a_json_error_naming_the_problem(
    operator: APIClient, dlq: str, body: dict[str, Any], words: str
) -> None:
    answer = replay(operator, dlq, body)
    assert answer.status_code in (400, 404), answer.json()
    assert words in answer.json()["message"], answer.json()


def test_viewers_browse_but_cannot_replay_or_purge(viewer: APIClient, dlq: str) -> None:
    assert viewer.get(f"/api/dlq/{dlq}/records/").status_code == 200
    assert replay(viewer, dlq, {"all": True, "dry_run": True}).status_code == 403
    purge = {"partitions": [{"partition": 0, "before_offset": 1}]}
    assert viewer.post(f"/api/dlq/{dlq}/purge/", purge, format="json").status_code == 403

"""Client quotas end to end on an in-process broker: Describe/AlterClientQuotas over the wire
(Weir's kio client: neither confluent-kafka nor kafka-python has a quota admin API), real
confluent-kafka and kafka-python producers and consumers throttled (the client reports the
throttle time) with their rate bounded, another client id left alone, and ``manage.py configs
--entity-type users|clients`` round trips.

Rates are asserted only against a generous factor of the quota, and throttling only as "the
client saw a throttle time > 0". The request quota is tested with a bound so small that any
request exceeds it (raw Metadata, ListOffsets and Fetch requests, and a real producer).
``quota.window.num=3`` keeps the windows (and so the runs) short.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from brokers.quota_requests import quota_alter_request, quota_describe_request
from tests.suite.commands import failed_cleanly, manage
from tests.weir.clients.helpers import kafka, kafka_python_consumer
from tests.weir.cluster.conftest import raw_request
from tests.weir.inprocess import ThreadedBroker, threaded_broker
from tests.weir.requests import fetch_body

QUOTA = 100_000.0  # bytes per second
RECORD = b"x" * 10_000
FAST_FACTOR = 3  # an unthrottled client here runs at tens of MB/s


@pytest.fixture(scope="module")
def broker(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedBroker]:
    directory: Path = tmp_path_factory.mktemp("quota-broker")
    with threaded_broker(
        data_dir=directory / "broker-1",
        redis_url=redis_server,
        configs=("quota.window.num=3",),
    ) as started:
        yield started


def _request(broker: ThreadedBroker, body: Any, client_id: str = "quota-test") -> Any:
    """One request on a connection of its own (a throttled connection is muted after its
    response; the next request here does not wait for that)."""

    return raw_request(broker.port, body, timeout=15, client_id=client_id)


def set_quota(
    broker: ThreadedBroker, entity: list[tuple[str, str | None]], **values: float
) -> None:
    """AlterClientQuotas over the broker's PLAINTEXT listener; the entry must succeed."""
    (entry,) = _request(broker, quota_alter_request(entity, set=values)).entries
    assert entry.error_code == ErrorCode.none, entry.error_message


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- the admin APIs -------------------------------------------------------------------------
def test_api_versions_advertises_the_quota_apis(broker: ThreadedBroker) -> None:
    response = _request(
        broker, ApiVersionsRequest(client_software_name="t", client_software_version="1")
    )
    versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert versions[48] == (0, 1) and versions[49] == (0, 1)


def test_alter_then_describe_round_trips_and_delete_removes(broker: ThreadedBroker) -> None:
    user, client = _unique("user"), _unique("app")
    entity = [("users", user), ("clients", client)]
    set_quota(broker, entity, producer_byte_rate=1024, request_percentage=12.5)
    described = _request(broker, quota_describe_request(entity))
    assert described.error_code == ErrorCode.none
    (entry,) = described.entries
    assert {(e.entity_type, e.entity_name) for e in entry.entity} == {
        ("user", user),
        ("client-id", client),
    }
    assert {v.key: v.value for v in entry.values} == {
        "producer_byte_rate": 1024.0,
        "request_percentage": 12.5,
    }
    body = quota_alter_request(entity, set={}, remove=["producer_byte_rate", "request_percentage"])
    assert _request(broker, body).entries[0].error_code == ErrorCode.none
    assert _request(broker, quota_describe_request(entity)).entries == ()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"bogus_rate": 1.0}, "Invalid configuration key bogus_rate"),
        ({"producer_byte_rate": -1.0}, "must be a positive value"),
        ({"consumer_byte_rate": 1.5}, "must be a Long value"),
        ({"controller_mutation_rate": 1.0}, "controller_mutation_rate is not supported"),
    ],
)
def test_invalid_alterations_answer_invalid_request_naming_the_problem(
    broker: ThreadedBroker, values: dict[str, float], message: str
) -> None:
    (entry,) = _request(broker, quota_alter_request([("users", "v")], set=values)).entries
    assert entry.error_code == ErrorCode.invalid_request
    assert message in entry.error_message


# -- enforcement ------------------------------------------------------------------------------
def _produce_confluent(
    broker: ThreadedBroker, topic: str, client_id: str, total: int
) -> tuple[float, list[float]]:
    """Produce ``total`` records; (bytes per second, throttle times the client reported)."""
    return produce_measured({"bootstrap.servers": broker.bootstrap}, topic, client_id, total)


def produce_measured(
    conf: dict[str, Any], topic: str, client_id: str, total: int
) -> tuple[float, list[float]]:
    """Produce ``total`` records with confluent-kafka settings ``conf`` (the bootstrap, a
    login); (bytes per second, throttle times the client reported)."""
    throttles: list[float] = []
    producer = Producer(
        {
            **conf,
            "client.id": client_id,
            "linger.ms": 5,
            # Small requests, so the quota can act between them (one batch per request).
            "batch.size": 2 * len(RECORD) + 1000,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    started = time.monotonic()
    for _ in range(total):
        producer.produce(topic, RECORD)
        producer.poll(0)
    assert producer.flush(60) == 0
    elapsed = time.monotonic() - started
    producer.poll(0.5)  # throttle events are served by poll
    return total * len(RECORD) / elapsed, throttles


def test_confluent_producer_over_its_quota_is_throttled_and_slowed(broker: ThreadedBroker) -> None:
    greedy, polite = _unique("greedy"), _unique("polite")
    set_quota(broker, [("clients", greedy)], producer_byte_rate=QUOTA)
    topic = _unique("quota-produce")
    rate, throttles = _produce_confluent(broker, topic, greedy, 60)
    assert throttles and max(throttles) > 0
    assert rate < FAST_FACTOR * QUOTA
    # Another client id has no quota: it is neither throttled nor slowed by the first one.
    _, other = _produce_confluent(broker, topic, polite, 60)
    assert other == []


def test_kafka_python_producer_reports_the_throttle(broker: ThreadedBroker) -> None:
    client_id = _unique("kp-producer")
    set_quota(broker, [("clients", client_id)], producer_byte_rate=QUOTA)
    producer = kafka.KafkaProducer(
        bootstrap_servers=broker.bootstrap, client_id=client_id, linger_ms=5
    )
    try:
        started = time.monotonic()
        for _ in range(60):
            producer.send("quota-kafka-python", RECORD)
        producer.flush(60)
        rate = 60 * len(RECORD) / (time.monotonic() - started)
        throttle_max = _metric(producer.metrics(), "throttle-time-max")
    finally:
        producer.close()
    assert throttle_max > 0
    assert rate < FAST_FACTOR * QUOTA


def _metric(groups: dict[str, dict[str, Any]], name: str) -> float:
    return max((float(m[name]) for m in groups.values() if name in m), default=0.0)


def _fill(broker: ThreadedBroker, topic: str, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.size": 2 * len(RECORD)}
    )
    for _ in range(count):
        producer.produce(topic, RECORD)
    assert producer.flush(30) == 0


def test_confluent_consumer_over_its_quota_is_throttled_and_slowed(broker: ThreadedBroker) -> None:
    topic, client_id = _unique("quota-fetch"), _unique("reader")
    _fill(broker, topic, 60)
    set_quota(broker, [("clients", client_id)], consumer_byte_rate=QUOTA)
    throttles: list[float] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": _unique("g"),
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    consumer.subscribe([topic])
    received, started = 0, None
    deadline = time.monotonic() + 60
    try:
        while received < 60 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            started = started or time.monotonic()
            received += 1
        elapsed = time.monotonic() - (started or time.monotonic())
    finally:
        consumer.close()
    assert received == 60
    assert throttles and max(throttles) > 0
    assert 60 * len(RECORD) / max(elapsed, 1e-3) < FAST_FACTOR * QUOTA


def test_kafka_python_consumer_reports_the_fetch_throttle(broker: ThreadedBroker) -> None:
    topic, client_id = _unique("quota-kp-fetch"), _unique("kp-reader")
    _fill(broker, topic, 40)
    set_quota(broker, [("clients", client_id)], consumer_byte_rate=QUOTA)
    consumer = kafka_python_consumer(
        broker.bootstrap,
        client_id=client_id,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30_000,
    )
    consumer.assign([kafka.TopicPartition(topic, 0)])
    try:
        received = 0
        for _ in consumer:
            received += 1
            if received == 40:
                break
        throttle_max = _metric(consumer.metrics(), "throttle-time-max")
    finally:
        consumer.close()
    assert received == 40
    assert throttle_max > 0


# -- the request quota -------------------------------------------------------------------------
# One ten-thousandth of a percent of a thread: any request (tens of microseconds at least)
# is over it, so its first request is throttled; the throttle is capped at one window.
TINY_REQUEST_PERCENTAGE = 0.0001


def _metadata(topic: str) -> MetadataRequest:
    return MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=topic),),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def _list_offsets(topic: str) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=(
            ListOffsetsTopic(
                name=topic,
                partitions=(
                    ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1),
                ),
            ),
        ),
    )


def test_request_percentage_throttles_every_request_of_that_client_only(
    broker: ThreadedBroker,
) -> None:
    slow, free = _unique("slow"), _unique("free")
    topic = _unique("quota-requests")
    _fill(broker, topic, 2)
    set_quota(broker, [("clients", slow)], request_percentage=TINY_REQUEST_PERCENTAGE)
    for body in (_metadata(topic), _list_offsets(topic)):
        assert _request(broker, body, slow).throttle_time > timedelta(0), type(body).__name__
        assert _request(broker, body, free).throttle_time == timedelta(0), type(body).__name__
    # A real producer under the request quota: its Metadata and Produce are throttled and it
    # reports it, and its records are still all delivered.
    _, throttles = _produce_confluent(broker, topic, slow, 3)
    assert throttles and max(throttles) > 0
    _, unthrottled = _produce_confluent(broker, topic, free, 3)
    assert unthrottled == []


def test_fetch_throttled_by_the_request_quota_is_answered_empty(broker: ThreadedBroker) -> None:
    """As Kafka's handleFetchRequest: a Fetch over either quota carries no data."""
    slow, free = _unique("slow-reader"), _unique("free-reader")
    topic = _unique("quota-request-fetch")
    _fill(broker, topic, 3)
    set_quota(broker, [("clients", slow)], request_percentage=TINY_REQUEST_PERCENTAGE)
    throttled = _request(broker, fetch_body(topic, 0), slow)
    assert throttled.throttle_time > timedelta(0)
    assert throttled.error_code == ErrorCode.none and throttled.responses == ()
    served = _request(broker, fetch_body(topic, 0), free)
    assert served.throttle_time == timedelta(0)
    (partition,) = served.responses[0].partitions
    assert partition.error_code == ErrorCode.none and len(partition.records) >= len(RECORD)


# -- the CLI ----------------------------------------------------------------------------------
def test_configs_cli_alters_describes_and_deletes_client_quotas(broker: ThreadedBroker) -> None:
    user = _unique("alice")
    server = ("--bootstrap-server", broker.bootstrap)
    target = ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients")
    done = manage(
        "configs", *server, *target, "--entity-default", "--alter",
        "--add-config", "producer_byte_rate=1048576,request_percentage=50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"Completed updating config for user-principal '{user}', the default client-id." in (
        done.stdout
    )
    described = manage("configs", *server, *target, "--entity-default", "--describe")
    assert (
        f"Quota configs for user-principal '{user}', the default client-id are "
        "producer_byte_rate=1048576.0, request_percentage=50.0"
    ) in described.stdout
    deleted = manage(
        "configs", *server, *target, "--entity-default", "--alter",
        "--delete-config", "producer_byte_rate,request_percentage",
    )  # fmt: skip
    assert deleted.returncode == 0, deleted.stderr
    again = manage("configs", *server, *target, "--entity-default", "--describe")
    assert "Quota configs" not in again.stdout


def test_configs_cli_refuses_bad_quota_input_naming_it(broker: ThreadedBroker) -> None:
    server = ("--bootstrap-server", broker.bootstrap)
    bad_key = manage(
        "configs", *server, "--entity-type", "clients", "--entity-default", "--alter",
        "--add-config", "producer_byte_rat=10",
    )  # fmt: skip
    assert "Invalid configuration key producer_byte_rat" in failed_cleanly(bad_key)
    not_number = manage(
        "configs", *server, "--entity-type", "clients", "--entity-name", "c", "--alter",
        "--add-config", "producer_byte_rate=fast",
    )  # fmt: skip
    assert "producer_byte_rate=fast" in failed_cleanly(not_number)
    mixed = manage(
        "configs", *server, "--entity-type", "users", "--entity-name", "u",
        "--entity-type", "topics", "--entity-name", "t", "--describe",
    )  # fmt: skip
    assert "may be combined" in failed_cleanly(mixed)

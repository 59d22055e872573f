"""The ``weir`` data source in batch queries against real brokers: exactly the requested records.

Every test produces records with confluent-kafka, reads them back through
``spark.read.format("weir")`` and compares row counts and a content hash of
``(topic, partition, offset, key, value)`` with what the brokers acknowledged.
"""

from __future__ import annotations

import json
import time

import pytest
from pyspark.errors import PySparkException

from tests.spark_jobs.conftest import (
    Sent,
    create_topic,
    frame_digest,
    produce,
    sent_digest,
)

pytestmark = pytest.mark.integration


def read(spark: object, bootstrap: str, **options: str) -> object:
    reader = spark.read.format("weir").option("kafka.bootstrap.servers", bootstrap)  # type: ignore[attr-defined]
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


@pytest.fixture(scope="module")
def six(spark: object, bootstrap: str) -> tuple[str, list[Sent]]:
    """A 6-partition topic with 1,200 keyed records (200 per partition), some with headers."""
    name = f"spark-six-{time.monotonic_ns() % 10**8}"
    create_topic(bootstrap, name, 6)
    sent = produce(
        bootstrap,
        (
            (
                name,
                i % 6,
                f"key-{i % 37}".encode(),
                f"value-{i}".encode() * (1 + i % 5),
                None,
                [("trace", f"t{i}".encode()), ("empty", None)] if i % 3 == 0 else None,
            )
            for i in range(1200)
        ),
    )
    return name, sent


def test_subscribe_reads_every_record_once_in_kafka_schema(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, sent = six
    frame = read(spark, bootstrap, subscribe=topic)
    assert frame.columns == [  # type: ignore[attr-defined]
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    assert frame_digest(frame) == (len(sent), sent_digest(sent))
    first = frame.where("partition = 0 AND offset = 0").collect()[0]  # type: ignore[attr-defined]
    record = next(s for s in sent if s.partition == 0 and s.offset == 0)
    assert int(first["timestamp"].timestamp() * 1000) == record.timestamp_ms
    assert first["timestampType"] == 0  # CreateTime


def test_headers_column_only_with_include_headers(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, sent = six
    frame = read(spark, bootstrap, subscribe=topic, includeHeaders="true")
    assert frame.columns[-1] == "headers"  # type: ignore[attr-defined]
    rows = frame.select("partition", "offset", "headers").collect()  # type: ignore[attr-defined]
    got = {
        (r["partition"], r["offset"]): [(h["key"], h["value"]) for h in r["headers"]] for r in rows
    }
    want = {(s.partition, s.offset): [(k, v) for k, v in s.headers] for s in sent}
    assert got == want


def test_json_offsets_select_exact_ranges(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, sent = six
    starting = {topic: {"0": 10, "1": -2, "2": 150, "3": 0, "4": 199, "5": 200}}
    ending = {topic: {"0": 50, "1": -1, "2": 151, "3": 0, "4": -1, "5": -1}}
    frame = read(
        spark,
        bootstrap,
        subscribe=topic,
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    )
    bounds = {0: (10, 50), 1: (0, 200), 2: (150, 151), 3: (0, 0), 4: (199, 200), 5: (200, 200)}
    expected = [s for s in sent if bounds[s.partition][0] <= s.offset < bounds[s.partition][1]]
    assert len(expected) == 40 + 200 + 1 + 1
    assert frame_digest(frame) == (len(expected), sent_digest(expected))


def test_assign_reads_only_the_assigned_partitions(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, sent = six
    frame = read(spark, bootstrap, assign=json.dumps({topic: [1, 4]}))
    expected = [s for s in sent if s.partition in (1, 4)]
    assert frame_digest(frame) == (len(expected), sent_digest(expected))


def test_a_large_range_is_split_into_several_spark_partitions(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, sent = six
    frame = read(spark, bootstrap, subscribe=topic, maxRecordsPerPartition="64")
    assert frame.rdd.getNumPartitions() == 6 * 4  # type: ignore[attr-defined]  # 200 -> 4 x <= 64
    assert frame_digest(frame) == (len(sent), sent_digest(sent))
    hinted = read(spark, bootstrap, assign=json.dumps({topic: [2]}), minPartitions="5")
    assert hinted.rdd.getNumPartitions() == 5  # type: ignore[attr-defined]
    expected = [s for s in sent if s.partition == 2]
    assert frame_digest(hinted) == (len(expected), sent_digest(expected))


def test_subscribe_pattern_matches_whole_topic_names(spark: object, bootstrap: str) -> None:
    prefix = f"spark-pat-{time.monotonic_ns() % 10**8}"
    names = [f"{prefix}-a", f"{prefix}-b", f"x{prefix}-c"]
    for name in names:
        create_topic(bootstrap, name, 2)
    sent = produce(
        bootstrap, ((n, i % 2, None, f"{n}:{i}".encode()) for n in names for i in range(30))
    )
    frame = read(spark, bootstrap, subscribePattern=f"{prefix}-.*")
    expected = [s for s in sent if s.topic != names[2]]
    assert frame_digest(frame) == (60, sent_digest(expected))


def test_starting_and_ending_timestamps_pick_offsets_by_record_time(
    spark: object, bootstrap: str, topic_name: str
) -> None:
    create_topic(bootstrap, topic_name, 2)
    base = (int(time.time()) - 600) * 1000
    sent = produce(
        bootstrap,
        ((topic_name, i % 2, None, f"v{i}".encode(), base + i * 1000) for i in range(100)),
    )
    cut = base + 40_500  # records 41..99 are at or after it
    frame = read(spark, bootstrap, subscribe=topic_name, startingTimestamp=str(cut))
    expected = [s for s in sent if s.timestamp_ms >= cut]
    assert frame_digest(frame) == (59, sent_digest(expected))
    by_partition = json.dumps({topic_name: {"0": cut, "1": base}})
    upper = base + 80_000
    frame = read(
        spark,
        bootstrap,
        subscribe=topic_name,
        startingOffsetsByTimestamp=by_partition,
        endingTimestamp=str(upper),
    )
    expected = [
        s for s in sent if s.timestamp_ms < upper and (s.partition == 1 or s.timestamp_ms >= cut)
    ]
    assert frame_digest(frame) == (len(expected), sent_digest(expected))


def test_a_timestamp_after_every_record_fails_unless_strategy_latest(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, _ = six
    future = str(int(time.time() + 3600) * 1000)
    with pytest.raises(PySparkException, match="startingTimestamp"):
        read(spark, bootstrap, subscribe=topic, startingTimestamp=future).count()  # type: ignore[attr-defined]
    frame = read(
        spark,
        bootstrap,
        subscribe=topic,
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert frame.count() == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "t"}, "kafka.bootstrap.servers"),
        ({"kafka.bootstrap.servers": "127.0.0.1:1"}, "subscribe, subscribePattern, assign"),
        (
            {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t", "subscribePattern": "t"},
            "Only one of the following options",
        ),
        (
            {
                "kafka.bootstrap.servers": "127.0.0.1:1",
                "subscribe": "t",
                "startingOffsets": "latest",
            },
            "startingOffsets",
        ),
    ],
)
def test_bad_options_fail_the_query_naming_the_option(
    spark: object, options: dict[str, str], message: str
) -> None:
    with pytest.raises(PySparkException, match=message):
        reader = spark.read.format("weir")  # type: ignore[attr-defined]
        for name, value in options.items():
            reader = reader.option(name, value)
        reader.load().count()


def test_json_offsets_must_name_every_partition(
    spark: object, bootstrap: str, six: tuple[str, list[Sent]]
) -> None:
    topic, _ = six
    with pytest.raises(PySparkException, match="must specify all TopicPartitions"):
        read(
            spark, bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 0}})
        ).count()  # type: ignore[attr-defined]


def test_a_subscription_matching_nothing_reads_nothing(spark: object, bootstrap: str) -> None:
    frame = read(spark, bootstrap, subscribe=f"spark-missing-{time.monotonic_ns()}")
    assert frame.count() == 0  # type: ignore[attr-defined]

"""The ``weir`` source in streaming queries: new records, checkpoints, new partitions, limits."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from tests.spark_jobs.conftest import Sent, create_topic, frame_digest, produce, sent_digest

pytestmark = pytest.mark.integration


def wait_for(probe: object, timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()  # type: ignore[operator]
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


def test_stream_from_latest_picks_up_only_records_produced_after_it_started(
    spark: object, bootstrap: str, topic_name: str
) -> None:
    create_topic(bootstrap, topic_name, 3)
    before = produce(bootstrap, ((topic_name, i % 3, None, b"before") for i in range(30)))
    table = f"stream_{topic_name.replace('-', '_')}"
    query = (
        spark.readStream.format("weir")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic_name)
        .load()
        .writeStream.format("memory")
        .queryName(table)
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        # The query picks its "latest" at its first trigger, at a moment we cannot see from
        # here; so keep producing small rounds until the first of them arrives.
        sent: list[Sent] = []

        def arrived() -> bool:
            sent.extend(produce(bootstrap, ((topic_name, p, None, b"during") for p in range(3))))
            return spark.table(table).count() > 0  # type: ignore[attr-defined]

        wait_for(arrived, 60, "the first new record")
        last = produce(
            bootstrap, ((topic_name, i % 3, f"k{i}".encode(), b"after") for i in range(60))
        )
        sent.extend(last)
        ends = {p: max(s.offset for s in sent if s.partition == p) + 1 for p in range(3)}
        wait_for(
            lambda: (
                spark.table(table)
                .where(  # type: ignore[attr-defined]
                    " OR ".join(f"(partition = {p} AND offset = {ends[p] - 1})" for p in range(3))
                )
                .count()
                == 3
            ),
            60,
            "the last round",
        )
    finally:
        query.stop()
    rows = spark.table(table).select("partition", "offset", "value").collect()  # type: ignore[attr-defined]
    seen = [(r["partition"], r["offset"]) for r in rows]
    assert len(seen) == len(set(seen)), "a record was delivered twice"
    assert all(bytes(r["value"]) != b"before" for r in rows)
    assert max(s.offset for s in before) < min(o for _, o in seen)
    for p in range(3):
        offsets = sorted(o for q, o in seen if q == p)
        # from wherever the query started, every later record of the partition, in order
        assert offsets == list(range(offsets[0], ends[p])), p
    assert {(s.partition, s.offset) for s in last} <= set(seen)


def test_available_now_resumes_from_its_checkpoint_and_reads_new_partitions(
    spark: object, bootstrap: str, topic_name: str, tmp_path: Path
) -> None:
    create_topic(bootstrap, topic_name, 2)
    first = produce(bootstrap, ((topic_name, i % 2, None, f"a{i}".encode()) for i in range(40)))
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_once() -> list[dict]:
        query = (
            spark.readStream.format("weir")  # type: ignore[attr-defined]
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic_name)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "15")
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120), "availableNow query did not finish"
        assert query.exception() is None
        return [p for p in query.recentProgress if p["numInputRows"] > 0]

    batches = run_once()
    assert sum(b["numInputRows"] for b in batches) == 40
    assert len(batches) >= 3  # maxOffsetsPerTrigger=15 caps each micro-batch
    assert all(b["numInputRows"] <= 15 for b in batches)
    assert frame_digest(spark.read.parquet(str(out))) == (40, sent_digest(first))  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic_name, 3)])[topic_name].result(30)
    wait_for(
        lambda: len(admin.list_topics(topic_name, timeout=5).topics[topic_name].partitions) == 3,
        30,
        "the third partition",
    )
    second = produce(bootstrap, ((topic_name, i % 3, None, f"b{i}".encode()) for i in range(21)))
    batches = run_once()
    assert sum(b["numInputRows"] for b in batches) == 21
    assert frame_digest(spark.read.parquet(str(out))) == (61, sent_digest(first + second))  # type: ignore[attr-defined]

"""The analytics jobs on crafted workloads: the figures they report are the ones we produced."""

from __future__ import annotations

import json
import math
import time

import pytest

from spark_jobs.jobs import JOBS, UnknownJobError, run_job
from tests.spark_jobs.conftest import create_topic, produce

pytestmark = pytest.mark.integration


def json_ready(value: object) -> None:
    """Only JSON types (no numpy, no NaN) — what the control plane stores."""
    json.loads(json.dumps(value, allow_nan=False))


def test_job_names_match_the_contract() -> None:
    assert sorted(JOBS) == ["hot-partitions", "lag-trends", "record-sizes", "traffic"]
    with pytest.raises(UnknownJobError):
        run_job("nope", None, bootstrap_servers="127.0.0.1:1")  # type: ignore[arg-type]


def test_hot_partitions_flags_the_overloaded_partition_and_key_not_a_uniform_topic(
    spark: object, bootstrap: str
) -> None:
    suffix = time.monotonic_ns() % 10**8
    skewed, uniform = f"spark-skew-{suffix}", f"spark-even-{suffix}"
    create_topic(bootstrap, skewed, 6)
    create_topic(bootstrap, uniform, 6)
    records = []
    for i in range(3000):
        if i % 10 < 7:  # 70% of records: one key, all on partition 3
            records.append((skewed, 3, b"user-42", b"x" * 100))
        else:
            records.append((skewed, i % 6, f"user-{i}".encode(), b"x" * 100))
        records.append((uniform, i % 6, f"user-{i % 500}".encode(), b"y" * 100))
    produce(bootstrap, records)
    steps: list[tuple[float, str]] = []

    out = run_job(
        "hot-partitions",
        spark,  # type: ignore[arg-type]
        bootstrap_servers=bootstrap,
        topics=[skewed, uniform],
        progress=lambda f, m: steps.append((f, m)),
    )
    json_ready(out.summary)
    json_ready(out.data)
    assert steps[-1][0] == 1.0 and [f for f, _ in steps] == sorted(f for f, _ in steps)
    hot = [(h["topic"], h["partition"]) for h in out.summary["hot_partitions"]]
    assert hot == [(skewed, 3)]
    on_three = sum(1 for t, p, *_ in records if t == skewed and p == 3)
    assert out.summary["hot_partitions"][0]["records"] == on_three
    assert out.summary["hot_partitions"][0]["share"] == pytest.approx(on_three / 3000, abs=1e-6)
    assert [(k["topic"], k["key"]) for k in out.summary["hot_keys"]] == [(skewed, "user-42")]
    advice = " ".join(out.summary["advice"])
    assert "Salt" in advice and "compound key" in advice and "partitions" in advice
    by_topic = {t["topic"]: t for t in out.summary["topics"]}
    assert by_topic[uniform]["hot_partitions"] == [] and by_topic[uniform]["hot_keys"] == []
    assert by_topic[uniform]["skew"] == pytest.approx(1.0)
    bars = out.data["partitions"][skewed]
    assert bars["partition"] == [0, 1, 2, 3, 4, 5]
    assert sum(bars["records"]) == 3000 and bars["hot"] == [False, False, False, True, False, False]
    assert out.data["keys"][skewed]["key"][0] == "user-42"
    assert any(c["data"][0]["type"] == "bar" for c in out.data["charts"])


def test_traffic_counts_records_and_bytes_per_minute(
    spark: object, bootstrap: str, topic_name: str
) -> None:
    create_topic(bootstrap, topic_name, 2)
    minute = (int(time.time()) // 60 - 10) * 60_000  # ten minutes ago, on a minute boundary
    records = [(topic_name, i % 2, b"k", b"v" * 9, minute + i * 100) for i in range(10)]
    records += [(topic_name, 1, None, b"w" * 20, minute + 120_000 + i) for i in range(25)]
    produce(bootstrap, records)

    out = run_job("traffic", spark, bootstrap_servers=bootstrap, topics=[topic_name])  # type: ignore[arg-type]
    json_ready(out.summary)
    json_ready(out.data)
    (summary,) = out.summary["per_topic"]
    assert (summary["records"], summary["bytes"]) == (35, 10 * 10 + 25 * 20)
    series = out.data["per_topic"][topic_name]
    assert series["records"] == [10, 0, 25]  # the quiet minute is there, as zero
    assert series["bytes"] == [100, 0, 500]
    assert summary["peak_records_per_minute"] == 25
    assert summary["avg_records_per_minute"] == pytest.approx(35 / 3, abs=0.001)
    assert out.data["per_partition"][topic_name]["0"]["records"] == [5, 0, 0]
    assert out.data["per_partition"][topic_name]["1"]["records"] == [5, 0, 25]
    assert out.rows == 3  # (partition, minute) cells that had records


def test_record_sizes_reports_nearest_rank_percentiles_and_histogram(
    spark: object, bootstrap: str, topic_name: str
) -> None:
    create_topic(bootstrap, topic_name, 3)
    sizes = list(range(1, 201))
    produce(bootstrap, ((topic_name, s % 3, None, b"z" * s) for s in sizes))

    out = run_job("record-sizes", spark, bootstrap_servers=bootstrap, topics=[topic_name])  # type: ignore[arg-type]
    json_ready(out.summary)
    json_ready(out.data)
    (stats,) = out.summary["topics"]

    def rank(q: float) -> int:
        return sizes[math.ceil(q * len(sizes)) - 1]

    assert (stats["p50"], stats["p90"], stats["p99"], stats["max"]) == (
        rank(0.5),
        rank(0.9),
        rank(0.99),
        200,
    )
    assert (stats["records"], stats["bytes"], stats["min"]) == (200, sum(sizes), 1)
    histogram = out.data["histograms"][topic_name]
    assert histogram["lower_bytes"] == [0, 64, 128]
    assert histogram["records"] == [63, 64, 73]  # 1..63, 64..127, 128..200


def test_lag_trends_flags_a_group_whose_lag_grows(spark: object) -> None:
    start = 1_700_000_000_000
    samples = []
    for i in range(12):
        at = start + i * 60_000
        for p in range(3):
            samples.append(  # falls behind by 30 records a minute
                {
                    "group": "slow",
                    "topic": "orders",
                    "partition": p,
                    "at_ms": at,
                    "lag": 10 * i + p,
                    "lag_seconds": float(i),
                }
            )
            samples.append(  # steady around 50 per partition, with noise
                {
                    "group": "steady",
                    "topic": "orders",
                    "partition": p,
                    "at_ms": at,
                    "lag": 50 + (i % 3) - 1,
                    "lag_seconds": 0.5,
                }
            )
            samples.append(  # catching up
                {
                    "group": "draining",
                    "topic": "orders",
                    "partition": p,
                    "at_ms": at,
                    "lag": 500 - 40 * i,
                    "lag_seconds": 2.0,
                }
            )

    out = run_job(
        "lag-trends",
        spark,  # type: ignore[arg-type]
        bootstrap_servers="unused:1",
        lag_samples=samples,
    )
    json_ready(out.summary)
    json_ready(out.data)
    groups = {g["group"]: g for g in out.summary["groups"]}
    assert [g["group"] for g in out.summary["growing"]] == ["slow"]
    assert groups["slow"]["slope_per_hour"] == pytest.approx(30 * 60)
    assert groups["slow"]["last_lag"] == 3 * 110 + 3 and groups["slow"]["partitions"] == 3
    assert not groups["steady"]["growing"] and not groups["draining"]["growing"]
    assert groups["draining"]["slope_per_hour"] == pytest.approx(-3 * 40 * 60)
    assert out.data["series"]["slow"]["orders"]["lag"][:2] == [3, 33]
    assert out.rows == 3 * 12
    since = run_job(
        "lag-trends",
        spark,  # type: ignore[arg-type]
        bootstrap_servers="unused:1",
        lag_samples=samples,
        since_ms=start + 6 * 60_000,
    )
    assert {g["samples"] for g in since.summary["groups"]} == {6}

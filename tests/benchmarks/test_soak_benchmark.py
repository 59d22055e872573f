"""Smoke test of ``python -m benchmarks.soak``: a short run of every churn workload.

Nothing about speed or flatness is asserted here (that is what the 30-minute run in
docs/benchmarks.md is for); what is checked is that each workload really churned against the
broker, that the broker's own gauges were sampled, and that expired producer ids are bounded
by ``producer.id.expiration.ms`` (ids of producers that stopped are forgotten).
"""

from __future__ import annotations

from pathlib import Path

from benchmarks.soak import SoakSettings, producer_id_bound
from tests.benchmarks.runner import run_benchmark_json


def test_soak_benchmark_churns_every_workload_and_samples_the_broker(tmp_path: Path) -> None:
    # Exit status 1 is a verdict (not flat), which a run this short may well give.
    result = run_benchmark_json(
        "soak",
        tmp_path,
        *("--duration", "24", "--warmup", "8", "--sample-interval", "4"),
        *("--producer-id-expiration-ms", "4000", "--topic-interval", "6"),
        exit_codes=(0, 1),
        reports=["verdict:"],
    )
    counters = result["counters"]
    for workload in ("producers", "connections", "group_members", "topics", "steady_records"):
        assert counters[workload] > 0, workload
    samples = result["samples"]
    assert len(samples) >= 5
    sampled = samples[1:]
    assert all(s["asyncio_tasks"] and s["asyncio_tasks"] > 0 for s in sampled)
    assert all(s["rss_bytes"] > 0 and s["open_fds"] > 0 for s in sampled)
    # Far more producers ran than the broker remembers at the end: expiration forgets them.
    assert counters["producers"] > samples[-1]["producer_ids"]
    assert result["peak_producer_ids"] <= result["producer_id_bound"]


def test_producer_id_bound_follows_the_expiration_window() -> None:
    short = SoakSettings(producer_rate=2.0, producer_id_expiration_ms=10_000)
    long = SoakSettings(producer_rate=2.0, producer_id_expiration_ms=100_000)
    assert producer_id_bound(short) < producer_id_bound(long)
    # 2/s over 10 s + a 10 s check interval is 40 producers, plus the steady one, +20 %.
    assert producer_id_bound(short) == int((2.0 * 20 + 1) * 1.2) + 1

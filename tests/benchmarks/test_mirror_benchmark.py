"""Smoke test of ``python -m benchmarks.mirror``: a tiny run of both copiers.

It starts two Weir clusters and a ``manage.py mirror-maker`` process because that is what
the benchmark measures. Nothing about speed is asserted; what is checked is that both
copiers copied the whole backlog, that every steady record (read back directly, and through
each copier) arrived once with a lag from its timestamp, that the report names the ratios,
and that the mirror-maker stopped cleanly on SIGTERM.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.runner import run_benchmark_json

RECORDS = 2000
RATE = 200
DURATION = 2.0


def test_mirror_benchmark_runs_both_copiers(tmp_path: Path) -> None:
    payload = run_benchmark_json(
        "mirror",
        tmp_path,
        *("--records", str(RECORDS), "--partitions", "2", "--size", "256"),
        *("--rates", str(RATE), "--duration", str(DURATION), "--warmup", "1"),
        *("--timeout", "120"),
        reports=["mirror/plain catch-up MB/s:", f"mirror/plain lag p99 at {RATE}/s:"],
    )
    assert [c["copier"] for c in payload["catch_up"]] == ["mirror", "plain"]
    for catch_up in payload["catch_up"]:
        assert catch_up["records"] == RECORDS, catch_up["copier"]
        assert catch_up["mb_per_s"] > 0, catch_up["copier"]
    assert [s["copier"] for s in payload["steady"]] == ["direct", "mirror", "plain"]
    for steady in payload["steady"]:
        assert steady["measured"] == steady["expected"] == RATE * DURATION, steady["copier"]
        assert steady["duplicates"] == 0, steady["copier"]
        assert 0 <= steady["p50_ms"] <= steady["p99_ms"] <= steady["max_ms"], steady["copier"]
    assert payload["mirror_exit"] == 0

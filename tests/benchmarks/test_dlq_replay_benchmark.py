"""Smoke test of ``python -m benchmarks.dlq_replay``: a tiny run of both copiers.

It starts a Weir broker and runs ``manage.py dlq replay`` as a process because that is what
the benchmark measures. Nothing about speed is asserted; what is checked is that both
copiers put every dead letter back, each in the original partition its headers name, that
the command reported every record replayed, and that the report names the ratio.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.runner import run_benchmark_json

RECORDS = 2000


def test_dlq_replay_benchmark_copies_every_dead_letter_both_ways(tmp_path: Path) -> None:
    payload = run_benchmark_json(
        "dlq_replay",
        tmp_path,
        *("--records", str(RECORDS), "--partitions", "2", "--size", "256", "--timeout", "60"),
        reports=["weir/plain records/s (replay vs loop):", "every record, each in its original"],
    )
    assert [c["copier"] for c in payload["copies"]] == ["weir", "plain"]
    expected = [667, 667, 666]  # dead letter i names original partition i % 3
    for copy in payload["copies"]:
        assert copy["records"] == RECORDS, copy["copier"]
        assert copy["per_partition"] == expected, copy["copier"]
        assert copy["reported"] == RECORDS, copy["copier"]
        assert copy["complete"] is True, copy["copier"]
        assert copy["records_per_s"] > 0 and copy["mb_per_s"] > 0, copy["copier"]
    assert payload["copies"][0]["exit_status"] == 0
    assert payload["copies"][0]["plan_seconds"] < payload["copies"][0]["seconds"]
    assert payload["ratio_records_per_s"] > 0

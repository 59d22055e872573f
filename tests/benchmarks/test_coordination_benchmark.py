"""Smoke test of ``python -m benchmarks.coordination``: a tiny run on both peers and one
primary kill.

Nothing about speed is asserted; what is checked is that both peers made every write, that
the report names the ratio, and that the write confirmed before the kill survived it.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.runner import run_benchmark_json

WRITES = 50


def test_coordination_benchmark_times_both_peers_and_a_failover(tmp_path: Path) -> None:
    payload = run_benchmark_json(
        "coordination",
        tmp_path,
        *("--writes", str(WRITES), "--failovers", "1"),
        reports=["sentinel/single p50:", "failover 1: no confirmed write for"],
    )
    assert payload["single"]["writes"] == payload["sentinel"]["writes"] == WRITES
    (failover,) = payload["failovers"]
    assert failover["last_confirmed_before_kill"] == 50
    assert failover["held_after"] >= failover["last_confirmed_before_kill"]
    assert failover["gap_s"] > 0

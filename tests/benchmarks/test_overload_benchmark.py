"""Smoke test of ``python -m benchmarks.overload``: a few seconds per phase, small floods.

The figures are not checked (nothing about speed is asserted); what is checked is that every
phase ran in both modes, the well-behaved producers delivered every record, and the JSON
has the fields docs/benchmarks.md reads: latency per acks, the p99 ratios, the flood's rate
and throttling, the connection flood's counts.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.runner import run_benchmark_json

RATE, DURATION = 200, 1


def test_overload_benchmark_runs_every_phase(tmp_path: Path) -> None:
    payload = run_benchmark_json(
        "overload",
        tmp_path,
        *("--rate", str(RATE), "--duration", str(DURATION), "--warmup", "0.5"),
        *("--max-connections", "20", "--extra-connections", "5", "--connect-rate", "10"),
        *("--flood-procs", "1", "--raw-flooders", "1", "--flood-size", "1000"),
        reports=["p99 produce flood / unloaded (quota), acks=all", "connection flood:"],
    )
    phases = [(p["phase"], p["quota"]) for p in payload["phases"]]
    assert phases == [
        ("unloaded", True),
        ("produce flood", True),
        ("connection flood", True),
        ("unloaded", False),
        ("produce flood", False),
    ]
    for phase in payload["phases"]:
        assert [f["acks"] for f in phase["latency"]] == ["1", "all"]
        for figures in phase["latency"]:
            assert figures["measured"] == RATE * DURATION and figures["failed"] == 0
        if phase["phase"] != "unloaded":
            assert set(phase["ratios"]) == {"1", "all"}
    flood = payload["phases"][1]["flood"]
    assert flood["quota"] == payload["settings"]["flood_quota"] and flood["raw_requests"] > 0
    assert payload["phases"][4]["flood"]["quota"] is None
    connections = payload["phases"][2]["connections"]
    assert connections["held"] == 25 and 0 < connections["held_served"] <= 20

"""Smoke test of ``python -m benchmarks.security``: a tiny run through every listener.

The figures are not checked (nothing about speed is asserted); what is checked is that each
listener (PLAINTEXT, SSL with a required client certificate, SASL_SSL with SCRAM-SHA-512)
delivered and read back every record, and that the report names the ratios.
"""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.runner import run_benchmark_json

RECORDS = 300


def test_security_benchmark_runs_every_listener(tmp_path: Path) -> None:
    payload = run_benchmark_json(
        "security",
        tmp_path,
        *("--records", str(RECORDS), "--size", "256", "--runs", "1", "--client-auth"),
        *("--timeout", "60"),
        reports=["SSL/PLAINTEXT produce:", "SASL_SSL/PLAINTEXT consume:"],
    )
    assert payload["client_auth"] is True
    assert [entry["listener"] for entry in payload["listeners"]] == [
        "PLAINTEXT",
        "SSL",
        "SASL_SSL",
    ]
    for entry in payload["listeners"]:
        (run,) = entry["runs"]
        assert run["produce"]["records"] == RECORDS, entry["listener"]
        assert run["produce"]["failed"] == 0, entry["listener"]
        assert run["consume"]["records"] == RECORDS, entry["listener"]
        assert run["consume"]["bytes"] == RECORDS * 256, entry["listener"]

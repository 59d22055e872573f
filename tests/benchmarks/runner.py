"""Run a benchmark module as its users do (``python -m benchmarks.<name>``) from the repo root.

The smoke tests check a benchmark's figures through its ``--json`` file (what
docs/benchmarks.md reads) and its report on stdout; :func:`run_benchmark_json` runs it with
``--json`` into the test's temporary directory, checks the report's lines and returns the
JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_benchmark(
    module: str, *argv: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{module}", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_benchmark_json(
    module: str,
    tmp_path: Path,
    *argv: str,
    reports: Collection[str],
    exit_codes: Collection[int] = (0,),
) -> dict[str, Any]:
    """Run ``module`` with ``argv`` and ``--json``; the JSON it wrote. An exit status outside
    ``exit_codes`` fails the test with the end of stderr, and so does a report without one of
    the texts in ``reports`` (the lines docs/benchmarks.md quotes)."""
    out = tmp_path / f"{module}.json"
    completed = run_benchmark(module, *argv, "--json", str(out))
    assert completed.returncode in exit_codes, completed.stderr[-3000:]
    for text in reports:
        assert text in completed.stdout, f"{text!r} not in the report:\n{completed.stdout}"
    return json.loads(out.read_text())

"""The layer walk and the leftovers scan, on sample code and a real child process."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import uuid

import pytest

from tests.suite.children import die_with_parent
from tests.suite.layers import CodeWalk
from tests.suite.leftovers import RUN_MARKER, _marked_processes


@pytest.mark.parametrize(
    ("name", "layers"),
    [
        ("spawns", {"processes"}),
        ("calls_a_helper_that_spawns", {"processes"}),
        ("builds_a_starter", {"processes"}),
        ("nested_closure_spawns", {"processes"}),
        ("starts_redis", {"redis"}),
        ("pure", set()),
    ],
)
def test_code_walk_finds_what_test_code_starts(name: str, layers: set[str]) -> None:
    samples = importlib.import_module("tests.suite.layer_samples")
    assert CodeWalk().layers(getattr(samples, name)) == layers


def test_the_leftovers_scan_finds_a_process_by_the_run_marker() -> None:
    marker = uuid.uuid4().hex
    env = dict(os.environ, **{RUN_MARKER: marker})
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env=env,
        preexec_fn=die_with_parent(),
    )
    try:
        found = _marked_processes(marker)
        assert list(found) == [child.pid]
        assert "time.sleep(60)" in found[child.pid]
        assert _marked_processes(uuid.uuid4().hex) == {}
    finally:
        child.kill()
        child.wait()
    assert _marked_processes(marker) == {}

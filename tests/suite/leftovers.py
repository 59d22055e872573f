"""Leave nothing behind: every process and temporary file a test run makes is gone at its end.

Theory of operation
-------------------
At the start of a run the controlling pytest process (the xdist controller, or the only
process without xdist) sets ``WEIR_TEST_RUN=<uuid>`` in its environment and points
``TMPDIR`` at a directory of the run's own, ``$TMPDIR/weir-test-<uuid>``. Workers, brokers,
redis-servers, daphne, Celery, chromium and Spark inherit both, so every process the run
starts carries the marker and every temporary file made the usual way (``tempfile``,
``tmp_path``, pytest's ``basetemp``) lands under the run's directory.

When the run ends (after the xdist workers have exited, also after failures, timeouts or
Ctrl-C), the controller scans ``/proc/*/environ`` for the marker: whatever still runs after
a short grace (for children on their way out with their parent) was left behind by a test or
fixture. It is killed, named, and the run fails. Likewise any entry of
the run's directory outside pytest's own ``basetemp`` is a temporary file or directory some
test or child made and did not remove: it is named and the run fails. Then the whole
directory is removed (pytest's ``basetemp`` with it; pass ``--basetemp=DIR`` to keep a run's
files for a post-mortem).

Processes started from a scrubbed environment (``env={...}`` without ``os.environ``) escape
the scan; ``tests.suite.children.die_with_parent`` still ties them to their parent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

RUN_MARKER = "WEIR_TEST_RUN"
# How long the controller waits for its xdist workers to exit before it scans.
WORKER_EXIT_WAIT_S = 30.0
# How long processes of the run may take to end by themselves once the workers are gone.
EXIT_GRACE_S = 10.0
_REPORT = pytest.StashKey["LeftBehind"]()


@dataclass(slots=True)
class LeftBehind:
    """What a run left behind (filled in at its end)."""

    marker: str
    run_dir: Path
    processes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _is_controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not _is_controller(config):
        return  # a worker inherits the controller's marker and TMPDIR
    marker = uuid.uuid4().hex
    run_dir = Path(tempfile.gettempdir()) / f"weir-test-{marker}"
    run_dir.mkdir(mode=0o700)
    os.environ[RUN_MARKER] = marker
    os.environ["TMPDIR"] = str(run_dir)
    tempfile.tempdir = str(run_dir)
    config.stash[_REPORT] = LeftBehind(marker=marker, run_dir=run_dir)


def _marked_processes(marker: str) -> dict[int, str]:
    """pid → command line of every other process whose environment carries ``marker``."""
    needle = f"{RUN_MARKER}={marker}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or a zombie
            continue
        found[int(entry.name)] = cmdline.strip()[:300]
    return found


def _children() -> set[int]:
    """Pids of this process's live children (in the xdist controller: its workers)."""
    me = str(os.getpid())
    children = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if fields[1] == me and fields[0] != "Z":
                children.add(int(entry.name))
    return children


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        for pid in pids:  # reap our own (a Popen nobody waited for)
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)


def _pytest_temproot(config: pytest.Config, run_dir: Path) -> Path | None:
    """The run directory's entry that holds pytest's basetemp (``pytest-of-<user>``)."""
    basetemp = config._tmp_path_factory._basetemp  # type: ignore[attr-defined]
    if basetemp is None:
        return None
    with contextlib.suppress(ValueError):
        return run_dir / Path(basetemp).resolve().relative_to(run_dir.resolve()).parts[0]
    return None


# After xdist's own sessionfinish, which shuts the workers down.
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    report = config.stash.get(_REPORT, None)
    if report is None:
        return
    if config.pluginmanager.has_plugin("dsession"):  # this is the xdist controller
        deadline = time.monotonic() + WORKER_EXIT_WAIT_S
        while _children() and time.monotonic() < deadline:
            time.sleep(0.1)
    # Children of a worker that just exited may still be on their way out (the Spark JVM
    # ends when its parent's pipe closes): what outlives the grace period was left behind.
    deadline = time.monotonic() + EXIT_GRACE_S
    while (left := _marked_processes(report.marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        _kill(sorted(left))
        report.processes = [f"pid {pid}: {cmd}" for pid, cmd in sorted(left.items())]

    keep = _pytest_temproot(config, report.run_dir)
    if report.run_dir.exists():
        report.files = sorted(str(p) for p in report.run_dir.iterdir() if p != keep)
        shutil.rmtree(report.run_dir, ignore_errors=True)
    if (report.processes or report.files) and session.exitstatus in (
        pytest.ExitCode.OK,
        pytest.ExitCode.NO_TESTS_COLLECTED,
    ):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    report = terminalreporter.config.stash.get(_REPORT, None)
    if report is None or not (report.processes or report.files):
        return
    terminalreporter.section("left behind", sep="=", red=True, bold=True)
    for found, what in (
        (report.processes, "process(es) started by this run were still running (now killed)"),
        (
            report.files,
            "temporary file(s) or directory(ies) made outside pytest's basetemp were not "
            "removed (now removed)",
        ),
    ):
        if found:
            terminalreporter.write_line(f"{len(found)} {what}:", red=True)
            for line in found:
                terminalreporter.write_line(f"  {line}")

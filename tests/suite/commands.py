"""``manage.py`` commands for tests: in the test process, or as the real command line.

Why in process
--------------
A ``manage.py`` subprocess costs one to five seconds before the command does anything (the
interpreter, Django and the control plane's imports), and the CLI tests ran dozens each.
:func:`manage` runs the command the way ``manage.py`` does once Django is set up -- the
command's ``run_from_argv`` with the same argv, so the same parser, system checks, error
handling (``CommandError`` printed as one line, exit status 1; argparse errors exit 2) -- in
the test process, with its standard output and error captured. What it returns has the shape
of :class:`subprocess.CompletedProcess` (``returncode``, ``stdout``, ``stderr``).

What only a process proves -- ``manage.py``'s own dispatch, Django set up from the
environment, the process's exit status and that nothing crashes on the way out -- is checked
by a few tests per tool with :func:`manage_process`, which runs ``manage.py`` as an operator
does (and ``runbroker``, which is no Django command, always runs as a process).

Process-wide state
------------------
The command sees the test process's Django settings; ``settings=`` overrides some for the
call, as a process would read them from its ``WEIR_*`` environment (e.g. ``WEIR_REDIS_URL``).
``WEIR_BOOTSTRAP_SERVERS`` is hidden from it, as from the subprocess, so a command only talks
to the ``--bootstrap-server`` it is given. Cluster gateways the command opened
(``controlplane.cluster.gateway()``: a thread and connections each) are closed when it
returns, where a process would drop them at exit.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
# Hidden from the commands: the tests name the brokers with --bootstrap-server.
HIDDEN_ENV = ("WEIR_BOOTSTRAP_SERVERS",)


@dataclass(frozen=True, slots=True)
class Completed:
    """A finished command: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def manage(*argv: str, settings: Mapping[str, Any] | None = None) -> Completed:
    """``manage.py ARGV`` run in this process (see the module's docstring)."""
    from django.core.management import get_commands, load_command_class
    from django.test import override_settings

    name = argv[0]
    stdout, stderr = io.StringIO(), io.StringIO()
    returncode = 0
    with (
        _environ_without(HIDDEN_ENV),
        override_settings(**(settings or {})),
        _closing_new_gateways(),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        # Built inside the redirection: a command binds sys.stdout/stderr when created.
        command = load_command_class(get_commands()[name], name)
        try:
            command.run_from_argv(["manage.py", *argv])
        except SystemExit as exit_:
            returncode = _exit_status(exit_.code)
            if returncode and not isinstance(exit_.code, int):
                print(exit_.code, file=sys.stderr)  # as the interpreter prints sys.exit("...")
    return Completed(returncode, stdout.getvalue(), stderr.getvalue())


def manage_process(
    *argv: str, env: Mapping[str, str] | None = None, timeout: float = 90
) -> Completed:
    """``python manage.py ARGV`` as a child process, with ``env`` added to this one's."""
    environ = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *argv],
        cwd=ROOT,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Completed(done.returncode, done.stdout, done.stderr)


def succeeded(done: Completed) -> str:
    """The standard output of a command that must succeed."""
    assert done.returncode == 0, done.stderr
    return done.stdout


def failed_cleanly(done: Completed) -> str:
    """The standard error of a command that must fail with a message, not a traceback."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def _exit_status(code: object) -> int:
    """The status ``sys.exit(code)`` gives a process: None is 0, a message is 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


@contextlib.contextmanager
def _environ_without(names: tuple[str, ...]) -> Iterator[None]:
    with mock.patch.dict(os.environ):
        for name in names:
            os.environ.pop(name, None)
        yield


@contextlib.contextmanager
def _closing_new_gateways() -> Iterator[None]:
    from controlplane import cluster

    before = set(cluster._gateways)
    try:
        yield
    finally:
        with cluster._gateways_lock:
            opened = [cluster._gateways.pop(key) for key in set(cluster._gateways) - before]
        for gateway in opened:
            gateway.close()

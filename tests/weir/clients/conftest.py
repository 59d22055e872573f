"""Brokers for the client compatibility tests: in-process ones, and real processes.

``broker`` (per test) and ``module_broker`` (per module; tests isolate by topic name) are
in-process brokers on a loop thread (``tests/weir/inprocess.py``): real listeners, logs and
Redis, no process start. ``start_broker`` starts real ``runbroker`` subprocesses on free
loopback ports, for what only a process shows (kill -9, restarts after a crash, flag checks);
each has its own data directory and a unique ``WEIR_CLUSTER_ID`` on the suite's Redis.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.suite.children import die_with_parent
from tests.weir.inprocess import ThreadedBroker

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# eq=False: a broker is itself (hashable by identity), not equal to another with its settings.
@dataclass(kw_only=True, eq=False)
class BrokerProcess:
    """A ``manage.py runbroker`` child process that tests can stop, kill and restart."""

    broker_id: int
    data_dir: Path
    redis_url: str
    cluster_id: str
    configs: list[str]
    log_path: Path
    port: int = field(default_factory=free_port, init=False)  # kept across restarts
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)
    # RLIMIT_FSIZE of the next start (a disk that refuses to grow files past it: EFBIG).
    file_size_limit: int | None = field(default=None, init=False)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        """Start the process and wait until it listens."""
        self.spawn()
        self.wait_listening(timeout)

    def spawn(self) -> None:
        """Start the process without waiting (``wait_listening`` waits): a cluster spawns its
        brokers side by side, so their interpreters start at the same time."""
        argv = [
            sys.executable,
            str(ROOT / "manage.py"),
            "runbroker",
            "--broker-id",
            str(self.broker_id),
            "--listen",
            self.bootstrap,
            "--data-dir",
            str(self.data_dir),
        ]
        for config in self.configs:
            argv += ["--config", config]
        env = dict(os.environ, WEIR_REDIS_URL=self.redis_url, WEIR_CLUSTER_ID=self.cluster_id)
        log = self.log_path.open("ab")
        # Killed with this test process if it dies before its fixtures could stop the broker.
        self.proc = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=log, stderr=log, preexec_fn=self._preexec()
        )
        log.close()

    def _preexec(self) -> Callable[[], None]:
        die = die_with_parent()
        limit = self.file_size_limit
        if limit is None:
            return die

        def preexec() -> None:
            die()
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        return preexec

    def wait_listening(self, timeout: float = 30.0) -> None:
        assert self.proc is not None, "spawn() first"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited early:\n{self.log_path.read_text()[-3000:]}")
            with socket.socket() as sock:
                sock.settimeout(0.2)
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"broker did not listen in {timeout}s:\n{self.log_path.read_text()}")

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def start_broker(redis_server: str, cluster_id: str, tmp_path: Path) -> Iterator[object]:
    """Factory: ``start_broker(broker_id=1, configs=[...])`` → a running BrokerProcess."""
    started: list[BrokerProcess] = []

    def factory(broker_id: int = 1, configs: list[str] | None = None) -> BrokerProcess:
        broker = BrokerProcess(
            broker_id=broker_id,
            data_dir=tmp_path / f"broker-{broker_id}",
            redis_url=redis_server,
            cluster_id=cluster_id,
            configs=configs or [],
            log_path=tmp_path / f"broker-{broker_id}.log",
        )
        broker.start()
        started.append(broker)
        return broker

    yield factory
    for broker in started:
        broker.stop()


@pytest.fixture
def broker(inprocess_broker: ThreadedBroker) -> ThreadedBroker:
    """One running in-process broker with default configs, for this test."""
    return inprocess_broker


@contextlib.contextmanager
def running_broker(
    redis_url: str, directory: Path, configs: list[str] | None = None
) -> Iterator[BrokerProcess]:
    """One broker with its own cluster id, started for the ``with`` block."""
    broker = BrokerProcess(
        broker_id=1,
        data_dir=directory / "broker-1",
        redis_url=redis_url,
        cluster_id=f"test-{uuid.uuid4().hex[:12]}",
        configs=configs or [],
        log_path=directory / "broker-1.log",
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def module_broker(module_inprocess_broker: ThreadedBroker) -> ThreadedBroker:
    """One in-process broker shared by a whole test module (tests isolate by topic name)."""
    return module_inprocess_broker

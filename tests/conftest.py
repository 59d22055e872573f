"""Suite-wide fixtures: a private ``redis-server`` and a unique cluster id per test.

Tests never touch a Redis on the default port: ``redis_server`` starts its own
``redis-server --port <free port> --save '' --appendonly no`` in a temporary directory for the
whole session and yields its URL. Tests share it and isolate by key prefix through
``cluster_id`` (every Weir key lives under ``weir:{cluster_id}:``).

Tests that need to stop and restart Redis itself use ``make_redis_server`` for a server of
their own, so they never disturb the shared one. Under xdist each worker has its own server.
Every ``redis-server`` dies with the test process that started it (``die_with_parent``).

The plugins in ``tests/suite`` run the suite: layer markers and xdist groups derived from the
fixtures, and the end-of-run check that no process or temporary file is left behind
(docs/testing.md).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.suite.children import die_with_parent

if TYPE_CHECKING:
    from tests.sentinel import SentinelDeployment

pytest_plugins = [
    # How the suite runs: layer markers and xdist groups, and the end-of-run leftovers check.
    "tests.suite.layers",
    "tests.suite.leftovers",
    # Control-plane fixtures (cp_cluster, users of each role) for tests/controlplane and
    # tests/frontend.
    "tests.controlplane_fixtures",
]

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A ``redis-server`` child process on a fixed port that tests can stop and restart.

    Data survives a restart only if the test saves it first (``SAVE``): the server runs
    with ``--save ''`` and loads ``dump.rdb`` from its directory when it starts.
    """

    # How the server persists: RDB snapshots only when a test asks (``SAVE``).
    persistence: tuple[str, ...] = ("--appendonly", "no", "--dbfilename", "dump.rdb")

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "redis.log").open("ab")
        self.proc = subprocess.Popen(
            [
                REDIS_SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--dir",
                str(self.directory),
                *self.persistence,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent(),
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                text = (self.directory / "redis.log").read_text(errors="replace")
                raise RuntimeError(f"redis-server exited early:\n{text[-2000:]}")
            if _ping(self.port):
                return
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer on port {self.port} in {timeout}s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def restart(self) -> None:
        self.stop()
        self.start()


def _start(directory: Path) -> RedisServer:
    for _ in range(5):  # the free port may be taken between probing and binding
        server = RedisServer(directory)
        try:
            server.start()
            return server
        except RuntimeError:
            server.stop()
    raise RuntimeError("could not start redis-server")


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL of the suite's private redis-server (shared; isolate with ``cluster_id``)."""
    server = _start(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def cluster_id() -> str:
    """A cluster id no other test uses, so keys never collide on the shared server."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_redis_server(tmp_path: Path) -> Iterator[Callable[[], RedisServer]]:
    """Factory for a redis-server of the test's own (to stop and restart); all are killed."""
    servers: list[RedisServer] = []

    def factory() -> RedisServer:
        server = _start(tmp_path / f"redis-{len(servers)}")
        servers.append(server)
        return server

    yield factory
    for server in servers:
        server.stop()


@pytest.fixture
def sentinel_deployment(tmp_path: Path) -> Iterator[SentinelDeployment]:
    """Three redis-servers and three sentinels of this test's own (``tests/sentinel.py``):
    ``sentinel_deployment.url`` is a ``redis+sentinel://`` WEIR_REDIS_URL."""
    from tests.sentinel import SentinelDeployment

    deployment = SentinelDeployment(tmp_path / "sentinel")
    try:
        deployment.start()
        yield deployment
    finally:
        deployment.stop()

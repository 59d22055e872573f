"""A real Redis Sentinel deployment on loopback: three ``redis-server`` and three sentinels.

``SentinelDeployment`` is what an operator runs for highly available coordination (see
docs/operations.md), with the failure detection shortened for tests: the servers keep an
append-only file fsynced on every write (``appendfsync always``) and refuse writes with no
replica in sync (``min-replicas-to-write 1``, ``min-replicas-max-lag 2``), and the sentinels
(quorum 2) call a primary down after ``DOWN_AFTER_MS``. ``url`` is the ``WEIR_REDIS_URL``
(``redis+sentinel://...``) that names them.

Tests break it the ways Jepsen would: ``kill`` (SIGKILL), ``pause``/``resume`` (SIGSTOP and
SIGCONT, an isolated primary), ``restart`` (from its AOF, same port and directory), and wait
with ``wait_for_failover`` until the sentinels agree on a new primary that accepts writes.
Every process is started with ``die_with_parent`` and stopped by ``stop``.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import redis

from tests.conftest import REDIS_SERVER, RedisServer, _free_port, _ping
from tests.suite.children import die_with_parent

SERVICE = "weir"
DOWN_AFTER_MS = 2000
FAILOVER_TIMEOUT_MS = 4000
QUORUM = 2


class ReplicatedRedisServer(RedisServer):
    """One data node: AOF fsynced on every write, no writes without a replica in sync."""

    persistence = (
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--min-replicas-to-write",
        "1",
        "--min-replicas-max-lag",
        "2",
        # A full resync starts at once (Redis waits 5 s by default to batch replicas), so
        # writes are refused for as short a time as possible after a failover.
        "--repl-diskless-sync-delay",
        "0",
    )

    def __init__(self, directory: Path, port: int | None = None, primary: int = 0) -> None:
        super().__init__(directory, port)
        if primary:
            self.persistence = (*self.persistence, "--replicaof", "127.0.0.1", str(primary))

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2)


class SentinelProcess:
    """One ``redis-server --sentinel`` monitoring the deployment's primary as ``SERVICE``."""

    def __init__(self, directory: Path, primary: int) -> None:
        self.directory = directory
        self.port = _free_port()
        directory.mkdir(parents=True, exist_ok=True)
        # Sentinel rewrites its config file as it learns the deployment.
        (directory / "sentinel.conf").write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {directory}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary} {QUORUM}\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {SERVICE} 2\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.directory / "sentinel.log").open("ab")
        self.proc = subprocess.Popen(
            [REDIS_SERVER, str(self.directory / "sentinel.conf"), "--sentinel"],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent(),
        )
        log.close()
        deadline = time.monotonic() + 10
        while not _ping(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-sentinel did not start:\n{self.log_tail()}")
            time.sleep(0.02)

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)

    def log_tail(self, lines: int = 30) -> str:
        path = self.directory / "sentinel.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class SentinelDeployment:
    """Three data nodes (one primary, two replicas) and three sentinels, all on loopback."""

    def __init__(self, directory: Path) -> None:
        first = ReplicatedRedisServer(directory / "redis-0")
        self.servers = [first]
        self.servers += [
            ReplicatedRedisServer(directory / f"redis-{i}", primary=first.port) for i in (1, 2)
        ]
        self.sentinels = [
            SentinelProcess(directory / f"sentinel-{i}", first.port) for i in range(3)
        ]

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def start(self, timeout: float = 20.0) -> None:
        for server in self.servers:
            server.start()
        for sentinel in self.sentinels:
            sentinel.start()
        self.wait_until(self._settled, timeout, "the deployment to settle")

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for server in self.servers:
            if server.proc is not None and server.proc.poll() is None:
                server.proc.send_signal(signal.SIGCONT)
            server.stop()

    # -- what the sentinels say ------------------------------------------------------------
    def primary_port(self) -> int | None:
        """The primary's port if a majority of sentinels names the same one."""
        votes: dict[int, int] = {}
        for sentinel in self.sentinels:
            try:
                with sentinel.client() as client:
                    address = client.sentinel_get_master_addr_by_name(SERVICE)
            except redis.RedisError:
                continue
            if address:
                votes[int(address[1])] = votes.get(int(address[1]), 0) + 1
        for port, count in votes.items():
            if count >= QUORUM:
                return port
        return None

    def primary(self) -> ReplicatedRedisServer:
        port = self.primary_port()
        for server in self.servers:
            if server.port == port:
                return server
        raise AssertionError(f"no primary agreed by the sentinels ({port})\n{self.describe()}")

    def _settled(self) -> bool:
        """Every sentinel knows the others and both replicas, the primary has them, and it
        takes writes."""
        port = self.primary_port()
        if port is None:
            return False
        try:
            for sentinel in self.sentinels:
                with sentinel.client() as client:
                    master = client.sentinel_master(SERVICE)
                    if int(master["num-other-sentinels"]) < 2 or int(master["num-slaves"]) < 2:
                        return False
            with self.primary().client() as client:
                info = client.info("replication")
                if info["role"] != "master" or int(info["connected_slaves"]) != 2:
                    return False
                # Writes are refused until the replicas count as in sync (min-replicas-*).
                return bool(client.set("weir:sentinel-test:probe", "1"))
        except redis.RedisError:
            return False

    def wait_for_failover(self, old: ReplicatedRedisServer, timeout: float = 20.0) -> None:
        """Until the sentinels agree on a primary other than ``old`` that takes writes."""

        def done() -> bool:
            port = self.primary_port()
            if port is None or port == old.port:
                return False
            try:
                with self.primary().client() as client:
                    return client.info("replication")["role"] == "master" and bool(
                        client.set("weir:sentinel-test:probe", "1")
                    )
            except redis.RedisError:
                return False

        self.wait_until(done, timeout, f"a failover away from port {old.port}")

    def wait_settled(self, timeout: float = 30.0) -> None:
        """Until one primary has both replicas connected again (after a node came back)."""
        self.wait_until(self._settled, timeout, "both replicas connected to one primary")

    # -- faults ----------------------------------------------------------------------------
    def kill(self, server: ReplicatedRedisServer) -> None:
        assert server.proc is not None
        server.proc.kill()
        server.proc.wait(10)

    def pause(self, server: ReplicatedRedisServer) -> None:
        assert server.proc is not None
        server.proc.send_signal(signal.SIGSTOP)

    def resume(self, server: ReplicatedRedisServer) -> None:
        assert server.proc is not None
        server.proc.send_signal(signal.SIGCONT)

    def restart(self, server: ReplicatedRedisServer) -> None:
        """Start a killed server again on its port, from its append-only file."""
        server.start()

    # -- diagnostics -----------------------------------------------------------------------
    def describe(self) -> str:
        lines = []
        for server in self.servers:
            try:
                with server.client() as client:
                    info = client.info("replication")
                lines.append(
                    f"redis :{server.port} {info['role']} offset "
                    f"{info.get('master_repl_offset', info.get('slave_repl_offset'))}"
                )
            except redis.RedisError as exc:
                lines.append(f"redis :{server.port} unreachable ({exc})")
        for sentinel in self.sentinels:
            lines.append(f"sentinel :{sentinel.port}\n{sentinel.log_tail(8)}")
        return "\n".join(lines)

    def wait_until(self, probe: object, timeout: float, what: str) -> None:
        assert callable(probe)
        deadline = time.monotonic() + timeout
        while not probe():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.describe()}")
            time.sleep(0.05)

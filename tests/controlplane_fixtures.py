"""Control-plane fixtures (a pytest plugin): one 3-broker cluster, users, the app served for real.

The control plane is tested the way users meet it: DRF's test client (in process) or a real
ASGI server (daphne) in front of real broker processes and a real Redis. The cluster is shared
by every control-plane test (starting brokers is the slow part), so tests use unique topic and
group names (``unique``). ``cp_cluster`` points Django's ``WEIR_*`` settings at it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from controlplane.cluster import reset_gateways
from tests.suite.children import die_with_parent
from tests.weir.clients.conftest import ROOT, BrokerProcess, free_port
from tests.weir.cluster.conftest import (
    BROKER_IDS,
    FAST_CONFIGS,
    Cluster,
    merge_configs,
)

PASSWORD = "correct-horse-battery"
ROLES = ("viewer", "operator", "admin")
# No control-plane test kills a broker, so the shared cluster detects failures at a pace a
# loaded machine keeps up with (the 3 s sessions of FAST_CONFIGS expired under load and the
# controller then saw one live broker).
CONTROL_PLANE_CONFIGS = [
    "group.initial.rebalance.delay.ms=0",
    "broker.session.timeout.ms=10000",
    "replica.lag.time.max.ms=10000",
]


@pytest.fixture(scope="session")
def cp_cluster(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three brokers (RF 3 by default, racks r1..r3) shared by the control-plane tests."""
    root: Path = tmp_path_factory.mktemp("cp-cluster")
    cluster_id = f"cp-{uuid.uuid4().hex[:10]}"
    configs = merge_configs(FAST_CONFIGS, CONTROL_PLANE_CONFIGS)
    brokers = {
        broker_id: BrokerProcess(
            broker_id=broker_id,
            data_dir=root / f"broker-{broker_id}",
            redis_url=redis_server,
            cluster_id=cluster_id,
            configs=[*configs, f"broker.rack=r{broker_id}"],
            log_path=root / f"broker-{broker_id}.log",
        )
        for broker_id in BROKER_IDS
    }
    cluster = Cluster(brokers, redis_url=redis_server, cluster_id=cluster_id)
    cluster.start_all(30)
    previous = (
        settings.WEIR_REDIS_URL,
        settings.WEIR_CLUSTER_ID,
        settings.WEIR_BOOTSTRAP_SERVERS,
        settings.CHANNEL_LAYERS,
    )
    settings.WEIR_REDIS_URL = redis_server
    settings.WEIR_CLUSTER_ID = cluster_id
    settings.WEIR_BOOTSTRAP_SERVERS = ""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_server], "prefix": f"weir:{cluster_id}:channels"},
        }
    }
    # Jobs queued by in-process API calls go to this Redis and this cluster's queue, where the
    # dashboard fixture's worker (started with the same WEIR_* environment) takes them.
    from controlplane import celery_app

    celery_previous = (celery_app.conf.broker_url, celery_app.conf.task_default_queue)
    celery_app.conf.broker_url = redis_server
    celery_app.conf.result_backend = redis_server
    celery_app.conf.task_default_queue = f"weir-{cluster_id}"
    try:
        yield cluster
    finally:
        from groups.consumer_instances import registry
        from schemaregistry.registry import reset_registries

        registry.close_all()  # REST Proxy v2 consumer instances left by tests
        reset_registries()  # the schema registry's store reads the cluster until closed
        reset_gateways()
        celery_app.conf.broker_url, celery_app.conf.task_default_queue = celery_previous
        celery_app.conf.result_backend = celery_previous[0]
        (
            settings.WEIR_REDIS_URL,
            settings.WEIR_CLUSTER_ID,
            settings.WEIR_BOOTSTRAP_SERVERS,
            settings.CHANNEL_LAYERS,
        ) = previous
        cluster.stop_all()


@pytest.fixture(scope="session", autouse=True)
def fast_password_hashing() -> Iterator[None]:
    """Test users' passwords use a cheap hasher (PBKDF2's rounds cost seconds per test)."""
    previous = settings.PASSWORD_HASHERS
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    yield
    settings.PASSWORD_HASHERS = previous


@pytest.fixture
def unique() -> Callable[[str], str]:
    """``unique("orders")`` → a topic or group name no other test uses."""
    return lambda prefix: f"{prefix}-{uuid.uuid4().hex[:8]}"


def basic(username: str, password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


@pytest.fixture
def make_user(db: None) -> Callable[[str, str], object]:
    """``make_user("alice", "operator")`` → a user with that role and password ``PASSWORD``."""
    from controlplane.services import user_create

    def factory(username: str, role: str) -> object:
        return user_create(username=username, password=PASSWORD, role=role)

    return factory


def _client(make_user: Callable[[str, str], object], role: str) -> APIClient:
    make_user(f"{role}-user", role)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=basic(f"{role}-user"))
    return client


@pytest.fixture
def viewer(make_user: Callable[[str, str], object]) -> APIClient:
    return _client(make_user, "viewer")


@pytest.fixture
def operator(make_user: Callable[[str, str], object]) -> APIClient:
    return _client(make_user, "operator")


@pytest.fixture
def admin(make_user: Callable[[str, str], object]) -> APIClient:
    return _client(make_user, "admin")


@pytest.fixture
def anonymous() -> APIClient:
    return APIClient()


# the control plane served for real -------------------------------------------------------


_DASHBOARD_PROCESSES = ("daphne", "monitor", "worker", "beat")


@dataclass
class Dashboard:
    url: str
    env: dict[str, str]
    logs: Path
    states: dict[str, Any] = field(default_factory=dict)
    processes: tuple[str, ...] = _DASHBOARD_PROCESSES

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.stdout

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {name}\n" + (self.logs / f"{name}.log").read_text()[-3000:]
            for name in self.processes
        )


def _wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {timeout}s")


@pytest.fixture(scope="session")
def dashboard(cp_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """daphne, the monitor and Celery's worker and beat on loopback, users
    ``viewer``/``operator``/``admin``."""
    with serve_control_plane(
        tmp_path_factory.mktemp("dashboard"),
        redis_url=settings.WEIR_REDIS_URL,
        cluster_id=settings.WEIR_CLUSTER_ID,
    ) as served:
        yield served


@contextlib.contextmanager
def serve_control_plane(
    root: Path,
    *,
    redis_url: str,
    cluster_id: str,
    processes: tuple[str, ...] = _DASHBOARD_PROCESSES,
) -> Iterator[Dashboard]:
    """The control plane's ``processes`` (of daphne, the monitor, Celery's worker and beat)
    on loopback for the cluster ``cluster_id`` at ``redis_url``, with a database of their
    own under ``root`` and users ``viewer``/``operator``/``admin``."""
    root.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ,
        WEIR_REDIS_URL=redis_url,
        WEIR_CLUSTER_ID=cluster_id,
        WEIR_SQLITE_PATH=str(root / "db.sqlite3"),
        DJANGO_SETTINGS_MODULE="controlplane.settings",
        WEIR_LAG_HISTORY_INTERVAL_S="1",
    )
    env.pop("DATABASE_URL", None)
    port = free_port()
    served = Dashboard(url=f"http://127.0.0.1:{port}", env=env, logs=root, processes=processes)
    served.manage("migrate", "--noinput")
    logs = {name: open(root / f"{name}.log", "w") for name in processes}  # noqa: SIM115
    daphne = str(Path(sys.executable).parent / "daphne")
    argvs = {
        "daphne": [daphne, "-b", "127.0.0.1", "-p", str(port), "controlplane.asgi:application"],
        "monitor": [sys.executable, str(ROOT / "manage.py"), "monitor", "--interval", "0.5"],
        **{
            role: [sys.executable, "-m", "celery", "-A", "controlplane", role, "-l", "info"]
            for role in ("worker", "beat")
        },
    }
    children = [
        subprocess.Popen(
            argvs[name],
            cwd=ROOT,
            env=env,
            stdout=logs[name],
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent(),
        )
        for name in processes
    ]
    try:
        # The users are created while daphne and Celery boot (each is a Django start).
        creates = "; ".join(
            f"user_create(username='{role}', password='{PASSWORD}', role='{role}')"
            for role in ROLES
        )
        served.manage("shell", "-c", f"from controlplane.services import user_create; {creates}")
        # daphne boots Django and the app: seconds when quiet, more on a loaded machine.
        if "daphne" in processes:
            _wait_for_port(port, 90)
        yield served
    finally:
        for process in children:
            process.terminate()
        for process in children:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        for log in logs.values():
            log.close()

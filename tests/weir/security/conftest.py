"""A broker with a PLAINTEXT and a SASL_PLAINTEXT listener, and SCRAM users in its Redis.

``sasl_broker`` (one per test module) is an in-process broker (``tests/weir/inprocess.py``)
with the settings of ``runbroker --listen 127.0.0.1:0 --config
listeners=SASL_PLAINTEXT://127.0.0.1:0``; users ``alice`` (SCRAM-SHA-256 and -512) and ``bob``
(SCRAM-SHA-256 only) are written with the same helpers the broker reads them with. What only
a process shows (runbroker's exit on bad listener or TLS configs) stays in the tests that
start ``runbroker`` themselves.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.weir.inprocess import ThreadedBroker, new_cluster_id, threaded_broker
from weir.security.credentials import encode_credential, scram_key
from weir.security.scram import credential_from_password

ROOT = Path(__file__).resolve().parents[3]

USERS = {
    "alice": ("alice-secret", ("SCRAM-SHA-256", "SCRAM-SHA-512")),
    "bob": ("bob-secret", ("SCRAM-SHA-256",)),
}


@dataclass
class SaslBroker:
    broker: ThreadedBroker
    sasl_port: int
    redis_url: str
    cluster_id: str

    @property
    def plaintext(self) -> str:
        return self.broker.bootstrap

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"


def add_user(redis_url: str, cluster_id: str, user: str, password: str, mechanisms: tuple) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        for mechanism in mechanisms:
            credential = credential_from_password(mechanism, password, 4096)
            client.hset(scram_key(cluster_id, mechanism), user, encode_credential(credential))
    finally:
        client.close()


def runbroker_argv(data_dir: Path, *listen: str, configs: Sequence[str] = ()) -> list[str]:
    """``manage.py runbroker`` as broker 1, a ``--listen`` per address, a ``--config`` per
    config: for what only the process shows (its exit on bad listener or TLS settings)."""
    argv = [sys.executable, str(ROOT / "manage.py"), "runbroker", "--broker-id", "1"]
    for address in listen:
        argv += ["--listen", address]
    argv += ["--data-dir", str(data_dir)]
    for config in configs:
        argv += ["--config", config]
    return argv


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


# The authorizer on, ``alice`` the super user who writes topics and ACLs.
AUTHORIZER_CONFIGS = (
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users=User:alice",
)


def sasl_conf(
    bootstrap: str, user: str, mechanism: str = "SCRAM-SHA-256", password: str | None = None
) -> dict[str, Any]:
    """librdkafka settings that log in as ``user`` on a SASL_PLAINTEXT listener, with the
    password ``USERS`` gives the user unless another is asked for."""
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": USERS[user][0] if password is None else password,
    }


@contextmanager
def broker_with_users(
    redis_server: str, directory: Path, configs: list[str]
) -> Iterator[ThreadedBroker]:
    """An in-process broker of a new cluster whose Redis holds the ``USERS``."""
    cluster_id = new_cluster_id()
    for user, (password, mechanisms) in USERS.items():
        add_user(redis_server, cluster_id, user, password, mechanisms)
    with threaded_broker(
        data_dir=directory / "broker-1",
        redis_url=redis_server,
        cluster_id=cluster_id,
        configs=configs,
    ) as broker:
        yield broker


@contextmanager
def running_sasl_broker(
    redis_server: str, directory: Path, extra_configs: tuple[str, ...] = ()
) -> Iterator[SaslBroker]:
    """One broker with a PLAINTEXT and a SASL_PLAINTEXT listener and ``USERS`` in Redis."""
    configs = [
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        # The round trips consume in a group: no 3 s wait for more members (as the TLS
        # broker); what they prove is the login, not the rebalance delay.
        "group.initial.rebalance.delay.ms=0",
        *extra_configs,
    ]
    with broker_with_users(redis_server, directory, configs) as broker:
        sasl_port = broker.listener_port("SASL_PLAINTEXT")
        yield SaslBroker(broker, sasl_port, redis_server, broker.cluster_id)


@pytest.fixture(scope="module")
def sasl_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslBroker]:
    with running_sasl_broker(redis_server, tmp_path_factory.mktemp("sasl-broker")) as broker:
        yield broker


@pytest.fixture(scope="module")
def acl_broker(redis_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    """``sasl_broker`` with the authorizer on (``AUTHORIZER_CONFIGS``)."""
    directory = tmp_path_factory.mktemp("acl-broker")
    with running_sasl_broker(redis_server, directory, AUTHORIZER_CONFIGS) as broker:
        yield broker

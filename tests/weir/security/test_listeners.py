"""Listener resolution from --listen and Kafka's listener configs; a repeated --listen."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from tests.weir.clients.conftest import free_port
from tests.weir.security.conftest import (
    ROOT,
    USERS,
    add_user,
    runbroker_argv,
    sasl_conf,
    wait_port,
)
from weir.security.listeners import ListenerError, ListenerSpec, resolve_listeners


def test_plain_listen_is_one_plaintext_listener() -> None:
    assert resolve_listeners(["127.0.0.1:9092"]) == [
        ListenerSpec("PLAINTEXT", "PLAINTEXT", "127.0.0.1", 9092)
    ]


def test_listeners_config_adds_named_listeners_with_mapped_protocols() -> None:
    specs = resolve_listeners(
        ["127.0.0.1:9092"],
        configs={
            "listeners": "PLAINTEXT://127.0.0.1:9092,CLIENT://0.0.0.0:9192",
            "advertised.listeners": "CLIENT://kafka.example:9192",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT",
        },
    )
    assert specs[1] == ListenerSpec(
        "CLIENT", "SASL_PLAINTEXT", "0.0.0.0", 9192, ("kafka.example", 9192)
    )
    assert specs[1].sasl and not specs[0].sasl


@pytest.mark.parametrize(
    ("listen", "configs", "message"),
    [
        (["127.0.0.1:1", "FOO://127.0.0.1:2"], {}, "no security protocol"),
        (["127.0.0.1:1", "PLAINTEXT://127.0.0.1:2"], {}, "given twice"),
        (["127.0.0.1:1"], {"listeners": "PLAINTEXT://127.0.0.1:5"}, "in --listen but"),
        (["127.0.0.1:x"], {}, "numeric port"),
    ],
)
def test_bad_listener_settings_are_named(listen: list[str], configs: dict, message: str) -> None:
    with pytest.raises(ListenerError, match=message):
        resolve_listeners(listen, configs=configs)


def test_runbroker_rejects_a_tls_listener_without_keystore(
    tmp_path: Path, redis_server: str
) -> None:
    env = dict(os.environ, WEIR_REDIS_URL=redis_server, WEIR_CLUSTER_ID="unused")
    argv = runbroker_argv(tmp_path, "127.0.0.1:0", "SSL://127.0.0.1:0")
    result = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "listener SSL uses TLS: ssl.keystore.location" in result.stderr


def test_repeated_listen_flag_opens_a_sasl_listener(tmp_path: Path, redis_server: str) -> None:
    cluster_id = f"test-{uuid.uuid4().hex[:12]}"
    password, mechanisms = USERS["alice"]
    add_user(redis_server, cluster_id, "alice", password, mechanisms)
    port, sasl_port = free_port(), free_port()
    env = dict(os.environ, WEIR_REDIS_URL=redis_server, WEIR_CLUSTER_ID=cluster_id)
    log = (tmp_path / "broker.log").open("wb")
    argv = runbroker_argv(
        tmp_path / "data", f"127.0.0.1:{port}", f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
    )
    proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=log)
    try:
        wait_port(sasl_port, timeout=30)
        admin = AdminClient(sasl_conf(f"127.0.0.1:{sasl_port}", "alice", "SCRAM-SHA-512"))
        brokers = admin.list_topics(timeout=10).brokers
        assert [(b.host, b.port) for b in brokers.values()] == [("127.0.0.1", sasl_port)]
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()

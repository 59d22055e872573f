"""Connection limits as a real Kafka client meets them (confluent-kafka, in-process broker).

The limit is set the way an operator sets it -- a dynamic broker config through
IncrementalAlterConfigs, as ``kafka-configs --entity-type brokers --entity-name 1 --alter``
does (confluent-kafka cannot name the cluster-wide default) -- and the broker picks it up
from its metadata. Raw sockets then take the remaining slots of 127.0.0.1; a new producer
is refused, reports it through its error callback and keeps retrying, while an admin client
connected before keeps being served; once the sockets close, the producer's record is
delivered. The listener mechanics themselves are proven in tests/weir/test_server_limits.py.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from tests.weir.inprocess import threaded_broker

pytestmark = pytest.mark.integration

WAIT_S = 20.0
API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 7, 0)  # size, key, version, id, no client


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def served(sock: socket.socket) -> bool:
    """Ask ApiVersions: True when answered, False when the broker closed the connection."""
    sock.sendall(API_VERSIONS_V0)
    try:
        return len(sock.recv(4)) == 4
    except ConnectionResetError:
        return False


def test_a_refused_client_reports_and_retries_while_connected_clients_are_served(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> None:
    with threaded_broker(
        data_dir=tmp_path / "broker-1", redis_url=redis_server, cluster_id=cluster_id
    ) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("limited", 1, 1)])["limited"].result(WAIT_S)
        limit = broker.broker.connection_quotas.total + 3
        change = ConfigResource(
            "broker",
            str(broker.broker_id),
            incremental_configs=[
                ConfigEntry(
                    "max.connections.per.ip",
                    str(limit),
                    incremental_operation=AlterConfigOpType.SET,
                )
            ],
        )
        admin.incremental_alter_configs([change])[change].result(WAIT_S)
        view = broker.broker.view
        until(lambda: view.config.get("max.connections.per.ip") == limit, "the dynamic limit")

        held: list[socket.socket] = []
        try:
            while True:  # take every slot 127.0.0.1 has left
                sock = socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT_S)
                held.append(sock)
                if not served(sock):
                    break
            assert broker.broker.metrics.connections_refused["per_ip"] >= 1

            errors: list[KafkaError] = []
            delivered: list[int] = []
            producer = Producer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "error_cb": errors.append,
                    "reconnect.backoff.ms": 50,
                    "reconnect.backoff.max.ms": 200,
                }
            )
            producer.produce(
                "limited", b"v", on_delivery=lambda err, msg: delivered.append(msg.offset())
            )

            def reported() -> bool:
                producer.poll(0.1)
                return bool(errors)

            until(reported, "the producer to report the refused connection")
            assert {e.code() for e in errors} <= {
                KafkaError._TRANSPORT,
                KafkaError._ALL_BROKERS_DOWN,
            }
            assert not delivered
            # The admin client, connected before, is served as before.
            assert "limited" in admin.list_topics(timeout=WAIT_S).topics
        finally:
            for sock in held:
                sock.close()
        # Slots free: the producer's retries get in and its record is delivered.
        assert producer.flush(WAIT_S) == 0
        assert delivered == [0]

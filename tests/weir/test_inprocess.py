"""The in-process broker harness (tests/weir/inprocess.py) keeps the promises tests rely on."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from confluent_kafka.admin import AdminClient
from kio.schema.metadata.v12.request import MetadataRequest

from tests.weir.clients.helpers import (
    consume_confluent,
    create_topic,
    make_records,
    produce_confluent,
)
from tests.weir.inprocess import InProcessBroker, threaded_broker, threaded_cluster
from weir.client import BrokerClient

METADATA = MetadataRequest(
    topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
)


def test_a_restarted_broker_keeps_its_port_and_its_data(redis_server: str, tmp_path: Path) -> None:
    with threaded_broker(data_dir=tmp_path / "broker-1", redis_url=redis_server) as broker:
        bootstrap = broker.bootstrap
        create_topic(bootstrap, "kept")
        sent = make_records("kept", 20)
        produce_confluent(bootstrap, "kept", sent)
        broker.restart()
        assert broker.alive() and broker.bootstrap == bootstrap
        assert [rec for _, rec in consume_confluent(bootstrap, "kept", 20)] == sent


def test_three_brokers_of_one_cluster_agree_on_the_first_as_controller(
    redis_server: str, tmp_path: Path
) -> None:
    with threaded_cluster(root=tmp_path, redis_url=redis_server) as brokers:
        assert len({b.cluster_id for b in brokers.values()}) == 1
        for broker in brokers.values():
            metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
            assert metadata.controller_id == 1
            assert sorted(metadata.brokers) == [1, 2, 3]


def test_brokers_sharing_a_loop_keep_separate_logs(redis_server: str, tmp_path: Path) -> None:
    level = logging.getLogger("weir").level
    with threaded_cluster(root=tmp_path, redis_url=redis_server, broker_ids=(1, 2)) as brokers:
        pass
    for broker_id, broker in brokers.items():
        text = broker.log_text()
        assert f"broker {broker_id} serving Kafka" in text
        assert f"broker {3 - broker_id} serving Kafka" not in text
        assert f"broker {broker_id} stopped" in text
    assert logging.getLogger("weir").level == level


def test_nothing_keeps_running_after_the_block(redis_server: str, tmp_path: Path) -> None:
    before = set(threading.enumerate())
    with threaded_broker(data_dir=tmp_path / "broker-1", redis_url=redis_server) as broker:
        produce_confluent(broker.bootstrap, "auto-created", make_records("x", 3))
        assert broker.thread.loop.is_running()
    assert broker.thread.loop.is_closed()
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("inprocess")]


async def test_a_broker_in_the_test_loop_answers_weir_s_own_client(
    loop_broker: InProcessBroker,
) -> None:
    client = BrokerClient("127.0.0.1", loop_broker.port, client_id="harness-test")
    try:
        answer = await client.request(METADATA, timeout=10)
    finally:
        await client.close()
    assert answer.cluster_id == loop_broker.cluster_id
    assert [(b.node_id, b.port) for b in answer.brokers] == [(1, loop_broker.port)]

"""A broker tuned for group tests: no initial rebalance delay, short sessions allowed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.brokers.clients.conftest import BrokerProcess

GROUP_CONFIGS = [
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
    # Expiry runs often, so offsets committed with a short retention_time go within seconds.
    "offsets.retention.check.interval.ms=300",
]


@pytest.fixture(scope="module")
def group_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    directory = tmp_path_factory.mktemp("group-broker")
    broker = BrokerProcess(
        broker_id=1,
        data_dir=directory / "broker-1",
        redis_url=redis_server,
        cluster_id=f"test-{uuid.uuid4().hex[:12]}",
        configs=GROUP_CONFIGS,
        log_path=directory / "broker-1.log",
    )
    broker.start()
    yield broker
    broker.stop()

"""A broker tuned for group tests: no initial rebalance delay, short sessions allowed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.weir.clients.conftest import BrokerProcess, running_broker

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
    with running_broker(redis_server, directory, GROUP_CONFIGS) as broker:
        yield broker

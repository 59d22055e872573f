"""A broker tuned for group tests: no initial rebalance delay, short sessions allowed.

``group_broker`` is an in-process broker (``tests/weir/inprocess.py``) shared by a module;
the members may still be processes of their own (``member_process.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.weir.inprocess import ThreadedBroker, threaded_broker

GROUP_CONFIGS = [
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
    # Expiry runs often, so offsets committed with a short retention_time go within seconds.
    "offsets.retention.check.interval.ms=300",
]


@pytest.fixture(scope="module")
def group_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    directory = tmp_path_factory.mktemp("group-broker")
    with threaded_broker(
        data_dir=directory / "broker-1", redis_url=redis_server, configs=GROUP_CONFIGS
    ) as broker:
        yield broker

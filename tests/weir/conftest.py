"""In-process brokers for every runtime test package (see ``tests/weir/inprocess.py``).

``inprocess_broker``: one broker on a loop thread of its own, per test, for synchronous
clients. ``module_inprocess_broker``: the same, shared by a module whose tests isolate by
topic name. ``loop_broker``: one broker in the test's own event loop, for async tests.
Each has a cluster id of its own on the suite's Redis and its data under the test's tmp_path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.weir.inprocess import InProcessBroker, ThreadedBroker, broker_in_loop, threaded_broker


@pytest.fixture
def inprocess_broker(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> Iterator[ThreadedBroker]:
    """One in-process broker (default configs) on its own loop thread, for this test."""
    with threaded_broker(
        data_dir=tmp_path / "broker-1", redis_url=redis_server, cluster_id=cluster_id
    ) as broker:
        yield broker


@pytest.fixture(scope="module")
def module_inprocess_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    """One in-process broker shared by a test module (tests isolate by topic name)."""
    directory = tmp_path_factory.mktemp("module-broker")
    with threaded_broker(data_dir=directory / "broker-1", redis_url=redis_server) as broker:
        yield broker


@pytest.fixture
async def loop_broker(
    redis_server: str, cluster_id: str, tmp_path: Path
) -> AsyncIterator[InProcessBroker]:
    """One broker in the test's event loop (async tests with async clients only)."""
    async with broker_in_loop(
        data_dir=tmp_path / "broker-1", redis_url=redis_server, cluster_id=cluster_id
    ) as broker:
        yield broker

"""Two in-process Weir clusters, ``east`` and ``west``, for the mirror's integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.weir.inprocess import ThreadedBroker, threaded_broker

FAST_GROUPS = ("group.initial.rebalance.delay.ms=0",)  # the mirror's groups join at once


@pytest.fixture
def east(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with threaded_broker(
        data_dir=tmp_path / "east" / "broker-1", redis_url=redis_server, configs=FAST_GROUPS
    ) as b:
        yield b


@pytest.fixture
def west(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with threaded_broker(
        data_dir=tmp_path / "west" / "broker-1", redis_url=redis_server, configs=FAST_GROUPS
    ) as b:
        yield b

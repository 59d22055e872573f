"""Broker processes for the ACL tests (imported by the test modules; not a conftest).

``acl_pair``: two brokers of one cluster with the default configs (no authorizer).
``acl_guarded``: one broker with Weir's authorizer on and ``allow.everyone.if.no.acl.found``.
Both are module-scoped: tests isolate by resource name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.weir.clients.conftest import BrokerProcess

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _brokers(
    redis_url: str, directory: Path, count: int, configs: list[str]
) -> list[BrokerProcess]:
    cluster_id = f"acl-{uuid.uuid4().hex[:12]}"
    return [
        BrokerProcess(
            broker_id=i,
            data_dir=directory / f"broker-{i}",
            redis_url=redis_url,
            cluster_id=cluster_id,
            configs=configs,
            log_path=directory / f"broker-{i}.log",
        )
        for i in range(1, count + 1)
    ]


@pytest.fixture(scope="module")
def acl_pair(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[BrokerProcess]]:
    brokers = _brokers(redis_server, tmp_path_factory.mktemp("acl-pair"), 2, [])
    try:
        for broker in brokers:
            broker.start()
        yield brokers
    finally:
        for broker in brokers:
            broker.stop()


@pytest.fixture(scope="module")
def acl_guarded(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    configs = [
        f"authorizer.class.name={STANDARD_AUTHORIZER}",
        "allow.everyone.if.no.acl.found=true",
    ]
    (broker,) = _brokers(redis_server, tmp_path_factory.mktemp("acl-guarded"), 1, configs)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()

"""In-process brokers for the ACL tests (imported by the test modules; not a conftest).

``acl_pair``: two brokers of one cluster with the default configs (no authorizer).
``acl_guarded``: one broker with Weir's authorizer on and ``allow.everyone.if.no.acl.found``.
Both are module-scoped: tests isolate by resource name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.weir.inprocess import ThreadedBroker, threaded_cluster

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


@pytest.fixture(scope="module")
def acl_pair(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[ThreadedBroker]]:
    with threaded_cluster(
        root=tmp_path_factory.mktemp("acl-pair"),
        redis_url=redis_server,
        cluster_id=f"acl-{uuid.uuid4().hex[:12]}",
        broker_ids=(1, 2),
    ) as brokers:
        yield list(brokers.values())


@pytest.fixture(scope="module")
def acl_guarded(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    configs = [
        f"authorizer.class.name={STANDARD_AUTHORIZER}",
        "allow.everyone.if.no.acl.found=true",
    ]
    with threaded_cluster(
        root=tmp_path_factory.mktemp("acl-guarded"),
        redis_url=redis_server,
        cluster_id=f"acl-{uuid.uuid4().hex[:12]}",
        broker_ids=(1,),
        configs=configs,
    ) as brokers:
        yield brokers[1]

"""In-process brokers for the ACL tests (imported by the test modules; not a conftest), and
the filter that matches every ACL binding.

``acl_pair``: two brokers of one cluster with the default configs (no authorizer).
``acl_guarded``: one broker with Weir's authorizer on and ``allow.everyone.if.no.acl.found``.
Both are module-scoped: tests isolate by resource name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from tests.weir.inprocess import ThreadedBroker, threaded_cluster

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def any_filter(**kw: object) -> AclBindingFilter:
    """A DescribeAcls / DeleteAcls filter that matches every binding; keywords (the
    filter's fields) narrow it."""
    values: dict[str, object] = {
        "restype": ResourceType.ANY,
        "name": None,
        "resource_pattern_type": ResourcePatternType.ANY,
        "principal": None,
        "host": None,
        "operation": AclOperation.ANY,
        "permission_type": AclPermissionType.ANY,
    }
    values.update(kw)
    return AclBindingFilter(**values)  # type: ignore[arg-type]


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

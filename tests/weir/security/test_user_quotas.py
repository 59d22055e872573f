"""Quotas on ``users/<name>`` with real SASL principals: the user part of a quota entity is
the authenticated principal's name (``User:alice`` → ``alice``), so a quota on alice
throttles every client alice logs in with, whatever its client id, and leaves bob alone.

In-process broker with a SASL_PLAINTEXT listener and SCRAM users (``running_sasl_broker``,
with ``quota.window.num=3`` so that the quota acts within a short run, as in
``tests/weir/test_client_quotas.py``); the quota is set over its PLAINTEXT listener.
Throttling is asserted as "the client reported a throttle time > 0", the rate only against a
generous factor of the quota.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.weir.security.conftest import SaslBroker, running_sasl_broker, sasl_conf
from tests.weir.test_client_quotas import FAST_FACTOR, QUOTA, produce_measured, set_quota


@pytest.fixture(scope="module")
def quota_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SaslBroker]:
    directory = tmp_path_factory.mktemp("user-quota-broker")
    with running_sasl_broker(redis_server, directory, ("quota.window.num=3",)) as broker:
        yield broker


def test_a_quota_on_a_sasl_user_throttles_that_user_and_not_another(
    quota_broker: SaslBroker,
) -> None:
    topic = f"user-quota-{uuid.uuid4().hex[:8]}"
    set_quota(quota_broker.broker, [("users", "alice")], producer_byte_rate=QUOTA)
    alice = sasl_conf(quota_broker.sasl, "alice", "SCRAM-SHA-512")
    rate, throttles = produce_measured(alice, topic, "alice-app", 60)
    assert throttles and max(throttles) > 0
    assert rate < FAST_FACTOR * QUOTA
    # bob, with the very same client id, is another principal: no quota applies to him.
    bob = sasl_conf(quota_broker.sasl, "bob", "SCRAM-SHA-256")
    _, unthrottled = produce_measured(bob, topic, "alice-app", 60)
    assert unthrottled == []

"""``describe_coordination``: a plain redis-server describes itself; a real Sentinel deployment
gives its primary, replicas (link, offset, lag), sentinels and quorum; a failover is recorded
once, with the old and new primary. The failover case is slow (~10 s), so it is one test."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.conftest import RedisServer
from tests.sentinel import QUORUM, SentinelDeployment
from weir.metadata.deployment import CoordinationState, describe_coordination


def described_once(
    url: str, cluster_id: str, ready: Callable[[CoordinationState], bool]
) -> CoordinationState:
    """The first description for which ``ready`` holds (polled, 20 s at most)."""
    deadline = time.monotonic() + 20
    while True:
        state = describe_coordination(url, cluster_id=cluster_id)
        if ready(state) or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def test_a_plain_redis_describes_its_role_persistence_and_memory(
    make_redis_server: Callable[[], RedisServer], cluster_id: str
) -> None:
    server = make_redis_server()
    state = describe_coordination(server.url, cluster_id=cluster_id)
    assert state.kind == "single" and state.error == ""
    primary = state.primary
    assert primary is not None and primary.address == f"127.0.0.1:{server.port}"
    assert (primary.role, primary.aof_enabled, primary.appendfsync) == (
        "primary",
        False,
        "everysec",
    )
    assert primary.min_replicas_to_write == 0 and primary.used_memory_bytes > 0
    assert state.last_failover is None
    # A restart on the same address is no failover.
    server.restart()
    assert describe_coordination(server.url, cluster_id=cluster_id).failovers == ()


def test_an_unreachable_redis_is_described_as_such(cluster_id: str) -> None:
    state = describe_coordination("redis://127.0.0.1:1/0", cluster_id=cluster_id)
    assert state.primary is not None and not state.primary.reachable
    assert "127.0.0.1:1 does not answer" in state.error


def test_a_sentinel_deployment_and_its_failover_are_described(
    sentinel_deployment: SentinelDeployment, cluster_id: str
) -> None:
    old = sentinel_deployment.primary()
    # Right after the start the replicas may still be in their first sync (link down).
    state = described_once(
        sentinel_deployment.url,
        cluster_id,
        lambda s: all(r.link_status == "up" for r in s.replicas),
    )
    assert (state.kind, state.service_name, state.error) == ("sentinel", "weir", "")
    assert (state.sentinels_total, state.sentinels_reachable, state.quorum) == (3, 3, QUORUM)
    assert state.primary is not None and state.primary.address == f"127.0.0.1:{old.port}"
    assert (state.primary.aof_enabled, state.primary.appendfsync) == (True, "always")
    assert state.primary.min_replicas_to_write == 1
    assert len(state.replicas) == 2
    for replica in state.replicas:
        assert replica.link_status == "up" and replica.lag_bytes is not None, replica
        assert replica.replication_offset is not None and replica.lag_bytes >= 0
    assert state.last_failover is None

    sentinel_deployment.kill(old)
    sentinel_deployment.wait_for_failover(old)
    new = sentinel_deployment.primary()
    # Sentinels learn of the new primary one after the other: the first asked may lag.
    after = described_once(
        sentinel_deployment.url,
        cluster_id,
        lambda s: s.primary is not None and s.primary.address == f"127.0.0.1:{new.port}",
    )
    again = describe_coordination(sentinel_deployment.url, cluster_id=cluster_id)
    assert after.primary is not None and after.primary.address == f"127.0.0.1:{new.port}"
    failover = after.last_failover
    assert failover is not None
    assert (failover.from_address, failover.to_address) == (
        f"127.0.0.1:{old.port}",
        f"127.0.0.1:{new.port}",
    )
    assert again.failovers == after.failovers  # recorded once
    assert any(r.link_status == "down" for r in after.replicas)  # the killed one
    assert after.to_dict()["last_failover"]["to_address"] == f"127.0.0.1:{new.port}"

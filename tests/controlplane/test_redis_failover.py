"""The control plane keeps answering when its Redis fails over or restarts (issue 17).

Real processes on purpose: what breaks is a pooled connection to a Redis that went away, held
by another process (daphne's Channels layer and gateway, the monitor, the Celery worker's
gateway) — only a real Sentinel failover (``sentinel_deployment``: SIGKILL of the primary,
~7 s until the sentinels promote a replica) and a real ``redis-server`` restart show it. Each
scenario first uses every connection (a job, a websocket, an API read, monitor ticks), then
breaks Redis, then checks that the *first* use afterwards succeeds: no job fails with
"metadata store unavailable", no websocket is dropped, no API read gets a 503. One failover per
test: every check shares it.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import websockets

from tests.conftest import RedisServer
from tests.controlplane.test_jobs_api import _call, _wait_job
from tests.controlplane_fixtures import (
    CONTROL_PLANE_CONFIGS,
    PASSWORD,
    Dashboard,
    serve_control_plane,
)
from tests.sentinel import SentinelDeployment
from tests.weir.cluster.conftest import Cluster, ClusterFactory
from tests.weir.cluster.conftest import make_cluster as make_cluster  # the fixture
from weir.metadata.keys import KeyLayout
from weir.metadata.redis_url import close_client, sync_client

pytestmark = [pytest.mark.integration]


def _auth(user: str = "operator") -> str:
    return "Basic " + base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()


def _run_retention(served: Dashboard) -> dict[str, Any]:
    """Queue a retention job through the API and wait until the worker finished it."""
    status, job = _call(served, "POST", "/api/jobs/", {"name": "retention"})
    assert status == 202, job
    return _wait_job(served, job["id"])


def _ws_url(served: Dashboard) -> str:
    return served.url.replace("http://", "ws://") + "/ws/cluster/"


async def _cluster_message_after(
    client: websockets.ClientConnection, moment: datetime, timeout: float
) -> dict[str, Any]:
    """The first ``/ws/cluster/`` message the monitor made after ``moment``."""
    async with asyncio.timeout(timeout):
        while True:
            message = json.loads(await client.recv())
            at = datetime.fromisoformat(message["at"].replace("Z", "+00:00"))
            if at > moment:
                return message


async def _open_socket(served: Dashboard, timeout: float = 30) -> Any:
    """A ``/ws/cluster/`` socket, opened as a dashboard's script does: a handshake the web app
    drops (its channel layer's Redis write refused while the new deployment's replica still
    counts as lagging, ``min-replicas-max-lag``, on a loaded machine) is tried again."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await websockets.connect(
                _ws_url(served),
                additional_headers={"Authorization": _auth("viewer")},
                open_timeout=timeout,
            )
        except (websockets.exceptions.InvalidMessage, OSError):
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.5)


async def _first_message(served: Dashboard) -> dict[str, Any]:
    """Open a new ``/ws/cluster/`` socket and read its first message."""
    async with await _open_socket(served) as client:
        return json.loads(await asyncio.wait_for(client.recv(), 30))


# Sentinel failover -------------------------------------------------------------------------


def _wait_writable(deployment: SentinelDeployment, timeout: float = 20) -> None:
    """Until the primary counts a replica in sync (``min-replicas-to-write``): replicas are
    connected when the deployment settles but still syncing, and writes get NOREPLICAS."""

    def good_replicas() -> int:
        with deployment.primary().client() as client:
            return int(client.info("replication").get("min_slaves_good_slaves", 0))

    deployment.wait_until(lambda: good_replicas() >= 1, timeout, "a replica in sync")


@pytest.fixture
def sentinel_control_plane(
    sentinel_deployment: SentinelDeployment,
    make_cluster: ClusterFactory,
    cluster_id: str,
    tmp_path: Path,
) -> Iterator[tuple[Cluster, Dashboard]]:
    """Three brokers, daphne, the monitor and a Celery worker, all on the Sentinel URL."""
    _wait_writable(sentinel_deployment)
    cluster = make_cluster(configs=CONTROL_PLANE_CONFIGS, redis_url=sentinel_deployment.url)
    with serve_control_plane(
        tmp_path / "control-plane",
        redis_url=sentinel_deployment.url,
        cluster_id=cluster_id,
        processes=("daphne", "monitor", "worker"),
    ) as served:
        yield cluster, served


def test_web_app_monitor_and_jobs_follow_a_sentinel_failover(
    sentinel_deployment: SentinelDeployment,
    sentinel_control_plane: tuple[Cluster, Dashboard],
    cluster_id: str,
) -> None:
    cluster, served = sentinel_control_plane
    topic = "failover-orders"
    cluster.create_topic(topic)
    topics_path = f"/kafka/v3/clusters/{cluster_id}/topics"

    async def scenario() -> None:
        async with await _open_socket(served) as client:
            # Every process has used its connections to the first primary.
            await _cluster_message_after(client, datetime.now(UTC), 30)
            assert (await asyncio.to_thread(_run_retention, served))["status"] == "succeeded"
            status, _ = await asyncio.to_thread(_call, served, "GET", topics_path)
            assert status == 200

            old = sentinel_deployment.primary()
            sentinel_deployment.kill(old)
            await asyncio.to_thread(sentinel_deployment.wait_for_failover, old)
            failed_over = datetime.now(UTC)

            # The monitor ticks on the new primary and the open socket still gets its pushes.
            try:
                message = await _cluster_message_after(client, failed_over, 30)
            except TimeoutError:
                pytest.fail("no monitor push after the failover\n" + served.log_tail())
            assert message["topics"] >= 1
        # A new socket, an API read and a job, each the first of its kind since the failover.
        assert (await _first_message(served))["type"] == "cluster"
        status, body = await asyncio.to_thread(_call, served, "GET", topics_path)
        assert status == 200, body
        assert topic in [t["topic_name"] for t in body["data"]]
        job = await asyncio.to_thread(_run_retention, served)
        assert job["status"] == "succeeded", f"{job}\n{served.log_tail()}"

    asyncio.run(scenario())
    # The monitor's snapshot was written to the new primary.
    client = sync_client(sentinel_deployment.url, decode_responses=True)
    try:
        assert client.get(KeyLayout(cluster_id).key("lag:cluster")) is not None
    finally:
        close_client(client)


# plain Redis restart -----------------------------------------------------------------------


def test_first_job_and_websocket_after_a_redis_restart_succeed(
    make_redis_server: Callable[[], RedisServer], cluster_id: str, tmp_path: Path
) -> None:
    """No brokers: the job and the socket need only Redis (an empty cluster image)."""
    server = make_redis_server()
    with serve_control_plane(
        tmp_path / "control-plane",
        redis_url=server.url,
        cluster_id=cluster_id,
        processes=("daphne", "worker"),
    ) as served:
        assert _run_retention(served)["status"] == "succeeded"
        assert asyncio.run(_first_message(served))["type"] == "cluster"

        server.restart()

        assert asyncio.run(_first_message(served))["type"] == "cluster"
        job = _run_retention(served)
        assert job["status"] == "succeeded", f"{job}\n{served.log_tail()}"

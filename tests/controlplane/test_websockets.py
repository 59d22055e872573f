"""Websockets: ``/ws/groups/<group>/`` and ``/ws/cluster/``, in process and through daphne.

In process, Channels' ``WebsocketCommunicator`` talks to ``controlplane.asgi.application``
(the same middleware stack daphne serves) with a Basic ``Authorization`` header. Through
daphne, a real ``websockets`` client connects to a real server while ``manage.py monitor``
runs beside it, as in a deployment; both processes use the shared test cluster and Redis.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import websockets
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from controlplane.asgi import application
from controlplane.cluster import gateway
from groups.monitor import Monitor
from tests.controlplane.lag_helpers import (
    LaggingGroup,
    commit,
    now_ms,
    produce_at,
    wait_high_watermarks,
)
from tests.controlplane_fixtures import PASSWORD, Dashboard
from tests.weir.cluster.conftest import Cluster

pytestmark = [pytest.mark.integration]


def basic_header(username: str, password: str = PASSWORD) -> tuple[bytes, bytes]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return (b"authorization", f"Basic {token}".encode())


@pytest.fixture
def lagging(cp_cluster: Cluster, unique: Callable[[str], str]) -> LaggingGroup:
    """A group 5 records behind on a one-partition topic."""
    topic, group = unique("ws"), unique("ws-group")
    cp_cluster.create_topic(topic)
    base = now_ms() - 30_000
    produce_at(cp_cluster, topic, 0, [base] * 5)
    commit(cp_cluster, group, {(topic, 0): 0})
    wait_high_watermarks({(topic, 0): 5})
    return LaggingGroup(topic, group, base)


async def receive(communicator: WebsocketCommunicator, timeout: float = 10) -> dict[str, Any]:
    return json.loads(await communicator.receive_from(timeout=timeout))


@pytest.mark.django_db(transaction=True)
async def test_group_socket_sends_the_snapshot_then_live_updates(
    cp_cluster: Cluster,
    lagging: LaggingGroup,
    make_user: Callable[[str, str], object],
) -> None:
    await sync_to_async(make_user)("ws-viewer", "viewer")
    monitor = Monitor(gateway(), store_history=False)
    try:
        await sync_to_async(monitor.tick)()
        communicator = WebsocketCommunicator(
            application, f"/ws/groups/{lagging.group}/", headers=[basic_header("ws-viewer")]
        )
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        snapshot = await receive(communicator)
        assert (snapshot["type"], snapshot["total_lag"]) == ("lag", 5)
        assert snapshot["group"] == lagging.group
        assert snapshot["partitions"][0]["lag"] == 5
        assert snapshot["partitions"][0]["lag_seconds"] >= 29
        # New records, one tick: the subscriber hears about it.
        await sync_to_async(produce_at)(cp_cluster, lagging.topic, 0, [now_ms()] * 3)
        await sync_to_async(wait_high_watermarks)({(lagging.topic, 0): 8})
        await sync_to_async(monitor.tick)()
        # Another monitor (the dashboard fixture's) may publish to the same group first;
        # the subscriber must hear of the new records within a few messages.
        update = await receive(communicator)
        for _ in range(20):
            if update["partitions"][0]["high_watermark"] == 8:
                break
            update = await receive(communicator)
        assert update["total_lag"] == 8 and update["partitions"][0]["high_watermark"] == 8
        assert update["status"] in ("OK", "WARN", "ERR")
        await communicator.disconnect()
    finally:
        await sync_to_async(monitor.close)()


@pytest.mark.django_db(transaction=True)
async def test_cluster_socket_shows_brokers_controller_and_groups(
    lagging: LaggingGroup, make_user: Callable[[str, str], object]
) -> None:
    await sync_to_async(make_user)("ws-cluster", "viewer")
    communicator = WebsocketCommunicator(
        application, "/ws/cluster/", headers=[basic_header("ws-cluster")]
    )
    connected, _ = await communicator.connect(timeout=10)
    assert connected
    first = await receive(communicator)  # at once, even before any tick
    assert first["type"] == "cluster"
    assert [b["id"] for b in first["brokers"]] == [1, 2, 3]
    assert all(b["alive"] for b in first["brokers"])
    monitor = Monitor(gateway(), store_history=False)
    try:
        await sync_to_async(monitor.tick)()
    finally:
        await sync_to_async(monitor.close)()
    update = await receive(communicator)
    for _ in range(20):  # another monitor's tick may come first, from before the group
        if any(g["group"] == lagging.group for g in update.get("groups", [])):
            break
        update = await receive(communicator)
    assert update["controller"] in (1, 2, 3)
    assert update["partitions"]["count"] >= 1 and update["partitions"]["offline"] == 0
    summaries = {g["group"]: g for g in update["groups"]}
    assert summaries[lagging.group]["status"] == "OK"
    assert summaries[lagging.group]["total_lag"] == 5
    assert summaries[lagging.group]["state"] == "Empty"
    assert summaries[lagging.group]["members"] == 0
    await communicator.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_anonymous_and_roleless_sockets_are_refused(
    cp_cluster: Cluster,
    make_user: Callable[[str, str], object],
) -> None:
    anonymous = WebsocketCommunicator(application, "/ws/groups/any/")
    assert await anonymous.connect(timeout=10) == (False, 4401)
    wrong = WebsocketCommunicator(
        application, "/ws/cluster/", headers=[basic_header("nobody", "wrong")]
    )
    assert await wrong.connect(timeout=10) == (False, 4401)

    def roleless() -> None:
        user = make_user("ws-roleless", "viewer")
        user.groups.clear()  # type: ignore[attr-defined]

    await sync_to_async(roleless)()
    refused = WebsocketCommunicator(
        application, "/ws/cluster/", headers=[basic_header("ws-roleless")]
    )
    assert await refused.connect(timeout=10) == (False, 4403)


# through daphne ------------------------------------------------------------------------------


async def test_a_real_client_through_daphne_gets_lag_updates_from_the_monitor(
    dashboard: Dashboard, cp_cluster: Cluster, lagging: LaggingGroup
) -> None:
    token = base64.b64encode(f"viewer:{PASSWORD}".encode()).decode()
    url = f"{dashboard.url.replace('http://', 'ws://')}/ws/groups/{lagging.group}/"
    async with websockets.connect(
        url, additional_headers={"Authorization": f"Basic {token}"}, open_timeout=20
    ) as client:

        async def lag_reaching(total: int, timeout: float) -> dict[str, Any]:
            async with asyncio.timeout(timeout):
                while True:
                    message = json.loads(await client.recv())
                    if message.get("total_lag") == total:
                        return message

        try:
            await lag_reaching(5, 15)
            produced = time.monotonic()
            await asyncio.to_thread(produce_at, cp_cluster, lagging.topic, 0, [now_ms()] * 4)
            update = await lag_reaching(9, 10)
        except TimeoutError:
            pytest.fail("no lag update through daphne\n" + dashboard.log_tail())
        # Leaders publish HW each second and the monitor ticks every 0.5 s.
        assert time.monotonic() - produced < 5
        assert update["partitions"][0]["high_watermark"] == 9
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(url, open_timeout=20):
            pass
    assert refused.value.response.status_code == 403


def test_channel_group_names_are_valid_for_any_group_id() -> None:
    """Channel group names are valid for any Kafka group id (hash-suffixed)."""
    from groups.lag import channel_group_name

    odd = "orders/v2 (eu) ✓" + "x" * 200
    name = channel_group_name(odd)
    assert len(name) < 100 and name.isascii()
    assert all(c.isalnum() or c in "-_." for c in name)
    assert channel_group_name(odd) != channel_group_name(odd + "y")

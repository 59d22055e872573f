"""Websocket consumers: ``/ws/groups/<group>/`` (live lag) and ``/ws/cluster/`` (cluster view).

Both are thin: they check the user (``scope["user"]``, set by
:mod:`controlplane.ws_auth`; anonymous → close 4401, no role → close 4403, before accepting),
join the Channels group the monitor publishes to (:func:`groups.lag.channel_group_name`) and
send the latest snapshot at once from Redis, so a new subscriber does not wait for the next
tick. The monitor's events carry the JSON text ready to send (``{"type": "lag.update",
"text": ...}``), so fan-out costs no re-encoding per subscriber. Clients only listen; whatever
they send is ignored.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from controlplane.ws_auth import admit_viewer
from groups import lag

__all__ = ["ClusterConsumer", "GroupLagConsumer"]

log = logging.getLogger("weir.ws")


class _MonitorConsumer(AsyncJsonWebsocketConsumer):
    """Authenticate, join one channel group, send its latest snapshot, relay updates."""

    joined: str | None = None

    def channel_group(self) -> str:
        raise NotImplementedError

    def latest(self) -> dict[str, Any] | None:
        raise NotImplementedError

    async def connect(self) -> None:
        if not await admit_viewer(self):
            return
        self.joined = self.channel_group()
        await self.channel_layer.group_add(self.joined, self.channel_name)
        await self.accept()
        try:
            snapshot = await sync_to_async(self.latest)()
        except Exception:  # no snapshot is not fatal: updates still come
            log.warning("no snapshot for %s", self.joined, exc_info=True)
            snapshot = None
        if snapshot is not None:
            await self.send(text_data=json.dumps(snapshot))

    async def disconnect(self, code: int) -> None:
        if self.joined is not None:
            await self.channel_layer.group_discard(self.joined, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen."""

    async def lag_update(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["text"])


class GroupLagConsumer(_MonitorConsumer):
    """``/ws/groups/<group>/``: the group's lag per partition and status, every tick."""

    def channel_group(self) -> str:
        return lag.channel_group_name(self.group)

    @property
    def group(self) -> str:
        return self.scope["url_route"]["kwargs"]["group"]

    def latest(self) -> dict[str, Any] | None:
        return lag.group_snapshot(group=self.group)


class ClusterConsumer(_MonitorConsumer):
    """``/ws/cluster/``: brokers, controller, partition health and groups, every tick."""

    def channel_group(self) -> str:
        return lag.channel_group_name(None)

    def latest(self) -> dict[str, Any] | None:
        found = lag.cluster_snapshot()
        if found is not None:
            return found
        from controlplane.cluster import gateway
        from groups.monitor import cluster_view

        return cluster_view(gateway().image(), [])

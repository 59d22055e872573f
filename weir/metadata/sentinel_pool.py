"""Connections that follow the Sentinel primary, including the ones already open.

redis-py's Sentinel pool asks the sentinels for the primary only when it opens a connection.
Connections opened before a failover stay in the pool afterwards: an idle one, or one whose
command hung on a paused primary and was answered once it woke up, goes back to the pool still
connected to the *old* primary, and the next command on it is refused with ``NOREPLICAS``
(``min-replicas-to-write``: nobody replicates from it any more) or, once it is demoted,
``READONLY``. A broker would then fail heartbeats for seconds after a failover that the
sentinels had long finished, and its lease could expire.

:class:`FollowingSentinelPool` closes those connections instead of handing them out: before a
connection is handed out, the pool asks the sentinels for the primary at most once every
``RECHECK_S`` (one round trip to a sentinel), and a connection to any other address is closed
and opened again to the primary. (A ``NOREPLICAS`` or ``READONLY`` answer on a connection that
slipped through closes it too: ``redis_url.AsyncSentinelConnection``.)
"""

from __future__ import annotations

import time
from typing import Any

from redis.asyncio.sentinel import SentinelConnectionPool

__all__ = ["RECHECK_S", "FollowingSentinelPool"]

# How often a pool re-asks the sentinels which server is the primary.
RECHECK_S = 1.0


class FollowingSentinelPool(SentinelConnectionPool):
    """A Sentinel pool whose connections all lead to the current primary."""

    def __init__(self, service_name: str, sentinel_manager: Any, **kwargs: Any) -> None:
        super().__init__(service_name, sentinel_manager, **kwargs)
        self._checked_at = 0.0

    async def ensure_connection(self, connection: Any) -> None:
        now = time.monotonic()
        if self.is_master and now - self._checked_at >= RECHECK_S:
            self._checked_at = now
            # Also closes the idle connections when the primary changed.
            await self.get_master_address()
        if (
            self.is_master
            and connection.is_connected
            and self.master_address is not None
            and (connection.host, connection.port) != tuple(self.master_address)
        ):
            await connection.disconnect()
        await super().ensure_connection(connection)

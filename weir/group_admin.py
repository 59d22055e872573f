"""Group operations the Kafka protocol has no API for, sent over the broker command channel.

Forcing a live group to rebalance (the control plane's "rebalance" button, ``manage.py
consumer-groups --force-rebalance``) must reach whichever broker coordinates the group, and
that broker changes with ``__consumer_offsets`` leadership. Kafka offers no request for it,
so it is the ``group_rebalance`` command of ``weir.commands``: the sender asks every live
broker (which one coordinates may change while it asks), each answers whether it
coordinates the group and, if it does, the outcome as a Kafka error code.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.commands import CommandError

if TYPE_CHECKING:
    from weir.commands import CommandClient, CommandServer
    from weir.group_coordinator import GroupCoordinator

__all__ = ["force_group_rebalance", "register_group_commands"]

log = logging.getLogger("weir.group_admin")

REBALANCE = "group_rebalance"


def register_group_commands(server: CommandServer, coordinator: GroupCoordinator) -> None:
    """A broker's side: serve ``group_rebalance`` for the groups ``coordinator`` holds."""

    async def rebalance(args: dict[str, Any]) -> dict[str, Any]:
        group_id = args.get("group")
        if not isinstance(group_id, str) or not group_id:
            raise CommandError("group must be a non-empty string")
        if not coordinator.coordinates(group_id):
            return {"coordinates": False}  # another broker's group (or nobody's right now)
        error = coordinator.force_rebalance(group_id)
        log.info("forced rebalance of group %s: %s", group_id, error.name)
        return {"coordinates": True, "error_code": int(error)}

    server.register(REBALANCE, rebalance)


def force_group_rebalance(
    client: CommandClient, *, group_id: str, broker_ids: Iterable[int]
) -> ErrorCode:
    """Make the group's coordinator start a rebalance now; its answer as a Kafka error.

    NONE: the members see REBALANCE_IN_PROGRESS on their next heartbeat and rejoin.
    GROUP_ID_NOT_FOUND comes from the coordinator; COORDINATOR_NOT_AVAILABLE when no
    broker said it coordinates the group before the client's deadline.
    """
    replies = client.request({b: (REBALANCE, {"group": group_id}) for b in broker_ids})
    for reply in replies.values():
        result = reply.result or {}
        if reply.ok and result.get("coordinates"):
            return ErrorCode(int(result["error_code"]))
    return ErrorCode.coordinator_not_available

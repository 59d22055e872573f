"""Group operations the Kafka protocol has no API for, sent to the coordinator through Redis.

Forcing a live group to rebalance (the control plane's "rebalance" button, ``manage.py
consumer-groups --force-rebalance``) must reach whichever broker coordinates the group, and
that broker changes with ``__consumer_offsets`` leadership. Kafka offers no request for it,
and adding a private API key would put a non-Kafka message on the Kafka port. Redis already
connects every broker and the control plane, so a command is one entry in the
``group_commands`` stream: every broker tails it, the one coordinating the group acts, and it
writes the outcome (a Kafka error code) under ``group_command_result:<id>`` for a minute.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode
from redis.exceptions import RedisError

from weir.metadata.keys import KeyLayout

if TYPE_CHECKING:
    from weir.group_coordinator import GroupCoordinator

__all__ = ["force_group_rebalance", "serve_group_commands"]

log = logging.getLogger("weir.group_admin")

_RESULT_TTL_S = 60
_STREAM_MAXLEN = 1000


def _commands(keys: KeyLayout) -> str:
    return keys.key("group_commands")


def _result(keys: KeyLayout, command_id: str) -> str:
    return keys.key(f"group_command_result:{command_id}")


async def force_group_rebalance(
    redis: aioredis.Redis, *, cluster_id: str, group_id: str, timeout_s: float = 10.0
) -> ErrorCode:
    """Make the group's coordinator start a rebalance now; its answer as a Kafka error.

    NONE: the members see REBALANCE_IN_PROGRESS on their next heartbeat and rejoin.
    GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP-style errors come from the coordinator;
    COORDINATOR_NOT_AVAILABLE when no broker answered within ``timeout_s``.
    """
    keys = KeyLayout(cluster_id)
    command_id = uuid.uuid4().hex
    await redis.xadd(
        _commands(keys),
        {"id": command_id, "command": "rebalance", "group": group_id},
        maxlen=_STREAM_MAXLEN,
        approximate=True,
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        value = await redis.get(_result(keys, command_id))
        if value is not None:
            return ErrorCode(int(value))
        await asyncio.sleep(0.05)
    return ErrorCode.coordinator_not_available


async def serve_group_commands(
    redis: aioredis.Redis, *, cluster_id: str, coordinator: GroupCoordinator
) -> None:
    """A broker's side: act on commands for the groups this broker coordinates."""
    keys = KeyLayout(cluster_id)
    last_id = "$"
    while True:
        try:
            reply: Any = await redis.xread({_commands(keys): last_id}, count=100, block=1000)
        except (RedisError, OSError) as exc:
            log.debug("group command stream unavailable: %s", exc)
            await asyncio.sleep(1.0)
            continue
        for _, entries in reply or []:
            for entry_id, fields in entries:
                last_id = entry_id
                await _serve_one(redis, keys, coordinator, fields)


async def _serve_one(
    redis: aioredis.Redis, keys: KeyLayout, coordinator: GroupCoordinator, fields: Any
) -> None:
    def text(name: str) -> str:
        value = fields.get(name.encode(), b"")
        return value.decode() if isinstance(value, bytes) else str(value)

    group_id = text("group")
    if not coordinator.coordinates(group_id):
        return  # another broker's group (or nobody's right now)
    if text("command") == "rebalance":
        error = coordinator.force_rebalance(group_id)
        log.info("forced rebalance of group %s: %s", group_id, error.name)
    else:
        error = ErrorCode.invalid_request
    try:
        await redis.set(_result(keys, text("id")), int(error), ex=_RESULT_TTL_S)
    except (RedisError, OSError) as exc:
        log.warning("could not report group command result: %s", exc)

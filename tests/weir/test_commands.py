"""The broker command channel in-process: CommandServer in the test's event loop, the
control plane's CommandClient in a thread, a real Redis between them. Handlers are found by
name, refusals and bad input come back as answers, expired commands are dropped, and the
group rebalance reaches the broker that coordinates the group."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
from kio.schema.errors import ErrorCode

from weir.commands import BrokerReply, CommandClient, CommandError, CommandServer
from weir.group_admin import force_group_rebalance, register_group_commands
from weir.metadata.keys import KeyLayout


@pytest.fixture
async def make_server(
    redis_server: str, cluster_id: str
) -> AsyncIterator[Callable[[int], CommandServer]]:
    """Start a broker's command server (with a live lease) for each id asked for."""
    client = aioredis.Redis.from_url(redis_server)
    tasks: list[asyncio.Task[None]] = []

    def start(broker_id: int) -> CommandServer:
        server = CommandServer(
            client,
            cluster_id=cluster_id,
            broker_id=broker_id,
            time_ms=lambda: int(time.time() * 1000),
        )
        tasks.append(asyncio.create_task(_serve(client, server, cluster_id, broker_id)))
        return server

    yield start
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    await client.aclose()


async def _serve(
    client: aioredis.Redis, server: CommandServer, cluster_id: str, broker_id: int
) -> None:
    await client.set(KeyLayout(cluster_id).broker_lease(broker_id), "{}", px=60_000)
    await server.serve()


@pytest.fixture
def commands(redis_server: str, cluster_id: str) -> Callable[[float], CommandClient]:
    sync = redis.Redis.from_url(redis_server, decode_responses=True)

    def client(timeout_s: float) -> CommandClient:
        return CommandClient(sync, KeyLayout(cluster_id), deadline=time.monotonic() + timeout_s)

    return client


async def _request(
    client: CommandClient, commands: dict[int, tuple[str, Any]]
) -> dict[int, BrokerReply]:
    await asyncio.sleep(0.2)  # the servers start reading at the Redis clock of their start
    return await asyncio.to_thread(client.request, commands)


async def test_commands_are_dispatched_by_name_and_refusals_come_back(
    make_server: Callable[[int], CommandServer], commands: Callable[[float], CommandClient]
) -> None:
    server = make_server(1)

    async def echo(args: dict[str, Any]) -> dict[str, Any]:
        if args.get("refuse"):
            raise CommandError("refused as asked")
        return {"echo": args}

    server.register("echo", echo)
    with pytest.raises(ValueError, match="registered twice"):
        server.register("echo", echo)
    client = commands(5)
    replies = [
        (await _request(client, {1: (name, args)}))[1]
        for name, args in [
            ("echo", {"n": 1}),
            ("echo", {"refuse": True}),
            ("shred", {}),
        ]
    ]
    assert replies[0] == BrokerReply(1, True, result={"echo": {"n": 1}})
    assert (replies[1].ok, replies[1].error) == (False, "refused as asked")
    assert (replies[2].ok, replies[2].error) == (False, "unknown command 'shred'")


async def test_a_broker_without_a_lease_or_an_answer_is_an_error_not_a_hang(
    make_server: Callable[[int], CommandServer], commands: Callable[[float], CommandClient]
) -> None:
    make_server(1)  # serves nothing under "slow"
    replies = await _request(commands(0.5), {1: ("slow", {}), 7: ("echo", {})})
    assert replies[7] == BrokerReply(7, False, error="broker is not alive")
    assert not replies[1].ok


async def test_an_expired_command_is_dropped_unanswered(
    make_server: Callable[[int], CommandServer], commands: Callable[[float], CommandClient]
) -> None:
    server = make_server(1)
    ran: list[dict[str, Any]] = []

    async def record(args: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {}

    server.register("record", record)
    await asyncio.sleep(0.2)
    expired = commands(-1.0)  # its deadline passed before it was sent
    reply_to = await asyncio.to_thread(expired.send, 1, "record", {"late": True})
    replies = await _request(commands(5), {1: ("record", {"late": False})})
    assert replies[1].ok
    assert ran == [{"late": False}]
    assert not expired.redis.exists(reply_to)


class _Coordinator:
    """The two calls the group rebalance command makes on a group coordinator."""

    def __init__(self, groups: dict[str, ErrorCode]) -> None:
        self.groups = groups
        self.rebalanced: list[str] = []

    def coordinates(self, group_id: str) -> bool:
        return group_id in self.groups

    def force_rebalance(self, group_id: str) -> ErrorCode:
        self.rebalanced.append(group_id)
        return self.groups[group_id]


async def test_a_group_rebalance_reaches_the_coordinating_broker_only(
    make_server: Callable[[int], CommandServer], commands: Callable[[float], CommandClient]
) -> None:
    elsewhere, coordinator = _Coordinator({}), _Coordinator({"live": ErrorCode.none})
    coordinator.groups["empty"] = ErrorCode.group_id_not_found
    register_group_commands(make_server(1), elsewhere)  # type: ignore[arg-type]
    register_group_commands(make_server(2), coordinator)  # type: ignore[arg-type]
    await asyncio.sleep(0.2)

    def rebalance(group: str, timeout_s: float = 5) -> ErrorCode:
        return force_group_rebalance(commands(timeout_s), group_id=group, broker_ids=[1, 2])

    assert await asyncio.to_thread(rebalance, "live") is ErrorCode.none
    assert await asyncio.to_thread(rebalance, "empty") is ErrorCode.group_id_not_found
    assert await asyncio.to_thread(rebalance, "nobody's", 1) is ErrorCode.coordinator_not_available
    assert (elsewhere.rebalanced, coordinator.rebalanced) == ([], ["live", "empty"])

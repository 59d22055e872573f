"""The reconnection policy of ``weir.metadata.redis_url`` against a real ``redis-server``.

A real server because what matters is what the server may have run: each test sends a
command to a stopped (SIGSTOP) server, so it sits unread in the socket, then kills the
server and starts a fresh one on the same port. The reply is lost; a read is repeated on the
new server, a write is not (its caller must find out whether it happened), and a connection
that died while idle is replaced before anything is written to it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from tests.conftest import RedisServer
from weir.metadata.redis_url import aclose_client, async_client, close_client, sync_client


def _lose_the_reply(server: RedisServer, send: Callable[[], Any]) -> Any:
    """Run ``send`` while the server is stopped, kill and restart it; ``send``'s result (or
    the exception it raised)."""
    assert server.proc is not None
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(send())
        except redis.RedisError as exc:
            outcome.append(exc)

    os.kill(server.proc.pid, signal.SIGSTOP)
    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)  # the command reaches the stopped server's socket
    server.proc.kill()
    server.proc.wait()
    server.start()
    thread.join(30)
    assert outcome, "the command never returned"
    return outcome[0]


def test_a_read_whose_reply_was_lost_is_repeated_on_the_restarted_server(
    make_redis_server: Callable[[], RedisServer],
) -> None:
    server = make_redis_server()
    client = sync_client(server.url, decode_responses=True)
    try:
        client.set("k", "before")
        # The restarted server has no data (no persistence): the repeated GET finds nothing.
        assert _lose_the_reply(server, lambda: client.get("k")) is None
    finally:
        close_client(client)


def test_a_write_whose_reply_was_lost_is_not_repeated(
    make_redis_server: Callable[[], RedisServer],
) -> None:
    server = make_redis_server()
    client = sync_client(server.url, decode_responses=True)
    try:
        client.ping()
        script = "return redis.call('incr', KEYS[1])"
        failed = _lose_the_reply(server, lambda: client.eval(script, 1, "n"))
        assert isinstance(failed, redis.ConnectionError)
        assert client.get("n") is None  # the new server never ran it
        assert client.eval(script, 1, "n") == 1  # and the client works again
    finally:
        close_client(client)


def test_a_connection_that_died_while_idle_is_replaced_before_a_write(
    make_redis_server: Callable[[], RedisServer],
) -> None:
    """redis-py 8's pools skip this check while "maintenance notifications" are on (their
    default); the first write after a restart then failed with "Connection closed by
    server."."""
    server = make_redis_server()

    async def scenario() -> Any:
        client = async_client(server.url, decode_responses=True)
        try:
            await client.set("k", "1")
            await asyncio.to_thread(server.restart)
            return await client.eval("return redis.call('set', KEYS[1], '2')", 1, "k")
        finally:
            await aclose_client(client)

    assert asyncio.run(scenario()) == "OK"


def test_a_timeout_after_sending_is_not_retried(
    make_redis_server: Callable[[], RedisServer],
) -> None:
    server = make_redis_server()
    assert server.proc is not None
    client = sync_client(server.url, socket_timeout=0.5)
    try:
        client.ping()
        os.kill(server.proc.pid, signal.SIGSTOP)
        with pytest.raises(redis.TimeoutError):
            client.get("k")
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
        close_client(client)

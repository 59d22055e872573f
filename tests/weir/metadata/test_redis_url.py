"""WEIR_REDIS_URL: plain and Sentinel URLs parse as the contract says, bad ones are refused
naming the problem, and a Sentinel URL reaches the primary through a real redis-sentinel."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from tests.conftest import REDIS_SERVER, RedisServer
from weir.metadata.redis_url import (
    aclose_client,
    async_client,
    close_client,
    parse_redis_url,
    sync_client,
)


def test_plain_urls_are_passed_through() -> None:
    for url in ("redis://127.0.0.1:6379/0", "rediss://:pw@example:6380/2"):
        target = parse_redis_url(url)
        assert not target.is_sentinel and target.url == url


def test_sentinel_url_names_the_sentinels_service_db_and_password() -> None:
    target = parse_redis_url("redis+sentinel://:s%40cret@h1:26379,h2:26380,h3/weir/3")
    assert target.is_sentinel
    assert target.sentinels == (("h1", 26379), ("h2", 26380), ("h3", 26379))
    assert (target.service_name, target.db, target.password) == ("weir", 3, "s@cret")
    assert parse_redis_url("redis+sentinel://h1:26379/weir").db == 0


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://h:1/0", "the scheme must be"),
        ("redis+sentinel://h1:26379", "service name is missing"),
        ("redis+sentinel:///weir", "no sentinel host"),
        ("redis+sentinel://h1:x/weir", "port 'x' is not a number"),
        ("redis+sentinel://h1:70000/weir", "out of range"),
        ("redis+sentinel://h1:26379/weir/x", "db 'x' is not a number"),
        ("redis+sentinel://h1:26379/weir/1/2", "expected /<service_name>[/<db>]"),
    ],
)
def test_bad_urls_are_refused_naming_the_problem(url: str, says: str) -> None:
    with pytest.raises(ValueError, match="WEIR_REDIS_URL") as raised:
        parse_redis_url(url)
    assert says in str(raised.value)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sentinel_url(make_redis_server: Callable[[], RedisServer], tmp_path: Path) -> Iterator[str]:
    """A real primary and one redis-sentinel monitoring it as service ``weir``."""
    primary = make_redis_server()
    port = _free_port()
    conf = tmp_path / "sentinel.conf"
    conf.write_text(
        f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\n"
        f"sentinel monitor weir 127.0.0.1 {primary.port} 1\n"
    )
    proc = subprocess.Popen(
        [REDIS_SERVER, str(conf), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.sentinel_get_master_addr_by_name("weir"):
                    break
            except redis.ConnectionError:
                pass
            assert time.monotonic() < deadline, "redis-sentinel did not come up"
            time.sleep(0.05)
        client.close()
        yield f"redis+sentinel://127.0.0.1:{port}/weir/0"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_sentinel_url_reaches_the_primary(sentinel_url: str) -> None:
    client = sync_client(sentinel_url, socket_timeout=2, decode_responses=True)
    try:
        client.set("weir:test", "through the sentinel")
        assert client.get("weir:test") == "through the sentinel"
        assert client.info("replication")["role"] == "master"
    finally:
        close_client(client)

    async def read() -> str | None:
        aclient = async_client(sentinel_url, socket_timeout=2, decode_responses=True)
        try:
            return await aclient.get("weir:test")
        finally:
            await aclose_client(aclient)

    assert asyncio.run(read()) == "through the sentinel"

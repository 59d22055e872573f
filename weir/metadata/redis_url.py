"""``WEIR_REDIS_URL``: one Redis, or a Redis Sentinel deployment that names the primary.

The contract (DESIGN.md) accepts three forms:

* ``redis://[[user]:password@]host:port[/db]`` and ``rediss://...`` (TLS): one server, as
  redis-py's ``from_url`` reads it;
* ``redis+sentinel://[:password@]host1:26379,host2:26379,host3:26379/<service_name>[/<db>]``:
  the sentinels of a Sentinel deployment and the name of the primary they monitor. The
  password is the primary's (Sentinel's ``requirepass``-protected data nodes); the sentinels
  themselves are asked without one.

:func:`parse_redis_url` turns a URL into a :class:`RedisTarget` or raises ``ValueError``
naming what is wrong, so every process refuses a bad URL the same way before connecting.
:func:`sync_client` and :func:`async_client` build the redis-py client for either form: a
plain client from the URL, or a client that asks the sentinels for the current primary on
every (re)connection (redis-py's ``Sentinel.master_for``), so a process follows the primary
across failovers without a restart.

This module only connects. What makes a metadata write survive a failover (WAIT,
``min-replicas-to-write``, lease grace) is the metadata store's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.sentinel import Sentinel

from weir.metadata.sentinel_pool import FollowingSentinelPool

__all__ = [
    "SENTINEL_SCHEME",
    "RedisTarget",
    "aclose_client",
    "async_client",
    "close_client",
    "parse_redis_url",
    "sync_client",
]

SENTINEL_SCHEME = "redis+sentinel"
_PLAIN_SCHEMES = ("redis", "rediss", "unix")
_DEFAULT_SENTINEL_PORT = 26379


@dataclass(frozen=True, kw_only=True)
class RedisTarget:
    """Where Weir's Redis is: ``url`` itself, or a Sentinel service."""

    url: str
    sentinels: tuple[tuple[str, int], ...] = ()
    service_name: str = ""
    db: int = 0
    password: str | None = None

    @property
    def is_sentinel(self) -> bool:
        return bool(self.sentinels)


def _sentinel_hosts(netloc_hosts: str, url: str) -> tuple[tuple[str, int], ...]:
    hosts = []
    for part in netloc_hosts.split(","):
        host, sep, port_text = part.strip().rpartition(":")
        if not sep:
            host, port_text = port_text, str(_DEFAULT_SENTINEL_PORT)
        host = host.strip("[]")
        if not host:
            raise ValueError(f"WEIR_REDIS_URL {url!r}: a sentinel address has no host")
        try:
            port = int(port_text)
        except ValueError:
            raise ValueError(
                f"WEIR_REDIS_URL {url!r}: sentinel port {port_text!r} is not a number"
            ) from None
        if not 0 < port < 65536:
            raise ValueError(f"WEIR_REDIS_URL {url!r}: sentinel port {port} is out of range")
        hosts.append((host, port))
    return tuple(hosts)


def parse_redis_url(url: str) -> RedisTarget:
    """The target ``url`` names; ``ValueError`` (naming the problem) for a bad one."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme in _PLAIN_SCHEMES:
        return RedisTarget(url=url)
    if scheme != SENTINEL_SCHEME:
        raise ValueError(
            f"WEIR_REDIS_URL {url!r}: the scheme must be redis://, rediss:// or "
            f"{SENTINEL_SCHEME}://"
        )
    rest = url.split("://", 1)[1]
    netloc, _, path = rest.partition("/")
    credentials, at, hosts = netloc.rpartition("@")
    password = None
    if at:
        password = unquote(credentials.partition(":")[2]) or None
    if not hosts:
        raise ValueError(f"WEIR_REDIS_URL {url!r}: no sentinel host:port is given")
    segments = [s for s in urlsplit(f"x:///{path}").path.split("/") if s]
    if not segments:
        raise ValueError(f"WEIR_REDIS_URL {url!r}: the sentinel service name is missing")
    if len(segments) > 2:
        raise ValueError(
            f"WEIR_REDIS_URL {url!r}: expected /<service_name>[/<db>] after the sentinels"
        )
    db = 0
    if len(segments) == 2:
        try:
            db = int(segments[1])
        except ValueError:
            raise ValueError(
                f"WEIR_REDIS_URL {url!r}: db {segments[1]!r} is not a number"
            ) from None
    return RedisTarget(
        url=url,
        sentinels=_sentinel_hosts(hosts, url),
        service_name=unquote(segments[0]),
        db=db,
        password=password,
    )


def _client(url: str, options: dict[str, Any], plain: Any, sentinel_class: Any) -> Any:
    """``plain.from_url(url)``, or the primary of a Sentinel URL through ``sentinel_class``."""
    target = parse_redis_url(url)
    if not target.is_sentinel:
        return plain.from_url(url, **options)
    sentinel = sentinel_class(list(target.sentinels), **_sentinel_options(options))
    if sentinel_class is AsyncSentinel:
        # Connections opened before a failover must not linger on the old primary.
        options = {**options, "connection_pool_class": FollowingSentinelPool}
    return sentinel.master_for(
        target.service_name, db=target.db, password=target.password, **options
    )


def sync_client(url: str, **options: Any) -> redis.Redis:
    """A redis-py client for ``url`` (``options``: client keywords such as timeouts)."""
    return _client(url, options, redis.Redis, Sentinel)


def async_client(url: str, **options: Any) -> aioredis.Redis:
    """The asyncio counterpart of :func:`sync_client`."""
    return _client(url, options, aioredis.Redis, AsyncSentinel)


def _sentinel_options(options: dict[str, Any]) -> dict[str, Any]:
    """The timeouts apply to the sentinels too; nothing else does (no password, no db)."""
    keep = ("socket_timeout", "socket_connect_timeout")
    return {"sentinel_kwargs": {k: options[k] for k in keep if k in options}}


def _sentinel_clients(client: Any) -> list[Any]:
    """The connections to the sentinels behind a Sentinel-made client (none for plain)."""
    manager = getattr(client.connection_pool, "sentinel_manager", None)
    return list(manager.sentinels) if manager is not None else []


def close_client(client: redis.Redis) -> None:
    """Close a client from :func:`sync_client`, its sentinel connections included."""
    for sentinel in _sentinel_clients(client):
        sentinel.close()
    client.close()


async def aclose_client(client: aioredis.Redis) -> None:
    """Close a client from :func:`async_client`, its sentinel connections included."""
    for sentinel in _sentinel_clients(client):
        await sentinel.aclose()
    await client.aclose()

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

Reconnection policy
-------------------
redis-py's clients built from a URL or through ``Sentinel.master_for`` do not retry at all
(their connections get ``Retry(NoBackoff(), 0)``; only ``Redis(host=...)`` gets the
10-retry default), so the first command after a Redis restart or a failover met the pooled
connection to the old server and failed ("Connection closed by server."). Every client made
here instead gets:

* a :class:`ReconnectRetry`: connection errors (refused, reset, closed, ``LOADING``, a
  primary demoted to replica, no primary known yet) are retried with jittered exponential
  backoff for at most :data:`RECONNECT_BUDGET_S` seconds, which covers a Sentinel failover;
* the pool's check of a connection it hands out (data pending or closed by the server:
  reconnect first). redis-py 8 skips that check while "maintenance notifications" are on,
  and they are on by default ("auto", a Redis Enterprise feature that open-source Redis
  and Sentinel do not offer), so Weir turns them off;
* a health check (``PING`` before using a connection idle for
  :data:`HEALTH_CHECK_INTERVAL_S`), so a connection that died while idle is replaced
  before a command is written to it;
* a client class that knows which retries are safe. A failure while *connecting or
  writing* the command is always retried: the server cannot have run a command it did not
  receive whole. A failure while *reading the reply* is retried only for read-only commands
  (:data:`READ_ONLY_COMMANDS`) or when the server refused the command (``READONLY``,
  ``LOADING``): a Lua script or any other write may have been applied, and re-running it is
  the caller's decision (the metadata store's scripts are fenced and say "exists" when they
  see their own effect). A timeout after the command was sent is never retried: the server
  may still be running it, and waiting again would only lengthen the wait the caller chose
  with ``socket_timeout``. Pipelines follow the same rule as a whole.

Other libraries' clients (Channels' layer, Celery) get the same :class:`ReconnectRetry` and
health check through :func:`connection_options`; they retry every command on a connection
error, which suits what they send (see ``controlplane/redis_config.py``).

This module only connects. What makes a metadata write survive a failover (WAIT,
``min-replicas-to-write``, lease grace) is the metadata store's business.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import redis
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline as AsyncPipeline
from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import (
    SentinelManagedConnection as AsyncSentinelManagedConnection,
)
from redis.backoff import EqualJitterBackoff
from redis.client import Pipeline
from redis.exceptions import BusyLoadingError, ReadOnlyError, ResponseError
from redis.maint_notifications import MaintNotificationsConfig
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelManagedConnection

from weir.metadata.sentinel_pool import FollowingSentinelPool

__all__ = [
    "HEALTH_CHECK_INTERVAL_S",
    "READ_ONLY_COMMANDS",
    "RECONNECT_BUDGET_S",
    "SENTINEL_SCHEME",
    "AsyncReconnectRetry",
    "AsyncSentinelConnection",
    "ReconnectRetry",
    "RedisTarget",
    "SentinelConnection",
    "aclose_client",
    "async_client",
    "close_client",
    "connection_options",
    "parse_redis_url",
    "sync_client",
]

SENTINEL_SCHEME = "redis+sentinel"
_PLAIN_SCHEMES = ("redis", "rediss", "unix")
_DEFAULT_SENTINEL_PORT = 26379

T = TypeVar("T")

# How long a command keeps retrying connection errors: a Sentinel failover (down-after
# time plus election and promotion, ~7 s with the tests' 1 s down-after) and a Redis
# restart from its AOF fit in it.
RECONNECT_BUDGET_S = 15.0
# A pooled connection idle longer than this is PINGed before its next command.
HEALTH_CHECK_INTERVAL_S = 1
# Backoff between attempts: 50 ms doubling to 1 s, each between half and all of that.
_BACKOFF_BASE_S = 0.05
_BACKOFF_CAP_S = 1.0

# Commands whose retry after the server may have run them changes nothing.
READ_ONLY_COMMANDS = frozenset(
    [
        "DBSIZE",
        "ECHO",
        "EVALSHA_RO",
        "EVAL_RO",
        "EXISTS",
        "GET",
        "GETRANGE",
        "HEXISTS",
        "HGET",
        "HGETALL",
        "HKEYS",
        "HLEN",
        "HMGET",
        "HSCAN",
        "HSTRLEN",
        "HVALS",
        "INFO",
        "KEYS",
        "LINDEX",
        "LLEN",
        "LPOS",
        "LRANGE",
        "MGET",
        "PING",
        "PTTL",
        "ROLE",
        "SCAN",
        "SCARD",
        "SISMEMBER",
        "SMEMBERS",
        "SMISMEMBER",
        "SRANDMEMBER",
        "SSCAN",
        "STRLEN",
        "TIME",
        "TTL",
        "TYPE",
        "XINFO",
        "XLEN",
        "XPENDING",
        "XRANGE",
        "XREAD",
        "XREVRANGE",
        "ZCARD",
        "ZCOUNT",
        "ZRANGE",
        "ZRANGEBYSCORE",
        "ZRANK",
        "ZREVRANGE",
        "ZREVRANGEBYSCORE",
        "ZREVRANK",
        "ZSCAN",
        "ZSCORE",
    ]
)
_NO_REPLICAS = "NOREPLICAS"
# Set on an error a retry must not repeat (see the module docstring).
_NO_RETRY = "_weir_no_retry"


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


# the retry policy ------------------------------------------------------------------------


def _backoff() -> EqualJitterBackoff:
    return EqualJitterBackoff(cap=_BACKOFF_CAP_S, base=_BACKOFF_BASE_S)


def _retryable_until(
    deadline: float, is_retryable: Callable[[Exception], bool] | None
) -> Callable[[Exception], bool]:
    def retryable(error: Exception) -> bool:
        if getattr(error, _NO_RETRY, False) or time.monotonic() > deadline:
            return False
        return is_retryable is None or is_retryable(error)

    return retryable


class ReconnectRetry(Retry):
    """redis-py's ``Retry`` bounded by time (:data:`RECONNECT_BUDGET_S`) rather than by a
    count, and refusing errors marked unsafe to repeat."""

    def __init__(self, budget_s: float = RECONNECT_BUDGET_S) -> None:
        super().__init__(_backoff(), -1)
        self.budget_s = budget_s

    def call_with_retry(
        self,
        do: Callable[[], T],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        retryable = _retryable_until(time.monotonic() + self.budget_s, is_retryable)
        return super().call_with_retry(do, fail, retryable, with_failure_count)


class AsyncReconnectRetry(AsyncRetry):
    """The asyncio counterpart of :class:`ReconnectRetry`."""

    def __init__(self, budget_s: float = RECONNECT_BUDGET_S) -> None:
        super().__init__(_backoff(), -1)
        self.budget_s = budget_s

    async def call_with_retry(
        self,
        do: Callable[[], Awaitable[T]],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        retryable = _retryable_until(time.monotonic() + self.budget_s, is_retryable)
        return await super().call_with_retry(do, fail, retryable, with_failure_count)


class SentinelConnection(SentinelManagedConnection):
    """A connection to the primary the sentinels name *now*.

    redis-py reconnects a dropped connection inside ``send_packed_command`` through
    ``connect_check_health``, which retries the address the connection had, that is the
    primary that just died: for the whole retry budget, while the sentinels already name
    another. Only ``connect()`` asks the sentinels again (on every attempt), so every
    reconnection goes through it.

    A primary with no replica in sync refuses writes (``min-replicas-to-write``: NOREPLICAS,
    before the command or a script's first write runs), which happens for a second or two
    after a failover while the other replica resynchronises. Like redis-py's own READONLY
    (an old primary now a replica), it is turned into a ``ConnectionError``, so the retry
    waits it out and other libraries (kombu) reconnect instead of giving up."""

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except ResponseError as exc:
            if not str(exc).startswith(_NO_REPLICAS):
                raise
            self.disconnect()
            raise redis.ConnectionError(f"the primary refused a write: {exc}") from exc

    def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if retry_socket_connect:  # a reconnection, not connect()'s own attempt
            return self.connect()
        return super().connect_check_health(check_health=check_health, retry_socket_connect=False)


class AsyncSentinelConnection(AsyncSentinelManagedConnection):
    """The asyncio counterpart of :class:`SentinelConnection`."""

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except ResponseError as exc:
            if not str(exc).startswith(_NO_REPLICAS):
                raise
            await self.disconnect()
            raise redis.ConnectionError(f"the primary refused a write: {exc}") from exc

    async def connect_check_health(
        self, check_health: bool = True, retry_socket_connect: bool = True
    ) -> None:
        if retry_socket_connect:
            return await self.connect()
        return await super().connect_check_health(
            check_health=check_health, retry_socket_connect=False
        )


def connection_options(*, asynchronous: bool, sentinel: bool = False) -> dict[str, Any]:
    """The retry and health-check keywords of a redis-py connection (pool) of Weir's; with
    ``sentinel``, also the connection class of a Sentinel-managed pool."""
    options: dict[str, Any] = {
        "retry": AsyncReconnectRetry() if asynchronous else ReconnectRetry(),
        "health_check_interval": HEALTH_CHECK_INTERVAL_S,
        "maint_notifications_config": MaintNotificationsConfig(enabled=False),
    }
    if sentinel:
        options["connection_class"] = (
            AsyncSentinelConnection if asynchronous else SentinelConnection
        )
    return options


def _refused(error: Exception) -> bool:
    """The server answered that it did not run the command: still loading its data, a
    former primary that is a replica now (redis-py's Sentinel connection turns READONLY
    into a ConnectionError) or a primary with no replica in sync (NOREPLICAS, turned so by
    :class:`SentinelConnection`)."""
    cause = error.__context__
    return (
        isinstance(error, BusyLoadingError)
        or isinstance(cause, ReadOnlyError)
        or (isinstance(cause, ResponseError) and str(cause).startswith(_NO_REPLICAS))
    )


def _mark_reply_lost(error: Exception, commands: Iterable[str]) -> Exception:
    """Mark ``error`` (raised after the command(s) were sent) unsafe to retry unless every
    command only reads, or the server refused them; timeouts are never retried."""
    names = [str(name).upper() for name in commands]
    safe = all(name in READ_ONLY_COMMANDS for name in names)
    if isinstance(error, redis.TimeoutError) or not (safe or _refused(error)):
        setattr(error, _NO_RETRY, True)
    return error


def _stack_names(commands: Iterable[tuple[tuple[Any, ...], Any]]) -> list[str]:
    return [str(args[0]).split(" ", 1)[0] for args, _ in commands]


_LOST = (redis.ConnectionError, redis.TimeoutError)


class _Redis(redis.Redis):
    """A client that retries only what is safe to retry (see the module docstring)."""

    def _send_command_parse_response(
        self, conn: Any, command_name: str, *args: Any, **options: Any
    ) -> Any:
        conn.send_command(*args)  # connects and health-checks first: failures retry
        try:
            return self.parse_response(conn, command_name, **options)
        except _LOST as exc:
            raise _mark_reply_lost(exc, [command_name]) from None

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Pipeline:
        return _Pipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)


class _Pipeline(Pipeline):
    def _execute_transaction(self, connection: Any, commands: Any, raise_on_error: bool) -> Any:
        try:
            return super()._execute_transaction(connection, commands, raise_on_error)
        except _LOST as exc:
            raise _mark_reply_lost(exc, ["MULTI", *_stack_names(commands)]) from None

    def _execute_pipeline(self, connection: Any, commands: Any, raise_on_error: bool) -> Any:
        try:
            return super()._execute_pipeline(connection, commands, raise_on_error)
        except _LOST as exc:
            raise _mark_reply_lost(exc, _stack_names(commands)) from None


class _AsyncRedis(aioredis.Redis):
    """The asyncio counterpart of :class:`_Redis`."""

    async def _send_command_parse_response(
        self, conn: Any, command_name: str, *args: Any, **options: Any
    ) -> Any:
        await conn.send_command(*args)
        try:
            return await self.parse_response(conn, command_name, **options)
        except _LOST as exc:
            raise _mark_reply_lost(exc, [command_name]) from None

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> AsyncPipeline:
        return _AsyncPipeline(
            self.connection_pool, self.response_callbacks, transaction, shard_hint
        )


class _AsyncPipeline(AsyncPipeline):
    async def _execute_transaction(
        self, connection: Any, commands: Any, raise_on_error: bool
    ) -> Any:
        try:
            return await super()._execute_transaction(connection, commands, raise_on_error)
        except _LOST as exc:
            raise _mark_reply_lost(exc, ["MULTI", *_stack_names(commands)]) from None

    async def _execute_pipeline(self, connection: Any, commands: Any, raise_on_error: bool) -> Any:
        try:
            return await super()._execute_pipeline(connection, commands, raise_on_error)
        except _LOST as exc:
            raise _mark_reply_lost(exc, _stack_names(commands)) from None


# clients -----------------------------------------------------------------------------------


def _client(
    url: str, options: dict[str, Any], plain: Any, sentinel_class: Any, asynchronous: bool
) -> Any:
    """``plain.from_url(url)``, or the primary of a Sentinel URL through ``sentinel_class``,
    with the retry policy unless ``options`` bring their own."""
    target = parse_redis_url(url)
    defaults = connection_options(asynchronous=asynchronous, sentinel=target.is_sentinel)
    options = {**defaults, **options}
    if not target.is_sentinel:
        return plain.from_url(url, **options)
    sentinel = sentinel_class(list(target.sentinels), **_sentinel_options(options))
    if sentinel_class is AsyncSentinel:
        # Connections opened before a failover must not linger on the old primary.
        options = {**options, "connection_pool_class": FollowingSentinelPool}
    return sentinel.master_for(
        target.service_name,
        redis_class=plain,
        db=target.db,
        password=target.password,
        **options,
    )


def sync_client(url: str, **options: Any) -> redis.Redis:
    """A redis-py client for ``url`` (``options``: client keywords such as timeouts)."""
    return _client(url, options, _Redis, Sentinel, asynchronous=False)


def async_client(url: str, **options: Any) -> aioredis.Redis:
    """The asyncio counterpart of :func:`sync_client`."""
    return _client(url, options, _AsyncRedis, AsyncSentinel, asynchronous=True)


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

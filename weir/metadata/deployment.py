"""What the coordination store is right now: ``describe_coordination(url, cluster_id)``.

Theory of operation
-------------------
For a ``redis+sentinel://`` URL every sentinel of the URL is asked (``SENTINEL MASTER``,
``SENTINEL REPLICAS``): how many answer, the quorum, the primary's address, and each replica
with its link status and replication offset. The primary itself is asked for its own offset
(``INFO replication``), so a replica's lag in bytes is the primary's ``master_repl_offset``
minus the replica's offset. For a plain ``redis://`` URL the one server describes itself:
role, AOF on/off and fsync policy, ``min-replicas-to-write``, used memory.

**The last failover.** Sentinel keeps no history of failovers, so Weir records one: every
call compares the primary (address and run id) with the one recorded in
``weir:{cluster_id}:coordination:primary`` and, when the *address* changed, pushes ``{at_ms,
from, to}`` onto ``coordination:failovers`` (newest first, the last
:data:`FAILOVERS_KEPT`). The compare and the write are one Lua script on the primary, so two
callers noticing the same change record it once. The time is when Weir noticed: the control
plane's monitor calls this every few seconds (``brokers.periodic``), so it is that late at
most while the monitor runs. A primary that restarted on the same address (new run id) is a
restart, not a failover: only the record is updated. Both keys are runtime state of *this*
deployment and are never exported (``weir.metadata.snapshot_file``).

Nothing here raises for an unreachable node: it is described as unreachable, with the error.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import redis
from redis.exceptions import RedisError, ResponseError

from weir.metadata.keys import KeyLayout
from weir.metadata.redis_url import RedisTarget, close_client, parse_redis_url, sync_client

__all__ = ["FAILOVERS_KEPT", "CoordinationState", "Failover", "RedisNode", "describe_coordination"]

FAILOVERS_KEPT = 20
_TIMEOUT_S = 1.0

# KEYS: coordination:primary, coordination:failovers.
# ARGV: address, run id, now ms, failovers kept. Returns 1 when a failover was recorded.
_RECORD_PRIMARY = """
local raw = redis.call('GET', KEYS[1])
local current = cjson.encode({address = ARGV[1], run_id = ARGV[2], since_ms = tonumber(ARGV[3])})
if not raw then redis.call('SET', KEYS[1], current) return 0 end
local known = cjson.decode(raw)
if known['address'] == ARGV[1] then
  if known['run_id'] ~= ARGV[2] then
    known['run_id'] = ARGV[2]
    redis.call('SET', KEYS[1], cjson.encode(known))
  end
  return 0
end
redis.call('SET', KEYS[1], current)
redis.call('LPUSH', KEYS[2], cjson.encode({at_ms = tonumber(ARGV[3]), from = known['address'],
                                           to = ARGV[1]}))
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[4]) - 1)
return 1
"""


@dataclass(frozen=True, slots=True)
class RedisNode:
    """One redis-server as seen from here (None: not known or not asked)."""

    address: str
    role: str = ""
    reachable: bool = True
    error: str = ""
    run_id: str = ""
    link_status: str = ""
    replication_offset: int | None = None
    lag_bytes: int | None = None
    aof_enabled: bool | None = None
    appendfsync: str = ""
    min_replicas_to_write: int | None = None
    used_memory_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Failover:
    at_ms: int
    from_address: str
    to_address: str


@dataclass(frozen=True, slots=True)
class CoordinationState:
    """The deployment: ``kind`` is ``sentinel`` or ``single``."""

    kind: str
    primary: RedisNode | None
    service_name: str = ""
    replicas: tuple[RedisNode, ...] = ()
    sentinels_total: int = 0
    sentinels_reachable: int = 0
    quorum: int | None = None
    failovers: tuple[Failover, ...] = field(default_factory=tuple)
    error: str = ""

    @property
    def last_failover(self) -> Failover | None:
        return self.failovers[0] if self.failovers else None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["last_failover"] = None if self.last_failover is None else asdict(self.last_failover)
        return data


def _address(host: Any, port: Any) -> str:
    return f"{host}:{port}"


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _config(client: redis.Redis, name: str) -> str | None:
    """A CONFIG GET value, or None where CONFIG is disabled (managed Redis services)."""
    try:
        return client.config_get(name).get(name)
    except ResponseError:
        return None


def _describe_server(client: redis.Redis, address: str) -> RedisNode:
    info = client.info()
    aof = info.get("aof_enabled")
    return RedisNode(
        address=address,
        role="primary" if info.get("role") == "master" else "replica",
        run_id=str(info.get("run_id", "")),
        link_status=str(info.get("master_link_status", "")),
        replication_offset=_int(info.get("master_repl_offset")),
        aof_enabled=None if aof is None else bool(int(aof)),
        appendfsync=_config(client, "appendfsync") or "",
        min_replicas_to_write=_int(_config(client, "min-replicas-to-write")),
        used_memory_bytes=_int(info.get("used_memory")),
    )


def _record_primary(
    client: redis.Redis, keys: KeyLayout, primary: RedisNode, now_ms: int
) -> tuple[Failover, ...]:
    with contextlib.suppress(RedisError):  # a primary refusing writes is still described
        client.eval(
            _RECORD_PRIMARY,
            2,
            keys.key("coordination:primary"),
            keys.key("coordination:failovers"),
            primary.address,
            primary.run_id,
            now_ms,
            FAILOVERS_KEPT,
        )
    records = client.lrange(keys.key("coordination:failovers"), 0, -1)
    return tuple(
        Failover(int(r["at_ms"]), str(r["from"]), str(r["to"]))
        for r in (json.loads(raw) for raw in records)
    )


def _describe_single(target: RedisTarget, keys: KeyLayout, now_ms: int) -> CoordinationState:
    client = sync_client(
        target.url,
        decode_responses=True,
        socket_timeout=_TIMEOUT_S,
        socket_connect_timeout=_TIMEOUT_S,
    )
    kwargs = client.connection_pool.connection_kwargs
    address = kwargs.get("path") or _address(kwargs.get("host"), kwargs.get("port"))
    try:
        primary = _describe_server(client, str(address))
        failovers = _record_primary(client, keys, primary, now_ms)
    except (RedisError, OSError) as exc:
        return CoordinationState(
            kind="single",
            primary=RedisNode(address=str(address), reachable=False, error=str(exc)),
            error=f"the Redis at {address} does not answer: {exc}",
        )
    finally:
        close_client(client)
    return CoordinationState(kind="single", primary=primary, failovers=failovers)


def _ask_sentinels(target: RedisTarget) -> tuple[int, dict[str, Any] | None, list[dict]]:
    """(sentinels that answered, the primary as the first of them sees it, its replicas)."""
    reachable, master, replicas = 0, None, []
    for host, port in target.sentinels:
        sentinel = redis.Redis(
            host=host,
            port=port,
            decode_responses=True,
            socket_timeout=_TIMEOUT_S,
            socket_connect_timeout=_TIMEOUT_S,
        )
        try:
            seen = sentinel.sentinel_master(target.service_name)
            seen_replicas = sentinel.sentinel_slaves(target.service_name)
        except (RedisError, OSError):
            continue
        finally:
            sentinel.close()
        reachable += 1
        if master is None:
            master, replicas = seen, seen_replicas
    return reachable, master, replicas


def _describe_replica(
    seen: dict[str, Any], target: RedisTarget, primary_offset: int | None
) -> RedisNode:
    """A replica the sentinels know, asked itself for its link and offset (the sentinels'
    view is refreshed only every 10 s); the sentinels' view when it does not answer."""
    address = _address(seen["ip"], seen["port"])
    client = redis.Redis(
        host=seen["ip"],
        port=int(seen["port"]),
        password=target.password,
        decode_responses=True,
        socket_timeout=_TIMEOUT_S,
        socket_connect_timeout=_TIMEOUT_S,
    )
    try:
        info = client.info("replication")
        link, offset, error = str(info.get("master_link_status", "")), None, ""
        offset = _int(info.get("slave_repl_offset"))
        reachable = True
    except (RedisError, OSError) as exc:
        link, offset, error, reachable = (
            "down",
            _int(seen.get("slave-repl-offset")),
            str(exc),
            False,
        )
    finally:
        client.close()
    lag = None if offset is None or primary_offset is None else max(0, primary_offset - offset)
    return RedisNode(
        address=address,
        role="replica",
        reachable=reachable,
        error=error,
        run_id=str(seen.get("runid", "")),
        link_status=link,
        replication_offset=offset,
        lag_bytes=lag,
    )


def _describe_sentinel(target: RedisTarget, keys: KeyLayout, now_ms: int) -> CoordinationState:
    reachable, master, seen_replicas = _ask_sentinels(target)
    base = {
        "kind": "sentinel",
        "service_name": target.service_name,
        "sentinels_total": len(target.sentinels),
        "sentinels_reachable": reachable,
    }
    if master is None:
        return CoordinationState(
            primary=None,
            error=f"no sentinel of {target.service_name!r} answers",
            **base,  # type: ignore[arg-type]
        )
    address = _address(master["ip"], master["port"])
    client = redis.Redis(
        host=master["ip"],
        port=int(master["port"]),
        db=target.db,
        password=target.password,
        decode_responses=True,
        socket_timeout=_TIMEOUT_S,
        socket_connect_timeout=_TIMEOUT_S,
    )
    failovers: tuple[Failover, ...] = ()
    try:
        primary = _describe_server(client, address)
        failovers = _record_primary(client, keys, primary, now_ms)
    except (RedisError, OSError) as exc:
        primary = RedisNode(address=address, role="primary", reachable=False, error=str(exc))
    finally:
        client.close()
    replicas = [
        _describe_replica(seen, target, primary.replication_offset) for seen in seen_replicas
    ]
    return CoordinationState(
        primary=primary,
        replicas=tuple(sorted(replicas, key=lambda r: r.address)),
        quorum=_int(master.get("quorum")),
        failovers=failovers,
        **base,  # type: ignore[arg-type]
    )


def describe_coordination(
    url: str, *, cluster_id: str, now_ms: int | None = None
) -> CoordinationState:
    """The coordination store behind ``url``, and its failovers as recorded for the cluster."""
    target = parse_redis_url(url)
    keys = KeyLayout(cluster_id)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if target.is_sentinel:
        return _describe_sentinel(target, keys, now)
    return _describe_single(target, keys, now)

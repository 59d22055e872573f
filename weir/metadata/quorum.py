"""Metadata writes that survive a Redis failover: a write counts once a majority holds it.

Theory of operation
-------------------
Redis replicates asynchronously: a primary acknowledges a write before any replica has it,
and when Sentinel promotes a replica, whatever that replica had not received is gone. A
controller that elected a leader, or a leader that shrank its ISR, on the strength of such a
write would act on a decision the cluster then forgets -- and could later elect a replica
that is missing acknowledged records.

So, on a Sentinel deployment, no metadata write counts until it is on a *majority of the data
nodes* (the primary and ``replicas_required()`` replicas): :meth:`WriteQuorum.write` and
:meth:`WriteQuorum.run_script` send the write, then a write of the ``metadata_log_committed``
pointer (the newest ``metadata_log`` id), then ``WAIT`` for that many replicas, in one
pipeline. One pipeline is one connection, and that matters: ``WAIT`` only covers its own
connection's writes, and after a failover one pooled connection may still lead to the old
primary while a new one leads to the new. The replication stream is ordered, so a replica that
acknowledged the pointer holds every write the primary made before it, whoever made it.
Sentinel promotes the replica with the greatest replication offset among those it can reach,
so with a majority holding a write and a majority of nodes reachable, the promoted node has
it. ``WAIT`` falling short raises :class:`WriteNotReplicatedError`: the write may or may not
survive, like a ZooKeeper request that timed out, and the caller treats it as failed
(retries, or reports the error).

Readers apply the log only up to the committed pointer (``MetadataCache``): an entry above it
is confirmed first (:meth:`WriteQuorum.confirm`, the pointer write and ``WAIT`` alone: if the
majority has it now, it is committed; if not, it is not acted on). An old primary that was
isolated and comes back cannot make anyone act on what it accepted alone: its ``confirm``
fails (no replica follows it any more, and ``min-replicas-to-write`` refuses the write
outright).

The number of replicas required is derived from the deployment. A majority: the sentinels'
list of the service's replicas (``SENTINEL REPLICAS``, which keeps replicas that are down)
gives ``n``, and a majority of the ``n + 1`` data nodes is ``(n + 1) // 2`` replicas besides
the primary (1 of 2 for three nodes, 2 of 4 for five), re-read every ``REFRESH_S``. And every
replica in sync with the primary now (``INFO replication``, re-read every
``ONLINE_REFRESH_S``): Sentinel picks the replica to promote by the replication offsets it
last *polled*, which can be a second old, so with both replicas healthy it may promote the one
that had not acknowledged the newest write. Waiting for every replica in sync means any of
them may be promoted; with one replica down the majority still applies. A plain ``redis://``
URL has no failover, so it requires none and ``confirm`` costs nothing there.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.keys import KeyLayout

__all__ = [
    "ONLINE_REFRESH_S",
    "REFRESH_S",
    "WAIT_TIMEOUT_MS",
    "WriteNotReplicatedError",
    "WriteQuorum",
    "online_replicas",
    "replied_ok",
    "stream_order",
    "write_sync",
]

log = logging.getLogger("weir.metadata.quorum")

# How long a confirmation waits for the replicas: a healthy replica answers WAIT's GETACK in
# a round trip, so this is only reached when replicas are down or cut off.
WAIT_TIMEOUT_MS = 2000
# How often the number of replicas in the deployment is re-read from the sentinels.
REFRESH_S = 30.0
# How often the replicas in sync with the primary are counted (INFO replication).
ONLINE_REFRESH_S = 1.0

# Advance the committed pointer to the newest log entry (never backwards), and always write
# it, so that the WAIT that follows on this connection covers every earlier write.
# KEYS: metadata_log, metadata_log_committed
_COMMIT = """
local newest = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local current = redis.call('GET', KEYS[2]) or '0-0'
local target = current
if newest then
  local function parts(id)
    local ms, seq = string.match(id, '^(%d+)-(%d+)$')
    return tonumber(ms), tonumber(seq)
  end
  local nms, nseq = parts(newest[1])
  local cms, cseq = parts(current)
  if nms > cms or (nms == cms and nseq > cseq) then target = newest[1] end
end
redis.call('SET', KEYS[2], target)
return target
"""


class WriteNotReplicatedError(MetadataUnavailableError):
    """A write is on the primary but not (yet) on enough replicas to survive a failover."""


class WriteQuorum:
    """Confirms metadata writes on a majority of a Sentinel deployment's data nodes."""

    def __init__(
        self,
        redis: aioredis.Redis,
        keys: KeyLayout,
        *,
        wait_timeout_ms: int = WAIT_TIMEOUT_MS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.redis = redis
        self.keys = keys
        self.wait_timeout_ms = wait_timeout_ms
        self._monotonic = monotonic
        pool = redis.connection_pool
        self._sentinels: Any = getattr(pool, "sentinel_manager", None)
        self._service: str = getattr(pool, "service_name", "")
        self._known = 0
        self._majority = 0
        self._refreshed_at: float | None = None
        self._online = 0
        self._online_at = float("-inf")
        self._commit = redis.register_script(_COMMIT)

    @property
    def replicated(self) -> bool:
        """Whether this deployment has replicas to wait for (a Sentinel URL)."""
        return self._sentinels is not None

    async def replicas_required(self) -> int:
        """How many replicas besides the primary must hold a write (0: no failover): a
        majority of the data nodes, and every replica in sync with the primary now."""
        if self._sentinels is None:
            return 0
        now = self._monotonic()
        if self._refreshed_at is None or now - self._refreshed_at >= REFRESH_S:
            await self._refresh_majority(now)
        if now - self._online_at >= ONLINE_REFRESH_S:
            self._online_at = now
            self._online = await self._online_replicas()
        return max(self._majority, min(self._online, self._known))

    async def _refresh_majority(self, now: float) -> None:
        known = await self._known_replicas()
        if known is None:
            if self._refreshed_at is None:  # never 0 by default: that would confirm nothing
                raise MetadataUnavailableError(
                    f"no sentinel answered for service {self._service}: cannot tell how many "
                    "replicas a metadata write needs"
                )
            return
        majority = (known + 1) // 2
        if majority != self._majority or self._refreshed_at is None:
            log.info(
                "metadata writes wait for a majority (%d of %d replicas) and every replica in "
                "sync (Sentinel service %s)",
                majority,
                known,
                self._service,
            )
        self._known, self._majority, self._refreshed_at = known, majority, now
        await self._check_primary_refuses_isolated_writes(majority)

    async def _online_replicas(self) -> int:
        """How many replicas the primary streams to now (``INFO replication``, online)."""
        try:
            return online_replicas(await self.redis.info("replication"))
        except (RedisError, OSError):
            return 0  # the write itself will tell; the majority still applies

    async def _check_primary_refuses_isolated_writes(self, required: int) -> None:
        """Warn when the primary would keep taking writes with no replica following it
        (``min-replicas-to-write`` below the majority): readers still apply nothing
        unconfirmed, but an isolated old primary should refuse writes outright."""
        try:
            reply = await self.redis.config_get("min-replicas-to-write")
        except (RedisError, OSError):  # CONFIG may be renamed away; nothing to check then
            return
        value = next(iter(reply.values()), "0") if isinstance(reply, dict) else "0"
        if int(_text(value) or 0) < required:
            log.warning(
                "the Redis primary has min-replicas-to-write %s; set it to %d (with "
                "min-replicas-max-lag) on every data node, so an isolated primary refuses "
                "writes (docs/operations.md)",
                _text(value),
                required,
            )

    async def _known_replicas(self) -> int | None:
        """The replicas the sentinels know for the service, down ones included (the first
        sentinel that answers; None if none does)."""
        for sentinel in self._sentinels.sentinels:
            try:
                replicas = await sentinel.sentinel_slaves(self._service)
            except (RedisError, OSError):
                continue
            return len(replicas)
        return None

    async def confirm(self) -> str:
        """Block until the log as it is now is on enough replicas; the committed log id.

        For a reader about to act on log entries. Raises ``WriteNotReplicatedError`` when the
        replicas do not acknowledge in time, ``MetadataUnavailableError`` when Redis cannot be
        reached or refuses the write."""
        replies = await self.write(lambda pipe: None)
        return replies[-1] if replies else ""

    async def run_script(
        self,
        script: Any,
        keys: list[str],
        args: list[Any],
        *,
        wrote: Callable[[Any], bool],
    ) -> Any:
        """Run a write script and confirm it, on one connection; its reply.

        ``wrote(reply)`` says whether the script changed anything: one that only answered
        (``fenced``, ``exists``) needs no confirmation, and its answer stands."""

        async def run(pipe: Any) -> None:
            await script(keys=keys, args=args, client=pipe)

        try:
            if await self.replicas_required() == 0:
                return await script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        return (await self.write(run, first_wrote=wrote))[0]

    async def write(
        self,
        queue: Callable[[Any], Any],
        *,
        first_wrote: Callable[[Any], bool] | None = None,
    ) -> list[Any]:
        """Send the commands ``queue(pipe)`` adds, then the committed pointer and ``WAIT``,
        in one pipeline: ``WAIT`` only covers writes made on its own connection, and a
        connection opened before a failover may lead to the old primary while a new one
        leads to the new. The replies of the queued commands, then the committed id.

        With ``first_wrote``, a first reply for which it is false needs no confirmation (the
        pointer write may then fail without failing the call)."""
        try:
            required = await self.replicas_required()
            async with self.redis.pipeline(transaction=False) as pipe:
                outcome = queue(pipe)
                if inspect.isawaitable(outcome):
                    await outcome
                queued = len(pipe)
                if required:
                    keys = [self.keys.metadata_log, self.keys.metadata_log_committed]
                    await self._commit(keys=keys, args=[], client=pipe)
                    pipe.execute_command("WAIT", required, self.wait_timeout_ms)
                replies = await pipe.execute(raise_on_error=False)
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        results = list(replies[:queued])
        for reply in results:
            if isinstance(reply, Exception):
                raise MetadataUnavailableError(f"metadata store unavailable: {reply}") from reply
        if not required or (first_wrote is not None and results and not first_wrote(results[0])):
            return results
        committed, acked = replies[queued], replies[queued + 1]
        for reply in (committed, acked):
            if isinstance(reply, Exception):
                raise MetadataUnavailableError(f"metadata store unavailable: {reply}") from reply
        if int(acked) < required:
            raise WriteNotReplicatedError(
                f"metadata write reached {acked} of the {required} Redis replicas it needs "
                f"within {self.wait_timeout_ms} ms; it does not count (it may survive or not)"
            )
        return [*results, _text(committed)]

    async def ensure_committed(self, stream_id: str) -> None:
        """Return once the log up to ``stream_id`` is on a majority (confirming it if the
        pointer is behind); raise as ``confirm`` does when it is not."""
        if self._sentinels is None or not stream_id:
            return
        try:
            raw = await self.redis.get(self.keys.metadata_log_committed)
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
        committed = "0-0" if raw is None else _text(raw)
        if stream_order(stream_id) > stream_order(committed):
            await self.confirm()


def online_replicas(info: Mapping[str, Any]) -> int:
    """The replicas in sync in a parsed ``INFO replication`` (``slaveN`` ``state=online``)."""
    replicas = [v for k, v in info.items() if k.startswith("slave") and isinstance(v, dict)]
    return sum(1 for replica in replicas if replica.get("state") == "online")


def write_sync(
    client: redis.Redis, queue: Callable[[Any], Any], *, timeout_ms: int = WAIT_TIMEOUT_MS
) -> list[Any]:
    """For the few synchronous writers (``manage.py scram-users`` without brokers, the
    metadata snapshot import): the commands ``queue(pipe)`` adds, then ``WAIT`` for every
    replica in sync, in one pipeline; their replies. Raises ``WriteNotReplicatedError``
    when the replicas do not all acknowledge in time (a lone server has none to wait for)."""
    replicas = online_replicas(client.info("replication"))
    pipe = client.pipeline(transaction=False)
    queue(pipe)
    queued = len(pipe)
    if replicas:
        pipe.execute_command("WAIT", replicas, timeout_ms)
    replies = pipe.execute()
    if replicas and int(replies[queued]) < replicas:
        raise WriteNotReplicatedError(
            f"the write reached {replies[queued]} of the {replicas} Redis replicas in sync "
            f"within {timeout_ms} ms; it may not survive a failover"
        )
    return list(replies[:queued])


def replied_ok(reply: Any) -> bool:
    """Whether a write script's reply (``[status, ...]``) says it wrote (``ok``) rather than
    only answered (``fenced``, ``exists``, ``duplicate``...): ``run_script``'s ``wrote``."""
    return isinstance(reply, list) and bool(reply) and _text(reply[0]) == "ok"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def stream_order(stream_id: str) -> tuple[int, int]:
    """A Redis stream id (``<ms>-<seq>``) as a comparable pair."""
    ms, _, seq = stream_id.partition("-")
    return int(ms or 0), int(seq or 0)

"""The broker command channel: commands from the control plane to one broker, through Redis.

Theory of operation
-------------------
Some work has no Kafka request: forcing a group to rebalance, trimming or compacting the
logs a broker owns. Adding private API keys would put non-Kafka messages on the Kafka port;
Redis already connects every broker and the control plane, so this is the one channel for
all of it:

* every broker tails its own stream ``commands:<broker id>``; an entry carries ``id``,
  ``command`` (a registered name), ``args`` (a JSON object), ``reply_to`` (a list key
  ``command_reply:<id>`` under the cluster's prefix) and ``deadline_ms`` (the sender's wall
  clock; 0: none);
* the broker runs the handler registered under ``command`` in a task of its own (a quick
  command is never stuck behind a long compaction) and pushes one JSON document onto
  ``reply_to``, which expires: ``{"broker_id", "ok", "error", "result"}``. A handler refuses
  with :class:`CommandError`; a malformed command gets ``ok: false`` and a message; nothing
  a command carries can stop the serving loop.

The broker starts reading at the Redis server's clock when it starts serving: commands sent
while it was down are not replayed (their sender has given up), and one found past its
``deadline_ms`` (a broker that was paused) is dropped unanswered for the same reason.

The broker side is :class:`CommandServer` (``register`` a name, then ``serve``); the rooms
that own the work register their handlers (``weir.housekeeping``, ``weir.group_admin``). The
control plane's side is :class:`CommandClient`: synchronous redis-py, one command per broker,
every reply collected within one deadline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import redis as syncredis
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from weir.loop_task import StopFlag, stop_tasks
from weir.metadata.keys import KeyLayout

__all__ = [
    "REPLY_TTL_S",
    "BrokerReply",
    "CommandClient",
    "CommandError",
    "CommandServer",
    "Handler",
]

log = logging.getLogger("weir.commands")

# A reply waits this long for its reader (senders give up well before).
REPLY_TTL_S = 600
# How long one XREAD blocks; also the pause after Redis errors.
BLOCK_MS = 1000
# On shutdown, how long running commands get to finish before the server returns.
STOP_WAIT_S = 5.0
# Commands kept in each broker's stream (older ones are long answered or dropped).
STREAM_MAXLEN = 1000
# One BLPOP of the client waits at most this long (under redis-py's socket timeouts).
POLL_S = 1.0

# A handler takes the command's JSON args and returns its JSON result.
Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class CommandError(Exception):
    """A command the broker cannot carry out; its message goes back to the sender."""


# -- the broker's side --------------------------------------------------------------------
class CommandServer:
    """Serves one broker's command stream, dispatching by name to registered handlers."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        cluster_id: str,
        broker_id: int,
        time_ms: Callable[[], int],
    ) -> None:
        self.redis = redis
        self.keys = KeyLayout(cluster_id)
        self.broker_id = broker_id
        self.time_ms = time_ms
        self.stream = self.keys.broker_commands(broker_id)
        self._handlers: dict[str, Handler] = {}
        self._running: set[asyncio.Task[None]] = set()
        self._flag = StopFlag()
        self._serving: asyncio.Task[Any] | None = None

    def register(self, name: str, handler: Handler) -> None:
        """Serve ``name`` with ``handler`` (one handler a name)."""
        if name in self._handlers:
            raise ValueError(f"command {name!r} is registered twice")
        self._handlers[name] = handler

    async def serve(self) -> None:
        """Read commands until stopped or cancelled; each runs in a task of its own."""
        self._serving = asyncio.current_task()
        last_id = await self._start_id()
        try:
            while self._flag.running:
                try:
                    reply: Any = await self.redis.xread(
                        {self.stream: last_id}, count=100, block=BLOCK_MS
                    )
                except (RedisError, OSError) as exc:
                    log.debug("command stream unavailable: %s", exc)
                    await asyncio.sleep(BLOCK_MS / 1000)
                    continue
                for _, entries in reply or []:
                    for entry_id, fields in entries:
                        last_id = entry_id
                        task = asyncio.create_task(self._serve_one(_decode(fields)))
                        self._running.add(task)
                        task.add_done_callback(self._running.discard)
        finally:
            running = list(self._running)
            for task in running:
                task.cancel()
            if running:
                await asyncio.wait(running, timeout=STOP_WAIT_S)

    async def stop(self) -> None:
        """End ``serve`` for sure (see weir.loop_task), then the commands still running."""
        if self._serving is not None:
            await stop_tasks([self._serving], STOP_WAIT_S, flag=self._flag)
        else:
            self._flag.stop()
        await stop_tasks(list(self._running), STOP_WAIT_S)

    async def execute(self, command: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run one command; raises CommandError for anything refused."""
        handler = self._handlers.get(command)
        if handler is None:
            raise CommandError(f"unknown command {command!r}")
        return await handler(args)

    async def _start_id(self) -> str:
        """Stream id at the Redis server's clock now (its ids are its clock)."""
        while True:
            try:
                seconds, micros = await self.redis.time()
                return f"{int(seconds) * 1000 + int(micros) // 1000}-0"
            except (RedisError, OSError) as exc:
                log.debug("commands: Redis unavailable: %s", exc)
                await asyncio.sleep(BLOCK_MS / 1000)

    async def _serve_one(self, fields: dict[str, str]) -> None:
        reply_to = fields.get("reply_to", "")
        command = fields.get("command", "")
        try:
            deadline = int(fields.get("deadline_ms") or 0)
        except ValueError:
            deadline = 0
        # ``deadline_ms`` is the sender's wall clock: hosts are assumed NTP-synchronised,
        # and the check only saves work nobody waits for any more.
        if deadline and self.time_ms() > deadline:
            log.info("commands: dropping expired %s command %s", command, fields.get("id"))
            return
        try:
            args = json.loads(fields.get("args") or "{}")
            if not isinstance(args, dict):
                raise CommandError("args must be a JSON object")
            result = await self.execute(command, args)
            answer: dict[str, Any] = {"ok": True, "error": None, "result": result}
        except asyncio.CancelledError:
            raise
        except CommandError as exc:
            answer = {"ok": False, "error": str(exc), "result": None}
        except ValueError as exc:  # bad JSON, bad numbers
            answer = {"ok": False, "error": f"bad {command or 'command'}: {exc}", "result": None}
        except Exception as exc:  # never let one command take the loop down
            log.exception("%s command failed", command)
            answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "result": None}
        answer["broker_id"] = self.broker_id
        if not reply_to.startswith(self.keys.prefix):
            log.warning("commands: %s command without a valid reply_to", command)
            return
        try:
            await self.redis.rpush(reply_to, json.dumps(answer, separators=(",", ":")))
            await self.redis.expire(reply_to, REPLY_TTL_S)
        except (RedisError, OSError) as exc:
            log.warning("commands: could not send the %s reply: %s", command, exc)


def _decode(fields: Any) -> dict[str, str]:
    out = {}
    for key, value in (fields or {}).items():
        k = key.decode(errors="replace") if isinstance(key, bytes) else str(key)
        v = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
        out[k] = v
    return out


# -- the control plane's side -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BrokerReply:
    """A broker's answer to one command: ``result`` when ok, else ``error``."""

    broker_id: int
    ok: bool
    result: dict[str, Any] | None = None
    error: str | None = None


class CommandClient:
    """Sends commands to brokers' streams and collects their replies within a deadline
    (``deadline`` is a ``time.monotonic()`` value, one for everything the client sends).

    ``redis`` is a synchronous client that decodes responses (the control plane's).
    """

    def __init__(self, redis: syncredis.Redis, keys: KeyLayout, *, deadline: float) -> None:
        self.redis = redis
        self.keys = keys
        self.deadline = deadline

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def alive(self, broker_id: int) -> bool:
        return bool(self.redis.exists(self.keys.broker_lease(broker_id)))

    def send(self, broker_id: int, command: str, args: Mapping[str, Any]) -> str:
        """Queue ``command`` for ``broker_id``; the key its reply will be pushed onto."""
        command_id = uuid.uuid4().hex
        reply_to = self.keys.command_reply(command_id)
        deadline_ms = int(time.time() * 1000 + max(self.remaining(), 0) * 1000)
        self.redis.xadd(
            self.keys.broker_commands(broker_id),
            {
                "id": command_id,
                "command": command,
                "args": json.dumps(args, separators=(",", ":")),
                "reply_to": reply_to,
                "deadline_ms": str(deadline_ms),
            },
            maxlen=STREAM_MAXLEN,
            approximate=True,
        )
        return reply_to

    def request(
        self,
        commands: Mapping[int, tuple[str, Mapping[str, Any]]],
        *,
        on_reply: Callable[[BrokerReply], None] | None = None,
    ) -> dict[int, BrokerReply]:
        """Send one command per broker and wait for every reply (or the deadline).

        A broker without a live lease, or silent until the deadline, gets an error reply.
        """
        replies: dict[int, BrokerReply] = {}
        pending: dict[str, int] = {}
        for broker_id, (command, args) in commands.items():
            if not self.alive(broker_id):
                replies[broker_id] = BrokerReply(broker_id, False, error="broker is not alive")
                continue
            pending[self.send(broker_id, command, args)] = broker_id
        while pending:
            wait = min(POLL_S, self.remaining())
            if wait <= 0:
                break
            popped = self.redis.blpop(list(pending), timeout=max(wait, 0.01))
            if popped is None:
                continue
            key, raw = popped
            broker_id = pending.pop(key)
            reply = _parse_reply(broker_id, raw)
            replies[broker_id] = reply
            if on_reply is not None:
                on_reply(reply)
        for broker_id in pending.values():
            replies[broker_id] = BrokerReply(
                broker_id, False, error="no answer before the run's deadline"
            )
        return replies


def _parse_reply(broker_id: int, raw: str) -> BrokerReply:
    try:
        answer = json.loads(raw)
        if answer.get("ok"):
            return BrokerReply(broker_id, True, result=answer.get("result") or {})
        return BrokerReply(broker_id, False, error=str(answer.get("error")))
    except (ValueError, AttributeError) as exc:
        return BrokerReply(broker_id, False, error=f"unreadable reply: {exc}")

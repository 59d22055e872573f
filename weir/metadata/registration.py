"""Broker registration: an expiring lease per broker id, and a broker epoch that fences zombies.

Theory of operation
-------------------
A broker registers by running one Lua script that takes a new broker epoch (``INCR
broker_epoch``), writes its lease ``broker:<id>`` (JSON with the primary endpoint as
``host``/``port``, every advertised listener as ``endpoints`` -- ``[{"name", "host", "port",
"protocol"}, ...]``, primary first --, epoch and a random *instance id* naming this process)
with a PX TTL (Kafka's ``broker.session.timeout.ms``, 9 s), records the registration in the
``brokers`` hash and appends a ``RegisterBroker`` record (with the same endpoints) to the
metadata log. Readers accept registrations without ``endpoints`` (written before brokers
registered every listener): their only listener is the primary, named PLAINTEXT. While the
lease of another instance is alive the id is taken: ``DuplicateBrokerError`` (two processes
started with the same ``--broker-id``).

A background task renews the lease every ``broker.heartbeat.interval.ms`` (2 s). A renewal
only succeeds for the current registration (same instance and epoch). If our lease expired
but nobody registered the id since, the renewal re-creates it (a long pause is not a reason
to lose the epoch; KRaft unfences such a broker too). If someone else registered the id in
the meantime this process is a zombie: ``BrokerFencedError``, the heartbeat stops and
``on_fenced`` is called. If the registration vanished entirely (Redis was reset) the
broker registers again with a new epoch.

The lease also carries ``offline``: the partitions whose log failed on this broker's disk
(``[[topic, index], ...]``), Weir's counterpart of the offline log directories a KRaft broker
reports in its heartbeat. ``report_offline`` sets the list and renews at once; every renewal
writes it into the lease, so it survives a lease re-acquired after a pause. A new
registration (a restart) starts without it: the restarted broker opens its logs again.

The lease carries ``shutting_down`` too once ``begin_controlled_shutdown`` is called (Kafka's
``wantShutDown`` in the KRaft broker heartbeat): the controller then moves leadership and ISR
membership away from this broker wherever another in-sync replica can take over, while it
still serves, and the broker stops once that is done (``controlled.shutdown.enable``).

``deregister`` (clean shutdown) removes the lease and the registration, and appends an
``UnregisterBroker`` record, only if they are still ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from weir.metadata.errors import (
    BrokerFencedError,
    DuplicateBrokerError,
    MetadataUnavailableError,
    RegistrationLostError,
)
from weir.metadata.image import BrokerImage, ListenerEndpoint
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WriteQuorum, replied_ok

__all__ = [
    "DEFAULT_HEARTBEAT_MS",
    "DEFAULT_LEASE_MS",
    "BrokerRegistration",
    "live_brokers",
    "offline_partitions_of",
    "shutting_down_of",
]

log = logging.getLogger("weir.registration")

DEFAULT_LEASE_MS = 9000  # broker.session.timeout.ms
DEFAULT_HEARTBEAT_MS = 2000  # broker.heartbeat.interval.ms

FencedCallback = Callable[[BrokerFencedError], Awaitable[None] | None]

# KEYS: broker:<id>, broker_epoch, brokers, metadata_log
# ARGV: broker id, instance, host, port, rack or '', lease ms, endpoints (JSON list)
_REGISTER = """
local lease = redis.call('GET', KEYS[1])
if lease and cjson.decode(lease)['instance'] ~= ARGV[2] then
  return {'duplicate', lease, tostring(redis.call('PTTL', KEYS[1]))}
end
local epoch = redis.call('INCR', KEYS[2])
local rack = cjson.null
if ARGV[5] ~= '' then rack = ARGV[5] end
local endpoints = cjson.decode(ARGV[7])
local registration = cjson.encode({broker_id = tonumber(ARGV[1]), epoch = epoch, host = ARGV[3],
                                   port = tonumber(ARGV[4]), rack = rack, instance = ARGV[2],
                                   endpoints = endpoints})
redis.call('SET', KEYS[1], registration, 'PX', ARGV[6])
redis.call('HSET', KEYS[3], ARGV[1], registration)
local data = cjson.encode({broker_id = tonumber(ARGV[1]), epoch = epoch, host = ARGV[3],
                           port = tonumber(ARGV[4]), rack = rack, endpoints = endpoints})
redis.call('XADD', KEYS[4], '*', 'type', 'RegisterBroker', 'data', data, 'end', '1')
return {'ok', tostring(epoch)}
"""

# KEYS: broker:<id>, brokers.  ARGV: broker id, instance, epoch, lease ms, offline partitions
# (JSON list; '' when none was ever reported), '1' when shutting down (else ''). With neither
# the lease is only extended.
_RENEW = """
local function ours(text)
  local holder = cjson.decode(text)
  return holder['instance'] == ARGV[2] and tostring(holder['epoch']) == ARGV[3]
end
local function with_reports(text)
  local holder = cjson.decode(text)
  if ARGV[5] ~= '' then holder['offline'] = cjson.decode(ARGV[5]) end
  if ARGV[6] == '1' then holder['shutting_down'] = true end
  return cjson.encode(holder)
end
local plain = ARGV[5] == '' and ARGV[6] == ''
local lease = redis.call('GET', KEYS[1])
if lease then
  if ours(lease) then
    if plain then
      redis.call('PEXPIRE', KEYS[1], ARGV[4])
    else
      redis.call('SET', KEYS[1], with_reports(lease), 'PX', ARGV[4])
    end
    return {'ok', ''}
  end
  return {'fenced', lease}
end
local registration = redis.call('HGET', KEYS[2], ARGV[1])
if not registration then return {'lost', ''} end
if ours(registration) then
  if not plain then registration = with_reports(registration) end
  redis.call('SET', KEYS[1], registration, 'PX', ARGV[4])
  return {'reacquired', ''}
end
return {'fenced', registration}
"""

# KEYS: broker:<id>, brokers, metadata_log.  ARGV: broker id, instance, epoch
_DEREGISTER = """
local function ours(text)
  local holder = cjson.decode(text)
  return holder['instance'] == ARGV[2] and tostring(holder['epoch']) == ARGV[3]
end
local registration = redis.call('HGET', KEYS[2], ARGV[1])
if registration and ours(registration) then
  redis.call('HDEL', KEYS[2], ARGV[1])
  redis.call('DEL', KEYS[1])
  local data = cjson.encode({broker_id = tonumber(ARGV[1]), epoch = tonumber(ARGV[3])})
  redis.call('XADD', KEYS[3], '*', 'type', 'UnregisterBroker', 'data', data, 'end', '1')
  return 1
end
local lease = redis.call('GET', KEYS[1])
if lease and cjson.decode(lease)['instance'] == ARGV[2] then redis.call('DEL', KEYS[1]) end
return 0
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class BrokerRegistration:
    """This broker's registration lease and epoch (one instance per broker process)."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        cluster_id: str,
        broker_id: int,
        host: str,
        port: int,
        rack: str | None = None,
        endpoints: Sequence[ListenerEndpoint] = (),
        lease_ms: int = DEFAULT_LEASE_MS,
        heartbeat_ms: int = DEFAULT_HEARTBEAT_MS,
        on_fenced: FencedCallback | None = None,
        on_unavailable: Callable[[], None] | None = None,
        on_available: Callable[[], None] | None = None,
    ) -> None:
        if heartbeat_ms >= lease_ms:
            raise ValueError(f"heartbeat {heartbeat_ms} ms must be shorter than the lease")
        self.redis = redis
        self.keys = KeyLayout(cluster_id)
        self.broker_id = broker_id
        self.host = host
        self.port = port
        self.rack = rack
        # Every advertised listener, primary first (no listeners given: the primary alone).
        self.endpoints = tuple(endpoints) or (
            ListenerEndpoint("PLAINTEXT", host, port, "PLAINTEXT"),
        )
        self.lease_ms = lease_ms
        self.heartbeat_ms = heartbeat_ms
        self.on_fenced = on_fenced
        # Called when heartbeats start failing (Redis away or refusing writes) and when one
        # succeeds again: the controller's grace after an outage (weir.controller).
        self.on_unavailable = on_unavailable
        self.on_available = on_available
        self._failing = False
        self.instance_id = uuid.uuid4().hex
        self.epoch: int | None = None
        # Partitions reported offline (None: never any, the lease is only extended).
        self.offline: tuple[tuple[str, int], ...] | None = None
        self.shutting_down = False
        self.fenced: BrokerFencedError | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._register_script = redis.register_script(_REGISTER)
        self._renew_script = redis.register_script(_RENEW)
        self._deregister_script = redis.register_script(_DEREGISTER)
        self.quorum = WriteQuorum(redis, self.keys)

    async def _run(
        self, script: Any, keys: list[str], args: list[Any], *, confirm: bool = False
    ) -> Any:
        """Run a script; with ``confirm``, a write counts only once a majority of a Sentinel
        deployment holds it (``WriteQuorum``: the broker epoch must never go backwards)."""
        try:
            if confirm:
                return await self.quorum.run_script(script, keys, args, wrote=replied_ok)
            return await script(keys=keys, args=args)
        except (RedisError, OSError) as exc:
            raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc

    async def register(self, *, heartbeat: bool = True) -> int:
        """Register (new broker epoch) and, with ``heartbeat``, keep the lease alive.

        A broker restarted after a crash finds its previous incarnation's lease still live
        for up to one lease: like Kafka's DUPLICATE_BROKER_REGISTRATION, that is retried
        until the old lease has expired (plus one lease for a renewal in flight). Only a
        lease that keeps being renewed, i.e. a second live broker with the same id, fails.
        """
        deadline: float | None = None
        loop = asyncio.get_running_loop()
        while True:
            try:
                epoch = await self._register_once()
                break
            except DuplicateBrokerError as exc:
                if deadline is None:
                    deadline = loop.time() + (exc.lease_remaining_ms + self.lease_ms) / 1000
                if loop.time() >= deadline:
                    raise
                log.info("%s; waiting for that lease to expire", exc)
                wait_s = min(max(exc.lease_remaining_ms, 50) / 1000, 1.0)
                await asyncio.sleep(min(wait_s, max(deadline - loop.time(), 0.05)))
        if heartbeat and self._heartbeat is None:
            self._heartbeat = asyncio.create_task(
                self._heartbeat_loop(), name=f"broker-{self.broker_id}-heartbeat"
            )
        return epoch

    async def _register_once(self) -> int:
        keys = self.keys
        result = await self._run(
            self._register_script,
            [
                keys.broker_lease(self.broker_id),
                keys.broker_epoch,
                keys.brokers,
                keys.metadata_log,
            ],
            [
                self.broker_id,
                self.instance_id,
                self.host,
                self.port,
                self.rack or "",
                self.lease_ms,
                json.dumps([dataclasses.asdict(e) for e in self.endpoints]),
            ],
            confirm=True,
        )
        status = _text(result[0])
        if status == "duplicate":
            holder = json.loads(_text(result[1]))
            remaining_ms = int(_text(result[2]))
            raise DuplicateBrokerError(
                f"broker id {self.broker_id} is already registered by a live broker at "
                f"{holder.get('host')}:{holder.get('port')} (epoch {holder.get('epoch')}); "
                f"its lease expires in {remaining_ms} ms unless it is renewed. Is another "
                f"broker running with --broker-id {self.broker_id}?",
                lease_remaining_ms=remaining_ms,
            )
        self.epoch = int(_text(result[1]))
        self.fenced = None
        log.info("broker %d registered with epoch %d", self.broker_id, self.epoch)
        return self.epoch

    async def renew(self) -> None:
        """Extend the lease once; BrokerFencedError if a newer registration replaced ours."""
        if self.epoch is None:
            raise RegistrationLostError(f"broker {self.broker_id} is not registered")
        result = await self._run(
            self._renew_script,
            [self.keys.broker_lease(self.broker_id), self.keys.brokers],
            [
                self.broker_id,
                self.instance_id,
                self.epoch,
                self.lease_ms,
                "" if self.offline is None else json.dumps([list(p) for p in self.offline]),
                "1" if self.shutting_down else "",
            ],
        )
        status = _text(result[0])
        if status == "reacquired":
            log.warning("broker %d lease had expired; re-acquired it", self.broker_id)
        elif status == "lost":
            raise RegistrationLostError(
                f"broker {self.broker_id} registration (epoch {self.epoch}) is gone"
            )
        elif status == "fenced":
            holder = json.loads(_text(result[1]))
            raise BrokerFencedError(
                f"broker {self.broker_id} epoch {self.epoch} was fenced: the id was registered "
                f"again with epoch {holder.get('epoch')} by {holder.get('host')}:"
                f"{holder.get('port')}"
            )

    async def report_offline(self, partitions: Sequence[tuple[str, int]]) -> None:
        """Tell the controller (through the lease) which partitions are offline here.

        Renews at once; if Redis is away the next heartbeat carries the list."""
        self.offline = tuple(sorted(partitions))
        try:
            await self.renew()
        except (MetadataUnavailableError, RegistrationLostError) as exc:
            log.warning("reporting offline partitions failed (the heartbeat retries): %s", exc)
        except BrokerFencedError as exc:
            await self._fence(exc)

    async def begin_controlled_shutdown(self) -> bool:
        """Ask the controller (through the lease) to move leadership and ISR membership
        away from this broker; whether the lease carries the request now (if Redis is away
        the next heartbeat asks; a fenced broker has nothing to hand over)."""
        if self.fenced is not None or self.epoch is None:
            return False
        self.shutting_down = True
        try:
            await self.renew()
        except (MetadataUnavailableError, RegistrationLostError) as exc:
            log.warning("asking for a controlled shutdown failed: %s", exc)
            return False
        except BrokerFencedError as exc:
            await self._fence(exc)
            return False
        return True

    async def _heartbeat_loop(self) -> None:
        # ``_heartbeat`` is None once stopped: a cancellation swallowed inside redis-py must
        # not keep a deregistered broker renewing its lease.
        while self._heartbeat is not None:
            await asyncio.sleep(self.heartbeat_ms / 1000)
            if self._heartbeat is None:
                return
            try:
                await self.renew()
                self._heartbeat_went(ok=True)
            except RegistrationLostError as exc:
                log.warning("%s; registering again", exc)
                try:
                    await self._register_once()
                    self._heartbeat_went(ok=True)
                except DuplicateBrokerError as dup:
                    await self._fence(BrokerFencedError(str(dup)))
                    return
                except MetadataUnavailableError as unavailable:
                    log.warning("re-registration failed: %s", unavailable)
                    self._heartbeat_went(ok=False)
            except BrokerFencedError as exc:
                await self._fence(exc)
                return
            except MetadataUnavailableError as exc:
                log.warning("broker %d heartbeat failed: %s", self.broker_id, exc)
                self._heartbeat_went(ok=False)

    def _heartbeat_went(self, *, ok: bool) -> None:
        """Report the first failed heartbeat of a streak, and the first success after."""
        if ok == self._failing:
            self._failing = not ok
            callback = self.on_available if ok else self.on_unavailable
            if callback is not None:
                callback()

    async def _fence(self, exc: BrokerFencedError) -> None:
        log.error("%s", exc)
        self.fenced = exc
        if self.on_fenced is not None:
            outcome = self.on_fenced(exc)
            if inspect.isawaitable(outcome):
                await outcome

    async def deregister(self) -> None:
        """Stop heartbeating and remove the registration (if it is still ours)."""
        await self.stop_heartbeat()
        if self.epoch is None:
            return
        keys = self.keys
        await self._run(
            self._deregister_script,
            [keys.broker_lease(self.broker_id), keys.brokers, keys.metadata_log],
            [self.broker_id, self.instance_id, self.epoch],
        )
        log.info("broker %d deregistered (epoch %d)", self.broker_id, self.epoch)
        self.epoch = None

    async def stop_heartbeat(self) -> None:
        """Stop renewing without deregistering (the lease then simply expires)."""
        task, self._heartbeat = self._heartbeat, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def live_brokers(self) -> list[BrokerImage]:
        return await live_brokers(self.redis, cluster_id=self.keys.cluster_id)


def shutting_down_of(lease: str | bytes) -> bool:
    """Whether a lease asks for a controlled shutdown (a malformed lease does not)."""
    try:
        return json.loads(lease).get("shutting_down") is True
    except (ValueError, TypeError, AttributeError):
        return False


def offline_partitions_of(lease: str | bytes) -> frozenset[tuple[str, int]]:
    """The ``offline`` partitions a lease reports (none when it has no such field, or it
    is malformed: a lease must never stop liveness from being read)."""
    try:
        value = json.loads(lease).get("offline")
        if not isinstance(value, list):  # absent, or Redis' cjson's {} for an empty list
            return frozenset()
        return frozenset((str(topic), int(index)) for topic, index in value)
    except (ValueError, TypeError, AttributeError):
        return frozenset()


async def live_brokers(redis: aioredis.Redis, *, cluster_id: str) -> list[BrokerImage]:
    """Brokers holding a live lease, by id (registrations listed in ``brokers``, MGET)."""
    keys = KeyLayout(cluster_id)
    try:
        ids = [_text(i) for i in await redis.hkeys(keys.brokers)]
        if not ids:
            return []
        leases = await redis.mget([keys.broker_lease(int(i)) for i in ids])
    except (RedisError, OSError) as exc:
        raise MetadataUnavailableError(f"metadata store unavailable: {exc}") from exc
    brokers = [BrokerImage.from_json(lease) for lease in leases if lease is not None]
    return sorted(brokers, key=lambda b: b.broker_id)

"""The registry's writer lease in Redis: one process at a time writes ``_schemas``.

Keys (under the cluster's namespace, ``weir:<cluster_id>:schema-registry:``):

* ``leader`` -- ``"<epoch> <owner>"`` with a TTL of a few seconds: who may write now.
* ``epoch`` -- a counter; every acquisition takes the next value (INCR), so epochs grow.
* ``max-id`` -- the highest schema id any writer ever announced. The topic alone would
  forget an id once a hard delete's tombstone is compacted away; this copy keeps ids from
  being reused even then (the next id is one above both).

Every check is one Lua script, so "is my epoch still the current one" and the action it
guards (extend the TTL, raise ``max-id``, release) happen atomically in Redis. A writer
renews right before each write; ``renew`` fails once its lease expired or another process
took it, and the writer then writes nothing.
"""

from __future__ import annotations

import uuid

import redis

__all__ = ["RegistryLease"]

# KEYS: leader, epoch. ARGV: owner, ttl_ms. Returns the epoch held, or nil when another
# process holds the lease.
_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current then
  local epoch, owner = string.match(current, '^(%d+) (.+)$')
  if owner == ARGV[1] then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(epoch)
  end
  return nil
end
local epoch = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], epoch .. ' ' .. ARGV[1], 'PX', ARGV[2])
return epoch
"""

# KEYS: leader, max-id. ARGV: "<epoch> <owner>", ttl_ms, max_id. 1 when renewed.
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local known = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[3]) > known then
  redis.call('SET', KEYS[2], ARGV[3])
end
return 1
"""

# KEYS: leader. ARGV: "<epoch> <owner>".
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RegistryLease:
    """One process's handle on the writer lease."""

    def __init__(
        self,
        client: redis.Redis,
        cluster_id: str,
        *,
        ttl_ms: int = 5000,
        owner: str | None = None,
    ) -> None:
        prefix = f"weir:{cluster_id}:schema-registry:"
        self.leader_key = prefix + "leader"
        self.epoch_key = prefix + "epoch"
        self.max_id_key = prefix + "max-id"
        self.ttl_ms = ttl_ms
        self.owner = owner or uuid.uuid4().hex
        self._redis = client
        self._acquire = client.register_script(_ACQUIRE)
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)

    def acquire(self) -> int | None:
        """The epoch this process holds the lease with (taken now or held already), or None
        while another process holds it."""
        epoch = self._acquire(
            keys=[self.leader_key, self.epoch_key], args=[self.owner, self.ttl_ms]
        )
        return int(epoch) if epoch is not None else None

    def renew(self, epoch: int, max_id: int = 0) -> bool:
        """Extend the lease held at ``epoch`` by a full TTL and record ``max_id``; False
        (and nothing changed) when this process no longer holds it."""
        token = f"{epoch} {self.owner}"
        done = self._renew(
            keys=[self.leader_key, self.max_id_key], args=[token, self.ttl_ms, max_id]
        )
        return bool(done)

    def release(self, epoch: int) -> None:
        """Give the lease up now (if still held at ``epoch``), so another process need not
        wait for it to expire."""
        self._release(keys=[self.leader_key], args=[f"{epoch} {self.owner}"])

    def max_id(self) -> int:
        """The highest schema id any writer announced (0 when none)."""
        value = self._redis.get(self.max_id_key)
        return int(value) if value is not None else 0

    def holder(self) -> tuple[int, str] | None:
        """(epoch, owner) of the current holder, if any."""
        value = self._redis.get(self.leader_key)
        if value is None:
            return None
        text = value.decode() if isinstance(value, bytes) else str(value)
        epoch, owner = text.split(" ", 1)
        return int(epoch), owner

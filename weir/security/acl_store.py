"""ACLs in Redis, and each broker's in-memory copy that the authorizer reads.

Theory of operation
-------------------
All bindings of a cluster live in one Redis set, ``acls`` (each member is the canonical
JSON of one binding, so adding an existing ACL is a no-op and removing is exact), next to a
counter ``acls_version``. Every change is one Lua script that edits the set and INCRs the
counter, so a reader who sees a new version also sees the change; a deletion computed from a
read of the set is applied only if the version is still the one read (else it is read
again). On a Sentinel deployment a change counts once a majority of the data nodes holds it
(``weir.metadata.quorum``).

Any broker may write (CreateAcls / DeleteAcls do not need the controller: Redis makes the
edit atomic). ``AclCache`` polls ``acls_version`` every ``poll_interval_s`` (default 0.2 s)
and reloads the whole set when the value differs from the one it loaded (differs, not
grows: a wiped Redis restarts the counter). So every broker applies a change well within
a second. The broker that made a change reloads at once, so its own next request already
sees it. When Redis is away the cache keeps the last snapshot it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterable
from typing import Literal

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from weir.config import BrokerConfig, InvalidConfigError
from weir.loop_task import StopFlag, stop_tasks
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WriteQuorum
from weir.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclIndex,
    Authorizer,
    parse_super_users,
)

__all__ = ["AUTHORIZER_CLASSES", "AclCache", "AclStore", "build_authorizer"]

# How long stop() waits for the poll loop to end.
STOP_TIMEOUT_S = 5.0

# ``authorizer.class.name`` values that turn on Weir's ACL authorizer (Kafka's two).
AUTHORIZER_CLASSES = frozenset(
    {
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "kafka.security.authorizer.AclAuthorizer",
    }
)

log = logging.getLogger("weir.security.acls")


def _member(binding: AclBinding) -> str:
    return json.dumps(binding.to_json(), sort_keys=True, separators=(",", ":"))


def _parse(members: Iterable[bytes | str]) -> list[AclBinding]:
    bindings = []
    for member in members:
        try:
            bindings.append(AclBinding.from_json(json.loads(member)))
        except (ValueError, KeyError, TypeError):
            log.warning("ignoring a malformed ACL in Redis: %r", member)
    return bindings


# KEYS: acls, acls_version.  ARGV: 'sadd' or 'srem', the version the edit was computed from
# ('' for any), members...
_EDIT = """
local version = redis.call('GET', KEYS[2]) or '0'
if ARGV[2] ~= '' and version ~= ARGV[2] then return 'conflict' end
for i = 3, #ARGV do redis.call(ARGV[1], KEYS[1], ARGV[i]) end
redis.call('INCR', KEYS[2])
return 'ok'
"""


def _edited(reply: object) -> bool:
    return (reply.decode() if isinstance(reply, bytes) else reply) == "ok"


class AclStore:
    """Reads and atomic edits of the ``acls`` set."""

    def __init__(self, redis: aioredis.Redis, *, cluster_id: str) -> None:
        self.redis = redis
        self.keys = KeyLayout(cluster_id)
        # An ACL change counts once a majority of a Sentinel deployment holds it.
        self.quorum = WriteQuorum(redis, self.keys)
        self._edit_script = redis.register_script(_EDIT)

    async def version(self) -> int:
        raw = await self.redis.get(self.keys.acls_version)
        return int(raw) if raw is not None else 0

    async def load(self) -> tuple[int, list[AclBinding]]:
        """(version, every binding), read together in one transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.get(self.keys.acls_version)
            pipe.smembers(self.keys.acls)
            raw_version, members = await pipe.execute()
        return (int(raw_version) if raw_version is not None else 0), _parse(members)

    async def add(self, bindings: Iterable[AclBinding]) -> None:
        await self._change("sadd", bindings)

    async def remove(self, bindings: Iterable[AclBinding]) -> None:
        await self._change("srem", bindings)

    async def _change(
        self, command: Literal["sadd", "srem"], bindings: Iterable[AclBinding]
    ) -> None:
        """Add or remove bindings and bump the version, atomically and confirmed."""
        members = [_member(b) for b in bindings]
        if members:
            await self._edit(command, members, expected_version=None)

    async def _edit(
        self, command: str, members: list[str], *, expected_version: int | None
    ) -> bool:
        """Run the edit script; False when the version is no longer ``expected_version``."""
        keys = [self.keys.acls, self.keys.acls_version]
        args = [command, "" if expected_version is None else expected_version, *members]
        reply = await self.quorum.run_script(self._edit_script, keys, args, wrote=_edited)
        return _edited(reply)

    async def delete_matching(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches (atomically); the matches per filter.

        The removal is applied only if nobody changed the ACLs since they were read (the
        version is compared in the script), so a concurrent edit makes us read again rather
        than resurrect or miss ACLs.
        """
        while True:
            version, bindings = await self.load()
            current = AclIndex(bindings)
            matched = [current.select(f) for f in filters]
            doomed = sorted({_member(b) for group in matched for b in group})
            if not doomed or await self._edit("srem", doomed, expected_version=version):
                return matched


class AclCache:
    """The broker's current ``AclIndex``, refreshed from Redis in the background."""

    def __init__(self, *, cluster_id: str, poll_interval_s: float = 0.2) -> None:
        self.cluster_id = cluster_id
        self.poll_interval_s = poll_interval_s
        self.index = AclIndex()
        self.version: int | None = None
        self._store: AclStore | None = None
        self._task: asyncio.Task[None] | None = None
        self._flag = StopFlag()

    @property
    def store(self) -> AclStore:
        if self._store is None:
            raise RuntimeError("the ACL cache has not been started")
        return self._store

    async def start(self, redis: aioredis.Redis) -> None:
        self._store = AclStore(redis, cluster_id=self.cluster_id)
        with contextlib.suppress(RedisError, OSError):
            await self.reload()
        self._flag = StopFlag()
        self._task = asyncio.create_task(self._poll(), name="acl-cache")

    async def stop(self) -> None:
        """End the poll loop for sure (a cancel alone may be swallowed: weir.loop_task)."""
        task, self._task = self._task, None
        if task is not None:
            await stop_tasks([task], STOP_TIMEOUT_S, flag=self._flag)

    async def reload(self) -> None:
        version, bindings = await self.store.load()
        self.index = AclIndex(bindings)
        self.version = version

    async def _poll(self) -> None:
        while self._flag.running:
            await asyncio.sleep(self.poll_interval_s)
            try:
                if await self.store.version() != self.version:
                    await self.reload()
                    log.info(
                        "ACLs reloaded: %d bindings (version %s)", len(self.index), self.version
                    )
            except (RedisError, OSError) as exc:
                log.debug("ACL cache cannot reach Redis (%s); keeping the last ACLs", exc)


def build_authorizer(config: BrokerConfig, cache: AclCache) -> Authorizer | None:
    """The broker's authorizer per ``authorizer.class.name`` (None: authorization is off)."""
    name = (config.get("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASSES:
        raise InvalidConfigError(
            "authorizer.class.name",
            f"authorizer.class.name {name!r} is not supported; use one of "
            + ", ".join(sorted(AUTHORIZER_CLASSES)),
        )
    return Authorizer(
        lambda: cache.index,
        super_users=parse_super_users(config.get("super.users")),
        allow_everyone_if_no_acl=bool(config.get("allow.everyone.if.no.acl.found")),
    )

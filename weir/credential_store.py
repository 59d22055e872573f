"""The broker's door to SCRAM credentials: SASL logins read them, the admin APIs change them.

Credentials live in Redis (the layout and encoding are ``weir.security.credentials``'s).
Handlers get this store, never the Redis client: SaslHandshake's login looks a user up
(one HGET per authentication, so a change made anywhere applies to the next login), and
Describe/AlterUserScramCredentials list, check, delete and write them.
"""

from __future__ import annotations

from typing import Any

from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WriteQuorum
from weir.security.credentials import (
    describe_users,
    encode_credential,
    get_credential,
    scram_key,
)
from weir.security.scram import ScramCredential

__all__ = ["ScramCredentialStore"]


class ScramCredentialStore:
    """SCRAM credentials of one cluster, by mechanism and user name."""

    def __init__(self, redis: Any, *, cluster_id: str) -> None:
        self._redis = redis
        self._cluster_id = cluster_id
        # A credential change counts once a majority of a Sentinel deployment holds it.
        self._quorum = WriteQuorum(redis, KeyLayout(cluster_id))

    async def lookup(self, mechanism: str, user: str) -> ScramCredential | None:
        """The credential a login checks against, or None for an unknown user."""
        return await get_credential(self._redis, self._cluster_id, mechanism, user)

    async def describe(self) -> dict[str, dict[str, int]]:
        """user → {mechanism: iterations} over every stored credential."""
        return await describe_users(self._redis, self._cluster_id)

    async def exists(self, mechanism: str, user: str) -> bool:
        return bool(await self._redis.hexists(scram_key(self._cluster_id, mechanism), user))

    async def delete(self, mechanism: str, user: str) -> None:
        key = scram_key(self._cluster_id, mechanism)
        await self._quorum.write(lambda pipe: pipe.hdel(key, user))

    async def put(self, mechanism: str, user: str, credential: ScramCredential) -> None:
        key, value = scram_key(self._cluster_id, mechanism), encode_credential(credential)
        await self._quorum.write(lambda pipe: pipe.hset(key, user, value))

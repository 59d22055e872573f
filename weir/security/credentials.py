"""SCRAM credentials in Redis: one hash per mechanism, user name → JSON credential.

Theory of operation
-------------------
``weir:{cluster}:scram:SCRAM-SHA-256`` and ``...:scram:SCRAM-SHA-512`` map a user name to
``{"salt": b64, "iterations": n, "stored_key": b64, "server_key": b64}`` — Kafka's
``ScramCredential``; no password is ever stored. Brokers read the hash on every
authentication (one HGET), so a change made by any broker or by ``manage.py scram-users``
applies to the next login everywhere. The helpers here are pure (encode/decode) plus thin
sync and async accessors so the CLI (sync redis) and the broker (asyncio redis) share them.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from weir.metadata.keys import KeyLayout
from weir.security.scram import MECHANISMS, ScramCredential

__all__ = [
    "decode_credential",
    "describe_users",
    "encode_credential",
    "get_credential",
    "scram_key",
]


def scram_key(cluster_id: str, mechanism: str) -> str:
    return KeyLayout(cluster_id).scram_credentials(mechanism)


def encode_credential(credential: ScramCredential) -> str:
    return json.dumps(
        {
            "salt": base64.b64encode(credential.salt).decode(),
            "iterations": credential.iterations,
            "stored_key": base64.b64encode(credential.stored_key).decode(),
            "server_key": base64.b64encode(credential.server_key).decode(),
        }
    )


def decode_credential(raw: bytes | str) -> ScramCredential:
    data = json.loads(raw)
    return ScramCredential(
        salt=base64.b64decode(data["salt"]),
        iterations=int(data["iterations"]),
        stored_key=base64.b64decode(data["stored_key"]),
        server_key=base64.b64decode(data["server_key"]),
    )


async def get_credential(
    redis: Any, cluster_id: str, mechanism: str, user: str
) -> ScramCredential | None:
    raw = await redis.hget(scram_key(cluster_id, mechanism), user)
    return decode_credential(raw) if raw is not None else None


async def describe_users(redis: Any, cluster_id: str) -> dict[str, dict[str, int]]:
    """user → {mechanism: iterations} over every stored credential."""
    users: dict[str, dict[str, int]] = {}
    for mechanism in MECHANISMS:
        entries = await redis.hgetall(scram_key(cluster_id, mechanism))
        for user, raw in entries.items():
            name = user.decode() if isinstance(user, bytes) else user
            users.setdefault(name, {})[mechanism] = decode_credential(raw).iterations
    return users

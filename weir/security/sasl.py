"""Per-connection SASL state: the mechanism chosen by SaslHandshake and its exchange.

Theory of operation
-------------------
A connection on a SASL listener starts unauthenticated; the server serves it nothing but
ApiVersions, SaslHandshake and SaslAuthenticate (``PRE_AUTH_APIS``). SaslHandshake picks a
mechanism from ``sasl.enabled.mechanisms`` and stores a ``SaslSession`` on the connection
context; each SaslAuthenticate token (or, after a v0 handshake, each raw length-prefixed token)
goes to ``SaslSession.step``, which answers the next server token or raises ``SaslFailure``.
When the exchange completes, ``principal`` is ``User:<name>``.

* PLAIN (RFC 4616): ``[authzid] NUL user NUL password``; the password is checked by deriving
  the SCRAM-SHA-512 (else SCRAM-SHA-256) credential with the stored salt and iterations and
  comparing StoredKey in constant time — Weir keeps no plain passwords.
* SCRAM-SHA-256/512: ``weir.security.scram.ScramServer``, two client tokens.

Tokens above ``MAX_TOKEN_BYTES`` are refused (the caller closes the connection).
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Awaitable, Callable

from weir.security.scram import (
    MECHANISMS,
    ScramCredential,
    ScramError,
    ScramServer,
    credential_from_salted_password,
    salted_password,
)

__all__ = [
    "ANONYMOUS",
    "MAX_TOKEN_BYTES",
    "PRE_AUTH_APIS",
    "SUPPORTED_MECHANISMS",
    "SaslFailure",
    "SaslSession",
]

ANONYMOUS = "User:ANONYMOUS"
MAX_TOKEN_BYTES = 64 * 1024
PRE_AUTH_APIS = frozenset({17, 18, 36})  # SaslHandshake, ApiVersions, SaslAuthenticate
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

Lookup = Callable[[str, str], Awaitable[ScramCredential | None]]  # (mechanism, user)


class SaslFailure(Exception):
    """Authentication failed; the message goes into SaslAuthenticate's error_message."""


class SaslSession:
    """One connection's SASL exchange."""

    def __init__(self, mechanism: str, lookup: Lookup, *, raw: bool = False) -> None:
        self.mechanism = mechanism
        self.raw = raw  # v0 handshake: tokens arrive without Kafka request headers
        self.principal: str | None = None
        self._lookup = lookup
        self._scram: ScramServer | None = None
        self._scram_credential: ScramCredential | None = None

    @property
    def complete(self) -> bool:
        return self.principal is not None

    async def step(self, token: bytes) -> bytes:
        """Consume one client token; the server's answer. Raises SaslFailure."""
        if self.complete:
            raise SaslFailure("the SASL exchange is already complete")
        if len(token) > MAX_TOKEN_BYTES:
            raise SaslFailure(f"SASL token of {len(token)} bytes exceeds {MAX_TOKEN_BYTES}")
        if self.mechanism == "PLAIN":
            return await self._plain(token)
        return await self._scram_step(token)

    async def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\x00")
        if len(parts) != 3 or not parts[1] or not parts[2]:
            raise SaslFailure("Invalid SASL/PLAIN request: expected 3 tokens")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise SaslFailure("Invalid SASL/PLAIN request: not UTF-8") from None
        if authzid and authzid != user:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id "
                "that is different from username"
            )
        for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
            credential = await self._lookup(mechanism, user)
            if credential is None:
                continue
            derived = await asyncio.to_thread(
                _derive, mechanism, password, credential.salt, credential.iterations
            )
            if hmac.compare_digest(derived.stored_key, credential.stored_key):
                self.principal = f"User:{user}"
                return b""
            break
        raise SaslFailure("Authentication failed: Invalid username or password")

    async def _scram_step(self, token: bytes) -> bytes:
        try:
            if self._scram is None:
                first = _parse_username(token)
                credential = await self._lookup(self.mechanism, first) if first else None
                self._scram = ScramServer(self.mechanism, lambda _user: credential)
                return self._scram.first(token)
            answer = self._scram.final(token)
        except ScramError as exc:
            raise SaslFailure(str(exc)) from None
        self.principal = f"User:{self._scram.username}"
        return answer


def _derive(mechanism: str, password: str, salt: bytes, iterations: int) -> ScramCredential:
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salted, salt, iterations)


def _parse_username(token: bytes) -> str | None:
    """The (escaped-decoded) user name of a client-first message, if it has one."""
    try:
        bare = token.decode("utf-8").split(",", 2)[2]
    except (UnicodeDecodeError, IndexError):
        return None
    first = bare.split(",", 1)[0]
    if not first.startswith("n="):
        return None
    return first[2:].replace("=2C", ",").replace("=3D", "=")


assert set(SUPPORTED_MECHANISMS) >= set(MECHANISMS)

"""SCRAM (RFC 5802, RFC 7677): salted credentials and the server side of the exchange.

Theory of operation
-------------------
A credential is what Kafka stores: ``salt``, ``iterations``, ``StoredKey = H(ClientKey)`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")`` where ``ClientKey = HMAC(SaltedPassword,
"Client Key")`` and ``SaltedPassword = PBKDF2-HMAC(password, salt, iterations)``. The password
itself is never kept. ``ScramServer`` runs one exchange as a two-step state machine:

1. ``first(client_first)`` parses ``n,,n=<user>,r=<client nonce>`` (no channel binding), asks
   ``lookup(user)`` for the credential and answers ``r=<client nonce + server nonce>,s=<salt>,
   i=<iterations>``.
2. ``final(client_final)`` checks the channel-binding echo (``c=biws``), the combined nonce and
   the proof (``H(proof XOR HMAC(StoredKey, AuthMessage)) == StoredKey``, compared in constant
   time) and answers ``v=<server signature>``.

Any malformed message, a nonce mismatch or a bad proof raises ``ScramError``; the caller turns
it into SASL_AUTHENTICATION_FAILED and closes the connection.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MIN_ITERATIONS",
    "ScramCredential",
    "ScramError",
    "ScramServer",
    "credential_from_password",
    "credential_from_salted_password",
    "hash_of",
    "salted_password",
]

# Kafka's ScramMechanism: name → (hash name, wire id used by the *UserScramCredentials APIs).
MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-256": ("sha256", 1),
    "SCRAM-SHA-512": ("sha512", 2),
}
# The same, by wire id.
MECHANISM_BY_ID: dict[int, str] = {wire_id: name for name, (_, wire_id) in MECHANISMS.items()}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384  # Kafka's upper bound for AlterUserScramCredentials


class ScramError(Exception):
    """The SCRAM exchange failed (bad message, unknown user, nonce mismatch, bad proof)."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def hash_of(mechanism: str) -> str:
    """The hash a SCRAM mechanism uses; ScramError for a mechanism Weir does not offer."""
    if mechanism not in MECHANISMS:
        raise ScramError(f"unsupported mechanism {mechanism}")
    return MECHANISMS[mechanism][0]


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    hash_name = MECHANISMS[mechanism][0]
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def credential_from_salted_password(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    hash_name = MECHANISMS[mechanism][0]
    client_key = _hmac(hash_name, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        iterations=iterations,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=_hmac(hash_name, salted, b"Server Key"),
    )


def credential_from_password(
    mechanism: str, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salted, salt, iterations)


def _unescape_username(text: str) -> str:
    if "=" in text.replace("=2C", "").replace("=3D", ""):
        raise ScramError("invalid username encoding")
    return text.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: str) -> list[tuple[str, str]]:
    attrs = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError("malformed SCRAM attribute")
        attrs.append((part[0], part[2:]))
    return attrs


class ScramServer:
    """The server side of one SCRAM exchange."""

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        *,
        server_nonce: str | None = None,  # fixed only by tests (RFC test vectors)
    ) -> None:
        self._hash = hash_of(mechanism)
        self.mechanism = mechanism
        self._lookup = lookup
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._server_nonce = server_nonce

    def first(self, message: bytes) -> bytes:
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("client-first message is not UTF-8") from None
        parts = text.split(",", 2)
        if len(parts) != 3 or parts[0] not in ("n", "y") or (parts[1] and parts[1][:2] != "a="):
            raise ScramError("invalid GS2 header (channel binding is not supported)")
        self._gs2_header = f"{parts[0]},{parts[1]},"
        self._client_first_bare = parts[2]
        attrs = _attributes(parts[2])
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r" or not attrs[1][1]:
            raise ScramError("client-first message needs n=<user>,r=<nonce>")
        self.username = _unescape_username(attrs[0][1])
        client_nonce = attrs[1][1]
        credential = self._lookup(self.username)
        if credential is None:
            raise ScramError("Authentication failed: Invalid user credentials")
        self._credential = credential
        self._nonce = client_nonce + (self._server_nonce or secrets.token_urlsafe(24))
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first.encode()

    def final(self, message: bytes) -> bytes:
        credential = self._credential
        if credential is None:
            raise ScramError("client-final message before client-first")
        try:
            text = message.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("client-final message is not UTF-8") from None
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final message has no proof")
        attrs = dict(_attributes(without_proof))
        try:
            channel = base64.b64decode(attrs.get("c", ""), validate=True).decode()
            proof = base64.b64decode(proof_text, validate=True)
        except (ValueError, UnicodeDecodeError):
            raise ScramError("invalid base64 in client-final message") from None
        if channel != self._gs2_header:
            raise ScramError("channel binding does not match the GS2 header")
        if not hmac.compare_digest(attrs.get("r", "").encode(), self._nonce.encode()):
            raise ScramError("Invalid client nonce in the final client message.")
        auth_message = ",".join((self._client_first_bare, self._server_first, without_proof))
        signature = _hmac(self._hash, credential.stored_key, auth_message.encode())
        if len(proof) != len(signature):
            raise ScramError("Authentication failed: Invalid user credentials")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self._hash, client_key).digest(), credential.stored_key
        ):
            raise ScramError("Authentication failed: Invalid user credentials")
        server_signature = _hmac(self._hash, credential.server_key, auth_message.encode())
        return b"v=" + base64.b64encode(server_signature)

"""The client side of security: how one broker connects to another (TLS, SASL, JAAS).

Theory of operation
-------------------
``ClientSecurity`` says how a ``weir.client.BrokerClient`` secures its connection: the
security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), for SSL/SASL_SSL an
``ssl.SSLContext`` (and optionally the name to check the peer certificate against), for
SASL_* the mechanism and the credentials. The client opens TLS first, then runs SaslHandshake
v1 + SaslAuthenticate v2 with the tokens made here, before its first real request:

* PLAIN (RFC 4616): one token, ``NUL user NUL password``.
* SCRAM-SHA-256/512 (RFC 5802): ``ScramClient`` -- client-first ``n,,n=<user>,r=<nonce>``,
  client-final with the proof computed from the salted password (the PBKDF2 and HMAC
  primitives of ``weir.security.scram``), then the server's signature is verified, so a
  broker that does not know the password cannot impersonate the peer.

A broker's own credentials come from Kafka's configs (``inter_broker_security``): the
listener named by ``inter.broker.listener.name`` decides the protocol,
``sasl.mechanism.inter.broker.protocol`` the mechanism, and the JAAS text in
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (else ``sasl.jaas.config``) the
username and password; the TLS context comes from ``weir.security.tls``. Bad or missing
settings raise ``InvalidConfigError`` naming the config, so ``runbroker`` refuses to start
with a clear message instead of failing every replica fetch later.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from weir.config import InvalidConfigError
from weir.security.listeners import SUPPORTED_PROTOCOLS
from weir.security.sasl import SUPPORTED_MECHANISMS
from weir.security.scram import (
    MIN_ITERATIONS,
    ScramError,
    hash_of,
    salted_password,
)

__all__ = [
    "PROTOCOLS",
    "SASL_MECHANISMS",
    "ClientSecurity",
    "JaasLogin",
    "ScramClient",
    "inter_broker_security",
    "jaas_credentials",
    "parse_jaas",
    "plain_token",
]

PROTOCOLS = SUPPORTED_PROTOCOLS
SASL_MECHANISMS = SUPPORTED_MECHANISMS
_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")


@dataclass(frozen=True)
class ClientSecurity:
    """How a client connection is secured (PLAINTEXT: not at all)."""

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    username: str | None = None
    password: str | None = None
    ssl_context: ssl.SSLContext | None = None
    # The name the peer certificate is checked against (and sent as SNI); None: the host.
    server_hostname: str | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"unknown security protocol {self.protocol!r}")
        if self.tls and self.ssl_context is None:
            raise ValueError(f"security protocol {self.protocol} needs an ssl_context")
        if self.sasl:
            if self.sasl_mechanism not in SASL_MECHANISMS:
                raise ValueError(f"unsupported SASL mechanism {self.sasl_mechanism!r}")
            if not self.username or self.password is None:
                raise ValueError(f"{self.protocol} needs a username and a password")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def plain_token(username: str, password: str) -> bytes:
    """The one PLAIN message (RFC 4616) with no authorization id."""
    return b"\x00" + username.encode() + b"\x00" + password.encode()


def _escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


class ScramClient:
    """The client side of one SCRAM exchange: ``first()``, ``final(server_first)``,
    ``verify(server_final)``; protocol violations raise ``ScramError``."""

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: str,
        *,
        nonce: str | None = None,  # fixed only by tests (RFC test vectors)
    ) -> None:
        self._hash = hash_of(mechanism)
        self.mechanism = mechanism
        self._password = password
        self._nonce = nonce or secrets.token_urlsafe(24)
        self._client_first_bare = f"n={_escape_username(username)},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        try:
            text = server_first.decode("utf-8")
        except UnicodeDecodeError:
            raise ScramError("server-first message is not UTF-8") from None
        attrs = dict(
            (part[0], part[2:]) for part in text.split(",") if len(part) >= 2 and part[1] == "="
        )
        if "e" in attrs:
            raise ScramError(f"server error: {attrs['e']}")
        nonce, salt_text, iterations_text = attrs.get("r"), attrs.get("s"), attrs.get("i")
        if not nonce or salt_text is None or iterations_text is None:
            raise ScramError(f"malformed server-first message {text!r}")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ScramError("the server nonce does not extend the client nonce")
        try:
            salt = base64.b64decode(salt_text, validate=True)
            iterations = int(iterations_text)
        except ValueError:
            raise ScramError(f"malformed server-first message {text!r}") from None
        if iterations < MIN_ITERATIONS:
            raise ScramError(f"{iterations} iterations are fewer than the minimum {MIN_ITERATIONS}")
        salted = salted_password(self.mechanism, self._password, salt, iterations)
        client_key = _hmac(self._hash, salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={nonce}"
        auth_message = ",".join((self._client_first_bare, text, without_proof)).encode()
        signature = _hmac(self._hash, stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = _hmac(self._hash, salted, b"Server Key")
        self._server_signature = _hmac(self._hash, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """Check the server's signature: it proves the server knows our credential."""
        if self._server_signature is None:
            raise ScramError("server-final message before client-final")
        text = server_final.decode("utf-8", errors="replace")
        if text.startswith("e="):
            raise ScramError(f"server error: {text[2:]}")
        if not text.startswith("v="):
            raise ScramError(f"malformed server-final message {text!r}")
        try:
            signature = base64.b64decode(text[2:].split(",")[0], validate=True)
        except ValueError:
            raise ScramError("invalid base64 in the server signature") from None
        if not hmac.compare_digest(signature, self._server_signature):
            raise ScramError("the server signature is wrong: the broker does not know the user")


# -- JAAS ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class JaasLogin:
    """One JAAS login module entry: ``<module> <flag> key=value ... ;``."""

    module: str
    flag: str
    options: Mapping[str, str]


def _jaas_tokens(text: str, config: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: ``word``, ``quoted`` (unescaped), ``=`` and ``;``."""
    tokens: list[tuple[str, str]] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif char in "=;":
            tokens.append((char, char))
            i += 1
        elif char == '"':
            value: list[str] = []
            i += 1
            while i < len(text) and text[i] != '"':
                if text[i] == "\\" and i + 1 < len(text):
                    i += 1
                value.append(text[i])
                i += 1
            if i >= len(text):
                raise InvalidConfigError(config, f"{config}: unterminated quoted value")
            tokens.append(("quoted", "".join(value)))
            i += 1
        else:
            start = i
            while i < len(text) and not text[i].isspace() and text[i] not in '=;"':
                i += 1
            tokens.append(("word", text[start:i]))
    return tokens


def parse_jaas(text: str, config: str = "sasl.jaas.config") -> JaasLogin:
    """Kafka's ``sasl.jaas.config`` value: exactly one login module.

    ``config`` is the config's name (maybe listener-prefixed), used in error messages.
    """
    tokens = _jaas_tokens(text, config)
    if not tokens:
        raise InvalidConfigError(config, f"{config} is empty")
    position = 0

    def take(kinds: tuple[str, ...], what: str) -> str:
        nonlocal position
        if position >= len(tokens) or tokens[position][0] not in kinds:
            got = repr(tokens[position][1]) if position < len(tokens) else "the end"
            raise InvalidConfigError(config, f"{config}: expected {what}, got {got}")
        position += 1
        return tokens[position - 1][1]

    module = take(("word",), "a login module class name")
    flag = take(("word",), "a control flag (required, requisite, sufficient, optional)")
    if flag.lower() not in _JAAS_FLAGS:
        raise InvalidConfigError(
            config, f"{config}: invalid control flag {flag!r} (expected one of {_JAAS_FLAGS})"
        )
    options: dict[str, str] = {}
    while position < len(tokens) and tokens[position][0] != ";":
        key = take(("word",), "an option name")
        take(("=",), f"'=' after {key}")
        options[key] = take(("word", "quoted"), f"a value for {key}")
    take((";",), "';' after the login module's options")
    if position != len(tokens):
        raise InvalidConfigError(
            config, f"{config} must contain exactly one login module (found more after ';')"
        )
    return JaasLogin(module=module, flag=flag.lower(), options=options)


def jaas_credentials(text: str, config: str = "sasl.jaas.config") -> tuple[str, str]:
    """(username, password) from a JAAS login module's options."""
    login = parse_jaas(text, config)
    missing = [k for k in ("username", "password") if k not in login.options]
    if missing:
        raise InvalidConfigError(
            config, f"{config}: the login module has no {' and no '.join(missing)} option"
        )
    if not login.options["username"]:
        raise InvalidConfigError(config, f"{config}: username is empty")
    return login.options["username"], login.options["password"]


# -- a broker's own inter-broker credentials ---------------------------------------------------
def inter_broker_security(
    configs: Mapping[str, str], *, listener: str, protocol: str
) -> ClientSecurity:
    """How this broker connects to the other brokers' ``listener`` (of ``protocol``).

    ``configs`` are the broker's static configs (``runbroker --config``, raw strings).
    """
    ssl_context = None
    if protocol in ("SSL", "SASL_SSL"):
        from weir.security.tls import broker_client_ssl_context

        ssl_context = broker_client_ssl_context(configs, listener)
    if not protocol.startswith("SASL_"):
        return ClientSecurity(protocol=protocol, ssl_context=ssl_context)
    key = "sasl.mechanism.inter.broker.protocol"
    mechanism = (configs.get(key) or "").strip()
    if not mechanism:
        raise InvalidConfigError(
            key,
            f"{key} is required: the inter-broker listener {listener} is {protocol} "
            f"(one of {', '.join(SASL_MECHANISMS)})",
        )
    if mechanism not in SASL_MECHANISMS:
        raise InvalidConfigError(
            key, f"{key}={mechanism} is not supported (one of {', '.join(SASL_MECHANISMS)})"
        )
    enabled_text = configs.get("sasl.enabled.mechanisms")
    enabled = (
        [m.strip() for m in enabled_text.split(",") if m.strip()]
        if enabled_text is not None
        else list(SASL_MECHANISMS)
    )
    if mechanism not in enabled:
        raise InvalidConfigError(
            key,
            f"{key}={mechanism} must be one of sasl.enabled.mechanisms ({', '.join(enabled)})",
        )
    prefixed = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    jaas_key = prefixed if configs.get(prefixed) else "sasl.jaas.config"
    jaas = configs.get(jaas_key)
    if not jaas:
        raise InvalidConfigError(
            jaas_key,
            f"the inter-broker listener {listener} is {protocol}: set {prefixed} or "
            "sasl.jaas.config (e.g. org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="broker" password="...";)',
        )
    username, password = jaas_credentials(jaas, jaas_key)
    return ClientSecurity(
        protocol=protocol,
        sasl_mechanism=mechanism,
        username=username,
        password=password,
        ssl_context=ssl_context,
    )

"""``--command-config FILE``: the admin tools' Kafka client properties, as Kafka's tools take them.

Theory of operation
-------------------
Kafka's shell tools (``kafka-topics.sh --bootstrap-server B --command-config client.properties``)
read a Java-properties file of client properties and authenticate with them. Weir's tools do
the same: :func:`load_properties` reads the file with Java's ``Properties.load`` rules
(``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments; ``\\`` line continuations
and escapes), and :func:`tool_security` turns the properties into a :class:`ToolSecurity`,
which hands each of the tools' two kinds of client its form:

* ``librdkafka_config()`` -- confluent-kafka's AdminClient (``acls``, ``consumer-groups``,
  ``scram-users``, throttles of ``reassign-partitions``);
* ``broker_client()`` -- Weir's kio :class:`~weir.client.BrokerClient` (requests AdminClient
  cannot express: ``topics``, ``configs``, ``leader-election``, reassignments).

:class:`~controlplane.kafka_security.KafkaSecurity` (the ``WEIR_KAFKA_*`` settings, what the
tools use without ``--command-config``) offers the same two methods, so a tool does not care
which one it holds.

Both the Java client's names and librdkafka's are accepted, since operators bring files
written for either: ``sasl.jaas.config`` (Kafka's ``ScramLoginModule`` / ``PlainLoginModule``)
or ``sasl.username``/``sasl.password``; ``ssl.truststore.*`` (PEM or PKCS12) or
``ssl.ca.location``; ``ssl.keystore.*`` (PEM or PKCS12, ``ssl.key.password``) or
``ssl.certificate.location`` + ``ssl.key.location``. ``ssl.endpoint.identification.algorithm``
defaults to ``https`` (the broker's certificate must name the host), as in Kafka's clients
and librdkafka.

A property the tools would not honour is refused with an error naming it rather than ignored
(Kafka's clients only warn, but a silently ignored ``ssl.truststore.location`` is a security
hole): unknown keys, Kafka features Weir lacks (GSSAPI, OAUTHBEARER, JKS stores, custom
callback classes), ``sasl.*`` without a SASL protocol, ``ssl.*`` without TLS, and two ways of
saying the same thing in one file. Every store is opened here, so a wrong password or path
fails before the first request with the key in the message.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from django.core.management.base import CommandError

from weir.config import InvalidConfigError
from weir.security.client import ClientSecurity, parse_jaas
from weir.security.listeners import SUPPORTED_PROTOCOLS
from weir.security.sasl import SUPPORTED_MECHANISMS
from weir.security.tls import TlsConfigError, broker_client_ssl_context

if TYPE_CHECKING:
    from weir.client import BrokerClient

__all__ = ["SUPPORTED_PROPERTIES", "ToolSecurity", "load_properties", "tool_security"]

# Java's login modules for the mechanisms Weir speaks: username/password in the options.
_LOGIN_MODULES = {
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
}
_SASL_KEYS = ("sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password")
_TLS_KEYS = (
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.endpoint.identification.algorithm",
)
SUPPORTED_PROPERTIES = ("security.protocol", "client.id", *_SASL_KEYS, *_TLS_KEYS)
# Kafka client properties the tools cannot honour, with what to do instead.
_UNSUPPORTED = {
    "sasl.kerberos.": "GSSAPI (Kerberos) is not supported by Weir",
    "sasl.oauthbearer.": "OAUTHBEARER is not supported by Weir",
    "sasl.login.": "custom SASL login classes are not supported; use sasl.jaas.config",
    "sasl.client.callback.handler.class": "custom SASL callback handlers are not supported",
    "ssl.truststore.certificates": "inline certificates are not supported; use "
    "ssl.truststore.location",
    "ssl.keystore.certificate.chain": "inline keys are not supported; use ssl.keystore.location",
    "ssl.keystore.key": "inline keys are not supported; use ssl.keystore.location",
}


# -- the file -------------------------------------------------------------------------------
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """Java's logical lines: comments and blank lines dropped, continuations joined (a line
    ending in an odd number of backslashes continues on the next, leading blanks stripped)."""
    lines: list[str] = []
    current: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if current is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        joined = line if current is None else current + line
        if trailing % 2:
            current = joined[:-1]
            continue
        lines.append(joined)
        current = None
    if current is not None:
        lines.append(current)
    return lines


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2 : i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """(key, value): the key ends at the first unescaped ``=``, ``:`` or blank."""
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """A Java-properties text as a dict (a later key wins, as in Java)."""
    return dict(_split(line) for line in _logical_lines(text))


def load_properties(path: str) -> dict[str, str]:
    """The properties of the file ``path``, or a CommandError naming it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise CommandError(f"--command-config {path}: cannot read it ({reason})") from None
    return parse_properties(text)


# -- the security it describes --------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class ToolSecurity:
    """How an admin tool authenticates, from a ``--command-config`` file."""

    protocol: str = "PLAINTEXT"
    client_id: str = "weir-admin"
    librdkafka: Mapping[str, str] = field(default_factory=dict)
    client_security: ClientSecurity | None = None
    # Tools connect to the addresses they are given, not to a named registered listener.
    listener: str = ""

    def __repr__(self) -> str:  # never print the passwords
        return f"ToolSecurity(protocol={self.protocol!r}, client_id={self.client_id!r})"

    def librdkafka_config(self) -> dict[str, str]:
        """confluent-kafka properties (``security.protocol``, ``sasl.*``, ``ssl.*``)."""
        return dict(self.librdkafka)

    def broker_client(self, host: str, port: int, *, client_id: str) -> BrokerClient:
        """A kio client of ``host:port`` that authenticates as the file says."""
        from weir.client import BrokerClient

        return BrokerClient(host, port, client_id=client_id, security=self.client_security)


class _Refused(Exception):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def tool_security(properties: Mapping[str, str], *, source: str) -> ToolSecurity:
    """The :class:`ToolSecurity` ``properties`` describe, or a CommandError naming the key at
    fault (``source`` says where they came from, e.g. ``--command-config FILE``)."""
    try:
        return _security(properties)
    except _Refused as exc:
        raise CommandError(f"{source}: {exc.message}") from None
    except (InvalidConfigError, TlsConfigError) as exc:
        raise CommandError(f"{source}: {exc}") from None


def _check_keys(props: Mapping[str, str]) -> None:
    for key in props:
        if key in SUPPORTED_PROPERTIES:
            continue
        for prefix, why in _UNSUPPORTED.items():
            if key.startswith(prefix):
                raise _Refused(key, f"{key} is not supported: {why}")
        raise _Refused(
            key,
            f"{key} is not a client property the admin tools support (they take "
            + ", ".join(SUPPORTED_PROPERTIES)
            + ")",
        )


def _security(props: Mapping[str, str]) -> ToolSecurity:
    _check_keys(props)
    protocol = (props.get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in SUPPORTED_PROTOCOLS:
        raise _Refused(
            "security.protocol",
            f"security.protocol={props['security.protocol']} is not one of "
            + ", ".join(SUPPORTED_PROTOCOLS),
        )
    sasl = protocol.startswith("SASL_")
    tls = protocol.endswith("SSL")
    for keys, wanted, needs in ((_SASL_KEYS, sasl, "SASL_PLAINTEXT or SASL_SSL"),
                                (_TLS_KEYS, tls, "SSL or SASL_SSL")):  # fmt: skip
        for key in keys:
            if key in props and not wanted:
                raise _Refused(
                    key, f"{key} is set but security.protocol is {protocol}; use {needs}"
                )
    client_id = (props.get("client.id") or "").strip() or "weir-admin"
    config: dict[str, str] = {"security.protocol": protocol, "client.id": client_id}
    mechanism, username, password = _sasl(props) if sasl else (None, None, None)
    if mechanism is not None:
        config.update(
            {"sasl.mechanism": mechanism, "sasl.username": username, "sasl.password": password}
        )
    context = None
    if tls:
        context = _tls(props, config)
    security = None
    if protocol != "PLAINTEXT":
        security = ClientSecurity(
            protocol=protocol,
            sasl_mechanism=mechanism,
            username=username,
            password=password,
            ssl_context=context,
        )
    return ToolSecurity(
        protocol=protocol, client_id=client_id, librdkafka=config, client_security=security
    )


def _sasl(props: Mapping[str, str]) -> tuple[str, str, str]:
    """(mechanism, username, password) of a SASL protocol."""
    mechanism = (props.get("sasl.mechanism") or "").strip().upper()
    if not mechanism:
        raise _Refused(
            "sasl.mechanism",
            "sasl.mechanism is required: Kafka's default, GSSAPI, is not supported by Weir "
            f"(use one of {', '.join(SUPPORTED_MECHANISMS)})",
        )
    if mechanism not in SUPPORTED_MECHANISMS:
        raise _Refused(
            "sasl.mechanism",
            f"sasl.mechanism={mechanism} is not supported "
            f"(use one of {', '.join(SUPPORTED_MECHANISMS)})",
        )
    jaas = props.get("sasl.jaas.config")
    if jaas is not None:
        if "sasl.username" in props or "sasl.password" in props:
            raise _Refused(
                "sasl.username",
                "sasl.username/sasl.password and sasl.jaas.config both give credentials; keep one",
            )
        login = parse_jaas(jaas)
        mechanisms = _LOGIN_MODULES.get(login.module)
        if mechanisms is None:
            raise _Refused(
                "sasl.jaas.config",
                f"sasl.jaas.config: login module {login.module} is not supported (use "
                + " or ".join(_LOGIN_MODULES)
                + ")",
            )
        if mechanism not in mechanisms:
            raise _Refused(
                "sasl.jaas.config",
                f"sasl.jaas.config: {login.module.rsplit('.', 1)[-1]} does not log in with "
                f"sasl.mechanism={mechanism}",
            )
        missing = [k for k in ("username", "password") if not login.options.get(k)]
        if missing:
            raise _Refused(
                "sasl.jaas.config",
                f"sasl.jaas.config: the login module has no {' and no '.join(missing)}",
            )
        return mechanism, login.options["username"], login.options["password"]
    username, password = props.get("sasl.username"), props.get("sasl.password")
    if not username or password is None:
        missing_key = "sasl.jaas.config" if username is None else "sasl.password"
        raise _Refused(
            missing_key,
            "SASL needs credentials: set sasl.jaas.config (e.g. "
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="alice" password="...";) or sasl.username and sasl.password',
        )
    return mechanism, username, password


def _either(props: Mapping[str, str], java: str, librdkafka: str) -> None:
    if java in props and librdkafka in props:
        raise _Refused(librdkafka, f"{java} and {librdkafka} both set; keep one")


def _tls(props: Mapping[str, str], config: dict[str, str]) -> ssl.SSLContext:
    """The kio clients' SSL context; fills ``config`` with librdkafka's ``ssl.*``."""
    _either(props, "ssl.truststore.location", "ssl.ca.location")
    _either(props, "ssl.keystore.location", "ssl.certificate.location")
    if ("ssl.certificate.location" in props) != ("ssl.key.location" in props):
        raise _Refused(
            "ssl.key.location",
            "ssl.certificate.location and ssl.key.location go together "
            "(a client certificate needs its private key)",
        )
    algorithm_key = "ssl.endpoint.identification.algorithm"
    algorithm = props.get(algorithm_key, "https").strip().lower()
    if algorithm not in ("https", ""):
        raise _Refused(algorithm_key, f"{algorithm_key} must be https or empty, got {algorithm!r}")
    # The Java names go to the broker's own TLS client code (PEM and PKCS12 stores, JKS
    # refused with a message naming the key); librdkafka's CA file is a PEM truststore.
    kafka_style = {k: v for k, v in props.items() if k.startswith("ssl.")}
    if "ssl.ca.location" in props:
        kafka_style["ssl.truststore.location"] = props["ssl.ca.location"]
        kafka_style["ssl.truststore.type"] = "PEM"
    context = broker_client_ssl_context(kafka_style, "")
    config["ssl.endpoint.identification.algorithm"] = algorithm or "none"
    truststore = kafka_style.get("ssl.truststore.location")
    if truststore:
        if kafka_style.get("ssl.truststore.type", "PEM").upper() == "PEM":
            config["ssl.ca.location"] = truststore
        else:  # librdkafka reads no PKCS12 truststore: hand it the CAs the context trusts
            config["ssl.ca.pem"] = "".join(
                ssl.DER_cert_to_PEM_cert(der) for der in context.get_ca_certs(binary_form=True)
            )
    keystore = props.get("ssl.keystore.location")
    if keystore:
        if props.get("ssl.keystore.type", "PEM").upper() == "PEM":
            # Kafka's PEM keystore is key and chain in one file; OpenSSL finds each in it.
            config["ssl.certificate.location"] = keystore
            config["ssl.key.location"] = keystore
        else:
            config["ssl.keystore.location"] = keystore
            config["ssl.keystore.password"] = props.get("ssl.keystore.password", "")
    certificate = props.get("ssl.certificate.location")
    if certificate:
        key = props["ssl.key.location"]
        password = props.get("ssl.key.password")
        try:
            # A callable password: never OpenSSL's pass-phrase prompt on the terminal.
            context.load_cert_chain(certificate, key, password=lambda: password or "")
        except (OSError, ssl.SSLError) as exc:
            raise _Refused(
                "ssl.certificate.location",
                f"ssl.certificate.location: cannot load {certificate} (key {key}): {exc}",
            ) from None
        config["ssl.certificate.location"] = certificate
        config["ssl.key.location"] = key
    if props.get("ssl.key.password"):
        config["ssl.key.password"] = props["ssl.key.password"]
    return context

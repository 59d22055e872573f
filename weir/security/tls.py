"""TLS for SSL / SASL_SSL listeners: SSL contexts from Kafka's ``ssl.*`` configs, principals.

Theory of operation
-------------------
Every ``ssl.*`` config may be given per listener as ``listener.name.<listener lower>.ssl.*``;
the prefixed one wins (Kafka's rule). A keystore is Kafka's PEM keystore (private key plus
certificate chain in one file, the key optionally encrypted with ``ssl.key.password``) or a
PKCS12 file opened with ``ssl.keystore.password``; JKS is Java's own format and is refused.
Both are parsed with ``cryptography`` first, so a wrong password or a broken file becomes a
``TlsConfigError`` naming the config instead of an OpenSSL code (or, worse, a pass-phrase
prompt on the terminal). The stdlib ``ssl`` module only loads a key chain from a file, so the
parsed key goes through a private temporary file (mode 0600, the key encrypted there with a
one-time random password) that is removed as soon as it is loaded.

A truststore (PEM or PKCS12 CA certificates) is what client certificates are checked against;
``ssl.client.auth`` says whether the listener requires, requests or ignores them.

The principal of an SSL connection is Kafka's default: ``User:`` + the client certificate's
subject in RFC 2253 form, most specific attribute first (``User:CN=writer,OU=eng,O=Acme``),
or what ``ssl.principal.mapping.rules`` (Kafka's SslPrincipalMapper) makes of it. A TLS
connection without a client certificate is ``User:ANONYMOUS``.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from weir.security.sasl import ANONYMOUS

__all__ = [
    "TLS_PROTOCOLS",
    "TlsConfigError",
    "broker_client_ssl_context",
    "client_ssl_context",
    "map_principal",
    "parse_principal_mapping_rules",
    "principal_from_peer",
    "server_ssl_context",
    "tls_config",
]

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
_STORE_TYPES = ("PEM", "PKCS12")
_CLIENT_AUTH = {
    "required": ssl.CERT_REQUIRED,
    "requested": ssl.CERT_OPTIONAL,
    "none": ssl.CERT_NONE,
}


class TlsConfigError(ValueError):
    """A TLS config is missing, malformed or does not open its files; names the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def tls_config(configs: Mapping[str, str], listener: str, name: str) -> tuple[str, str | None]:
    """(the key that is in effect, its value): ``listener.name.<l>.<name>`` wins over ``name``;
    (``name``, None) when neither is set."""
    prefixed = f"listener.name.{listener.lower()}.{name}"
    if configs.get(prefixed) not in (None, ""):
        return prefixed, configs[prefixed]
    value = configs.get(name)
    return (name, value) if value not in (None, "") else (name, None)


# -- key material ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _KeyChain:
    key: PrivateKeyTypes
    chain: tuple[x509.Certificate, ...]


def _read(key: str, path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise TlsConfigError(key, f"{key}: cannot read {path}: {exc.strerror}") from None


def _store_type(configs: Mapping[str, str], listener: str, name: str) -> str:
    key, value = tls_config(configs, listener, name)
    store_type = (value or "PEM").upper()
    if store_type == "JKS":
        raise TlsConfigError(
            key,
            f"{key}: JKS is not supported; convert the store to PKCS12 or PEM (keytool "
            "-importkeystore -deststoretype PKCS12)",
        )
    if store_type not in _STORE_TYPES:
        raise TlsConfigError(key, f"{key}: must be PEM or PKCS12, got {value!r}")
    return store_type


def _password(value: str | None) -> bytes | None:
    return value.encode() if value else None


def _load_pem_keystore(key: str, path: str, password_key: str, password: str | None) -> _KeyChain:
    data = _read(key, path)
    try:
        chain = tuple(x509.load_pem_x509_certificates(data))
    except ValueError:
        raise TlsConfigError(key, f"{key}: {path} holds no PEM certificate") from None
    try:
        private = serialization.load_pem_private_key(data, _password(password))
    except TypeError:  # encrypted without a password, or a password for a plain key
        if password:  # a plain key: the password (maybe meant for another store) is unused
            return _KeyChain(serialization.load_pem_private_key(data, None), chain)
        raise TlsConfigError(
            password_key, f"the key in {path} is encrypted: {password_key} is required"
        ) from None
    except ValueError:
        if password and b"ENCRYPTED" in data:
            raise TlsConfigError(
                password_key, f"{password_key} does not decrypt the key in {path}"
            ) from None
        raise TlsConfigError(key, f"{key}: {path} holds no readable PEM private key") from None
    return _KeyChain(private, chain)


def _load_pkcs12(
    key: str, path: str, password_key: str, password: str | None
) -> pkcs12.PKCS12KeyAndCertificates:
    data = _read(key, path)
    try:
        return pkcs12.load_pkcs12(data, _password(password))
    except ValueError:
        raise TlsConfigError(
            password_key,
            f"{key}: cannot open the PKCS12 store {path} (wrong {password_key}, or not PKCS12)",
        ) from None


def _load_keystore(configs: Mapping[str, str], listener: str) -> _KeyChain | None:
    key, path = tls_config(configs, listener, "ssl.keystore.location")
    if path is None:
        return None
    store_type = _store_type(configs, listener, "ssl.keystore.type")
    if store_type == "PEM":
        password_key, password = tls_config(configs, listener, "ssl.key.password")
        return _load_pem_keystore(key, path, password_key, password)
    password_key, password = tls_config(configs, listener, "ssl.keystore.password")
    store = _load_pkcs12(key, path, password_key, password)
    if store.key is None or store.cert is None:
        raise TlsConfigError(key, f"{key}: {path} holds no private key with its certificate")
    chain = (store.cert.certificate, *(c.certificate for c in store.additional_certs))
    return _KeyChain(store.key, chain)


def _use_key_chain(context: ssl.SSLContext, key: str, key_chain: _KeyChain) -> None:
    """Hand a parsed key and chain to ``ssl``, which reads them only from a file."""
    one_time = secrets.token_urlsafe(24)
    pem = key_chain.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(one_time.encode()),
    ) + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in key_chain.chain)
    fd, tmp = tempfile.mkstemp(prefix="weir-keystore-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        context.load_cert_chain(tmp, password=one_time)
    except ssl.SSLError as exc:
        raise TlsConfigError(key, f"{key}: the key does not fit the certificate ({exc})") from None
    finally:
        os.unlink(tmp)


def _load_truststore(context: ssl.SSLContext, configs: Mapping[str, str], listener: str) -> bool:
    """Trust the CA certificates of the truststore; False when none is configured."""
    key, path = tls_config(configs, listener, "ssl.truststore.location")
    if path is None:
        return False
    if _store_type(configs, listener, "ssl.truststore.type") == "PEM":
        data = _read(key, path)
        try:
            certs = x509.load_pem_x509_certificates(data)
        except ValueError:
            raise TlsConfigError(key, f"{key}: {path} holds no PEM certificate") from None
    else:
        password_key, password = tls_config(configs, listener, "ssl.truststore.password")
        store = _load_pkcs12(key, path, password_key, password)
        certs = [c.certificate for c in ((store.cert,) if store.cert else ())]
        certs += [c.certificate for c in store.additional_certs]
        if not certs:
            raise TlsConfigError(key, f"{key}: {path} holds no certificate")
    cadata = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certs)
    context.load_verify_locations(cadata=cadata)
    return True


def _new_context(purpose: int) -> ssl.SSLContext:
    context = ssl.SSLContext(purpose)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


# -- contexts -------------------------------------------------------------------------------
def server_ssl_context(
    configs: Mapping[str, str], listener: str, *, protocol: str = "SSL"
) -> ssl.SSLContext:
    """The server side of an SSL / SASL_SSL listener, from the (prefixed) ``ssl.*`` configs.

    On SASL_SSL only ``listener.name.<l>.ssl.client.auth`` counts, not the bare config
    (Kafka's KIP-684: SASL already authenticates; a broker-wide ``required`` meant for SSL
    listeners must not demand certificates from SASL clients)."""
    context = _new_context(ssl.PROTOCOL_TLS_SERVER)
    key_chain = _load_keystore(configs, listener)
    if key_chain is None:
        prefixed = f"listener.name.{listener.lower()}.ssl.keystore.location"
        raise TlsConfigError(
            "ssl.keystore.location",
            f"listener {listener} uses TLS: ssl.keystore.location (or {prefixed}) is required",
        )
    _use_key_chain(context, tls_config(configs, listener, "ssl.keystore.location")[0], key_chain)
    auth_key, auth = tls_config(configs, listener, "ssl.client.auth")
    if protocol == "SASL_SSL" and auth_key == "ssl.client.auth":
        auth = None
    mode = _CLIENT_AUTH.get((auth or "none").lower())
    if mode is None:
        raise TlsConfigError(
            auth_key, f"{auth_key}: must be required, requested or none, got {auth!r}"
        )
    context.verify_mode = mode
    if not _load_truststore(context, configs, listener) and mode != ssl.CERT_NONE:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)  # Kafka: the JVM's default CAs
    rules_key, rules = tls_config(configs, listener, "ssl.principal.mapping.rules")
    parse_principal_mapping_rules(rules, rules_key)  # bad rules fail at startup, not per client
    return context


def client_ssl_context(
    *,
    ca_location: str | None,
    cert_location: str | None = None,
    key_location: str | None = None,
    key_password: str | None = None,
    check_hostname: bool = False,
) -> ssl.SSLContext:
    """A TLS client context (control plane, tools): trust ``ca_location`` (PEM; system CAs
    when None) and present ``cert_location`` (+ ``key_location``) as client certificate."""
    context = _new_context(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = check_hostname
    if ca_location:
        try:
            context.load_verify_locations(cafile=ca_location)
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(
                "ssl.ca.location", f"ssl.ca.location: cannot load {ca_location}: {exc}"
            ) from None
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if cert_location:
        try:
            # A callable password: never OpenSSL's pass-phrase prompt on the terminal.
            context.load_cert_chain(
                cert_location, key_location, password=lambda: key_password or ""
            )
        except (OSError, ssl.SSLError) as exc:
            raise TlsConfigError(
                "ssl.certificate.location",
                f"ssl.certificate.location: cannot load {cert_location} "
                f"(key {key_location or cert_location}): {exc}",
            ) from None
    return context


def broker_client_ssl_context(configs: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """What a broker uses to reach another broker's ``listener``: it trusts that listener's
    truststore and presents that listener's keystore as its client certificate."""
    context = _new_context(ssl.PROTOCOL_TLS_CLIENT)
    # Here an empty value is meaningful (no hostname check), so presence decides, not value.
    name = "ssl.endpoint.identification.algorithm"
    prefixed = f"listener.name.{listener.lower()}.{name}"
    algorithm = configs.get(prefixed, configs.get(name, "https"))
    context.check_hostname = algorithm.strip().lower() == "https"
    if not _load_truststore(context, configs, listener):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    key_chain = _load_keystore(configs, listener)
    if key_chain is not None:
        key, _ = tls_config(configs, listener, "ssl.keystore.location")
        _use_key_chain(context, key, key_chain)
    return context


# -- principals -----------------------------------------------------------------------------
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_RULE_PARSER = re.compile(_RULE)


@dataclass(frozen=True, slots=True)
class _MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(_java_replacement(self.replacement, self.pattern.groups), dn)
        return (
            result.lower() if self.case == "L" else result.upper() if self.case == "U" else result
        )


def _java_replacement(replacement: str, groups: int) -> Callable[[re.Match[str]], str]:
    """Java's ``Matcher.replaceAll`` replacement syntax: ``$n`` is a group, ``\\x`` is x.
    Like Kafka, a ``$n`` beyond the pattern's groups stays literal."""

    def expand(match: re.Match[str]) -> str:
        out: list[str] = []
        i = 0
        while i < len(replacement):
            c = replacement[i]
            if c == "\\" and i + 1 < len(replacement):
                out.append(replacement[i + 1])
                i += 2
            elif c == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
                j, number = i + 2, int(replacement[i + 1])
                while j < len(replacement) and replacement[j].isdigit():
                    if number * 10 + int(replacement[j]) > groups:
                        break
                    number, j = number * 10 + int(replacement[j]), j + 1
                if number > groups:
                    out.append(replacement[i:j])
                else:
                    out.append(match.group(number) or "")
                i = j
            else:
                out.append(c)
                i += 1
        return "".join(out)

    return expand


@functools.lru_cache(maxsize=64)
def parse_principal_mapping_rules(
    text: str | None, key: str = "ssl.principal.mapping.rules"
) -> tuple[_MappingRule, ...]:
    """Kafka's ``ssl.principal.mapping.rules``: comma-separated ``DEFAULT`` and
    ``RULE:pattern/replacement/[LU]`` entries, tried in order."""
    text = (text or "DEFAULT").strip()
    rules: list[_MappingRule] = []
    for match in _RULE_SPLITTER.finditer(text):
        entry = match.group(1)
        parsed = _RULE_PARSER.match(entry)
        if parsed is None or parsed.end() != len(entry) or parsed.group(5):
            raise TlsConfigError(key, f"{key}: invalid rule {entry!r}")
        if parsed.group(1):
            rules.append(_MappingRule(None))
        elif parsed.group(2) is not None:
            try:
                pattern = re.compile(parsed.group(2))
            except re.error as exc:
                raise TlsConfigError(key, f"{key}: invalid pattern in {entry!r}: {exc}") from None
            rules.append(_MappingRule(pattern, parsed.group(3), parsed.group(4)))
        if match.end() == len(text):
            break
    if not rules:
        raise TlsConfigError(key, f"{key}: no rule in {text!r}")
    return tuple(rules)


def map_principal(dn: str, rules: str | None) -> str | None:
    """The short name the first matching rule makes of ``dn``; None when no rule applies
    (Kafka then fails the authentication)."""
    for rule in parse_principal_mapping_rules(rules):
        name = rule.apply(dn)
        if name is not None:
            return name
    return None


def principal_from_peer(ssl_object: ssl.SSLObject | ssl.SSLSocket | None, rules: str) -> str:
    """``User:<mapped subject DN>`` of the peer's certificate; ``User:ANONYMOUS`` without one.
    Raises TlsConfigError when no mapping rule applies to the subject."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    dn = x509.load_der_x509_certificate(der).subject.rfc4514_string()
    name = map_principal(dn, rules)
    if name is None:
        raise TlsConfigError(
            "ssl.principal.mapping.rules", f"no ssl.principal.mapping.rules rule applies to {dn}"
        )
    return f"User:{name}"

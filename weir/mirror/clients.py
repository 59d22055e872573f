"""Java Kafka client settings from an MM2 file, turned into librdkafka (confluent-kafka) configs.

MM2's files carry Java client settings: ``<alias>.security.protocol``, ``<alias>.ssl.*``,
``<alias>.sasl.*`` and ``<alias>.{producer,consumer,admin}.*`` overrides. Weir's mirror talks
to clusters with confluent-kafka, whose librdkafka shares most names but not all. The rule is
*translate or refuse, never drop*:

- names both clients share pass through (``bootstrap.servers``, ``sasl.mechanism``,
  ``ssl.key.password``, ``acks``, ``linger.ms`` ...); a name librdkafka does not know is
  refused by confluent-kafka itself when the client is built, naming the key;
- Java-only security settings with a librdkafka equivalent are translated:
  ``sasl.jaas.config`` for PLAIN and SCRAM (``username``/``password`` -> ``sasl.username``/
  ``sasl.password``) and Kerberos (``keyTab``/``principal``), PEM trust stores to
  ``ssl.ca.location``, PKCS#12 and PEM key stores, inline PEM, and an empty
  ``ssl.endpoint.identification.algorithm`` to ``none``;
- everything else Java-only (JKS stores, OAuth login modules, SSL engine knobs, serializer
  classes ...) raises ``ClientConfigError`` naming the key and saying what to do instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

__all__ = ["SECURITY_PROTOCOLS", "ClientConfigError", "is_client_key", "to_librdkafka"]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

# Java-only keys that librdkafka has no use for, and why (the refusal says so).
_JAVA_ONLY = {
    "key.serializer": "Weir's mirror copies raw bytes; serializers do not apply",
    "value.serializer": "Weir's mirror copies raw bytes; serializers do not apply",
    "key.deserializer": "Weir's mirror copies raw bytes; deserializers do not apply",
    "value.deserializer": "Weir's mirror copies raw bytes; deserializers do not apply",
    "interceptor.classes": "Java interceptors cannot run in librdkafka",
    "partitioner.class": "the mirror keeps each record's source partition",
    "metric.reporters": "Java metric reporters cannot run in librdkafka",
    "security.providers": "Java security providers cannot run in librdkafka",
}

# Security settings both clients spell the same way.
_SAME = frozenset(
    {
        "sasl.mechanism",
        "sasl.kerberos.service.name",
        "sasl.kerberos.kinit.cmd",
        "sasl.kerberos.min.time.before.relogin",
        "sasl.oauthbearer.token.endpoint.url",
        "ssl.key.password",
    }
)
# Consumed while translating the stores (their meaning moves into other keys).
_STORE_KEYS = frozenset(
    {
        "ssl.truststore.location",
        "ssl.truststore.type",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.location",
        "ssl.keystore.type",
        "ssl.keystore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.endpoint.identification.algorithm",
        "sasl.jaas.config",
    }
)

_JAAS = re.compile(
    r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*"
    r"(?P<options>.*?)\s*;\s*$",
    re.DOTALL,
)
_JAAS_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s";]+)')
_PASSWORD_MODULES = (
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
)
_KERBEROS_MODULE = "com.sun.security.auth.module.Krb5LoginModule"


class ClientConfigError(ValueError):
    """A client setting that cannot be carried over to librdkafka; the message names the key."""


def is_client_key(key: str) -> bool:
    """Whether MM2 treats ``key`` as a cluster client setting (``MirrorClientConfig``)."""
    return key in ("bootstrap.servers", "security.protocol") or key.startswith(("ssl.", "sasl."))


def _parse_jaas(value: str, *, key: str) -> tuple[str, dict[str, str]]:
    match = _JAAS.match(value)
    if match is None:
        raise ClientConfigError(
            f"{key}: expected one login module, as "
            '"<LoginModule> required name=\\"value\\" ...;", got ' + repr(value)
        )
    options: dict[str, str] = {}
    rest = match.group("options")
    pos = 0
    while pos < len(rest):
        opt = _JAAS_OPTION.match(rest, pos)
        if opt is None:
            if rest[pos:].strip():
                raise ClientConfigError(f"{key}: cannot read JAAS options at {rest[pos:]!r}")
            break
        raw = opt.group(2)
        if raw.startswith('"'):
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        options[opt.group(1)] = raw
        pos = opt.end()
    return match.group("module"), options


def _translate_jaas(value: str, *, key: str) -> dict[str, str]:
    module, options = _parse_jaas(value, key=key)
    if module in _PASSWORD_MODULES:
        missing = [name for name in ("username", "password") if name not in options]
        if missing:
            raise ClientConfigError(f"{key}: {module} needs {' and '.join(missing)}")
        return {"sasl.username": options["username"], "sasl.password": options["password"]}
    if module == _KERBEROS_MODULE:
        out = {}
        if "keyTab" in options:
            out["sasl.kerberos.keytab"] = options["keyTab"]
        if "principal" in options:
            out["sasl.kerberos.principal"] = options["principal"]
        return out
    raise ClientConfigError(
        f"{key}: login module {module} has no librdkafka equivalent here; "
        "PLAIN, SCRAM and Kerberos (Krb5LoginModule) are translated"
    )


def _translate_stores(java: Mapping[str, str], spell: Callable[[str], str]) -> dict[str, str]:
    out: dict[str, str] = {}
    trust_type = java.get("ssl.truststore.type", "JKS").strip().upper()
    if "ssl.truststore.location" in java:
        if trust_type != "PEM":
            raise ClientConfigError(
                f"{spell('ssl.truststore.location')}: librdkafka reads PEM trust stores only "
                f"(this one is {trust_type}); export it to PEM and set "
                f"{spell('ssl.truststore.type')}=PEM"
            )
        out["ssl.ca.location"] = java["ssl.truststore.location"]
    if "ssl.truststore.password" in java:
        raise ClientConfigError(
            f"{spell('ssl.truststore.password')}: PEM trust stores have no password; remove it"
        )
    if "ssl.truststore.certificates" in java:
        out["ssl.ca.pem"] = java["ssl.truststore.certificates"]
    key_type = java.get("ssl.keystore.type", "JKS").strip().upper()
    if "ssl.keystore.location" in java:
        location = java["ssl.keystore.location"]
        if key_type == "PKCS12":
            out["ssl.keystore.location"] = location
            if "ssl.keystore.password" in java:
                out["ssl.keystore.password"] = java["ssl.keystore.password"]
        elif key_type == "PEM":
            out["ssl.certificate.location"] = location
            out["ssl.key.location"] = location
            if "ssl.keystore.password" in java:
                raise ClientConfigError(
                    f"{spell('ssl.keystore.password')}: PEM key stores have no store password; "
                    f"put the key's password in {spell('ssl.key.password')}"
                )
        else:
            raise ClientConfigError(
                f"{spell('ssl.keystore.location')}: librdkafka reads PKCS12 or PEM key stores only "
                f"(this one is {key_type}); convert it and set {spell('ssl.keystore.type')}"
            )
    elif "ssl.keystore.password" in java:
        raise ClientConfigError(f"{spell('ssl.keystore.password')}: set without a key store")
    if "ssl.keystore.certificate.chain" in java:
        out["ssl.certificate.pem"] = java["ssl.keystore.certificate.chain"]
    if "ssl.keystore.key" in java:
        out["ssl.key.pem"] = java["ssl.keystore.key"]
    if "ssl.endpoint.identification.algorithm" in java:
        algorithm = java["ssl.endpoint.identification.algorithm"].strip()
        out["ssl.endpoint.identification.algorithm"] = algorithm.lower() if algorithm else "none"
    return out


def _as_is(key: str) -> str:
    return key


def to_librdkafka(
    java: Mapping[str, str], *, spell: Callable[[str], str] = _as_is
) -> dict[str, str]:
    """Translate a Java client config to librdkafka's. ``spell`` maps a client key to the key
    as the file writes it (``east.ssl.truststore.location``), for error messages."""
    out: dict[str, str] = {}
    for key, value in java.items():
        if key in _JAVA_ONLY:
            raise ClientConfigError(f"{spell(key)}: {_JAVA_ONLY[key]}")
        if key in _STORE_KEYS:
            continue
        if key == "security.protocol":
            protocol = value.strip().upper()
            if protocol not in SECURITY_PROTOCOLS:
                raise ClientConfigError(
                    f"{spell(key)}: {value!r} is not one of {', '.join(SECURITY_PROTOCOLS)}"
                )
            out[key] = protocol.lower()
        elif key.startswith(("ssl.", "sasl.")) and key not in _SAME:
            raise ClientConfigError(
                f"{spell(key)}: a Java client setting with no librdkafka equivalent; "
                "remove it or use the librdkafka setting"
            )
        else:
            out[key] = value
    out.update(_translate_stores(java, spell))
    if "sasl.jaas.config" in java:
        out.update(_translate_jaas(java["sasl.jaas.config"], key=spell("sasl.jaas.config")))
    return out

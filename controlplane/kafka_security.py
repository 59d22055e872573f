"""How the control plane authenticates to brokers, built once from the ``WEIR_KAFKA_*`` settings.

Theory of operation
-------------------
The control plane talks to brokers through three kinds of client: confluent-kafka
(librdkafka: the REST proxy's AdminClient and Producer, the manage.py Kafka tools), Weir's own
kio :class:`~weir.client.BrokerClient` (the gateway's requests, the lag monitor, the
protocol-level admin commands) and the Spark source's executors (librdkafka again, configured
through ``kafka.*`` options). All of them must present the same credentials, so
:class:`KafkaSecurity` is parsed once from settings — and checked there, so a misspelt
protocol or a SASL setup without a user stops the process at startup with a message naming
the environment variable — and each client asks it for its own form:

* :meth:`KafkaSecurity.librdkafka_config` — ``security.protocol``, ``sasl.*``, ``ssl.*``;
* :meth:`KafkaSecurity.spark_options` — the same, prefixed ``kafka.``;
* :meth:`KafkaSecurity.client_security` — a :class:`weir.security.client.ClientSecurity`
  for kio clients (None for PLAINTEXT, so plain clients need nothing more);
* :meth:`KafkaSecurity.broker_client` — a ready :class:`~weir.client.BrokerClient`.

``listener`` names the registered listener whose endpoints the control plane connects to
(``WEIR_KAFKA_LISTENER``); empty means each broker's primary endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from weir.security.listeners import SUPPORTED_PROTOCOLS
from weir.security.sasl import SUPPORTED_MECHANISMS

if TYPE_CHECKING:
    from weir.client import BrokerClient

__all__ = ["PROTOCOLS", "SASL_MECHANISMS", "KafkaSecurity"]

# What Weir's listeners and SASL layer support: the control plane accepts the same.
PROTOCOLS = SUPPORTED_PROTOCOLS
SASL_MECHANISMS = SUPPORTED_MECHANISMS
# What Weir's brokers accept and what is safe to default to: GSSAPI (librdkafka's default)
# is not implemented by Weir, so an unset mechanism means the strongest SCRAM.
DEFAULT_SASL_MECHANISM = "SCRAM-SHA-512"

# setting name → the KafkaSecurity field it fills
_FIELDS = {
    "WEIR_KAFKA_LISTENER": "listener",
    "WEIR_KAFKA_SECURITY_PROTOCOL": "protocol",
    "WEIR_KAFKA_SASL_MECHANISM": "sasl_mechanism",
    "WEIR_KAFKA_SASL_USERNAME": "username",
    "WEIR_KAFKA_SASL_PASSWORD": "password",
    "WEIR_KAFKA_SSL_CA_LOCATION": "ca_location",
    "WEIR_KAFKA_SSL_CERTIFICATE_LOCATION": "certificate_location",
    "WEIR_KAFKA_SSL_KEY_LOCATION": "key_location",
    "WEIR_KAFKA_SSL_KEY_PASSWORD": "key_password",
}
SETTING_NAMES = tuple(_FIELDS)


@dataclass(frozen=True, repr=False)
class KafkaSecurity:
    """The control plane's Kafka client credentials (checked by :meth:`from_settings`)."""

    listener: str = ""
    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    username: str = ""
    password: str = ""
    ca_location: str = ""
    certificate_location: str = ""
    key_location: str = ""
    key_password: str = ""

    def __repr__(self) -> str:  # never print the passwords
        return (
            f"KafkaSecurity(listener={self.listener!r}, protocol={self.protocol!r}, "
            f"sasl_mechanism={self.sasl_mechanism!r}, username={self.username!r})"
        )

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_settings(cls, source: Any) -> KafkaSecurity:
        """Parse and check the ``WEIR_KAFKA_*`` values of a settings object or a mapping."""

        def get(name: str) -> str:
            value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, "")
            return str(value or "").strip()

        return cls.checked(**{field: get(name) for name, field in _FIELDS.items()})

    @classmethod
    def from_environment(cls) -> KafkaSecurity:
        return cls.from_settings(os.environ)

    @classmethod
    def checked(cls, **values: str) -> KafkaSecurity:
        """A :class:`KafkaSecurity`, or ImproperlyConfigured naming the variable at fault."""
        protocol = (values.get("protocol") or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise ImproperlyConfigured(
                f"WEIR_KAFKA_SECURITY_PROTOCOL: {values.get('protocol')!r} is not one of "
                + ", ".join(PROTOCOLS)
            )
        sasl = protocol.startswith("SASL_")
        tls = protocol.endswith("SSL")
        mechanism = (values.get("sasl_mechanism") or "").upper()
        if sasl:
            mechanism = mechanism or DEFAULT_SASL_MECHANISM
            if mechanism not in SASL_MECHANISMS:
                raise ImproperlyConfigured(
                    f"WEIR_KAFKA_SASL_MECHANISM: {values.get('sasl_mechanism')!r} is not one of "
                    + ", ".join(SASL_MECHANISMS)
                )
            for name in ("WEIR_KAFKA_SASL_USERNAME", "WEIR_KAFKA_SASL_PASSWORD"):
                if not values.get(_FIELDS[name]):
                    raise ImproperlyConfigured(
                        f"{name} must be set when WEIR_KAFKA_SECURITY_PROTOCOL is {protocol}"
                    )
        else:
            for name in ("WEIR_KAFKA_SASL_MECHANISM", "WEIR_KAFKA_SASL_USERNAME"):
                if values.get(_FIELDS[name]):
                    raise ImproperlyConfigured(
                        f"{name} is set but WEIR_KAFKA_SECURITY_PROTOCOL is {protocol}; "
                        "use SASL_PLAINTEXT or SASL_SSL to authenticate with SASL"
                    )
        ssl_names = (
            "WEIR_KAFKA_SSL_CA_LOCATION",
            "WEIR_KAFKA_SSL_CERTIFICATE_LOCATION",
            "WEIR_KAFKA_SSL_KEY_LOCATION",
        )
        for name in ssl_names:
            path = values.get(_FIELDS[name])
            if not path:
                continue
            if not tls:
                raise ImproperlyConfigured(
                    f"{name} is set but WEIR_KAFKA_SECURITY_PROTOCOL is {protocol}; "
                    "use SSL or SASL_SSL for TLS"
                )
            if not os.path.isfile(path):
                raise ImproperlyConfigured(f"{name}: no such file {path!r}")
        if bool(values.get("certificate_location")) != bool(values.get("key_location")):
            raise ImproperlyConfigured(
                "WEIR_KAFKA_SSL_CERTIFICATE_LOCATION and WEIR_KAFKA_SSL_KEY_LOCATION go together "
                "(a client certificate needs its private key)"
            )
        if values.get("key_password") and not values.get("key_location"):
            raise ImproperlyConfigured(
                "WEIR_KAFKA_SSL_KEY_PASSWORD is set without WEIR_KAFKA_SSL_KEY_LOCATION"
            )
        return cls(
            listener=values.get("listener") or "",
            protocol=protocol,
            sasl_mechanism=mechanism if sasl else "",
            username=values.get("username") or "",
            password=values.get("password") or "",
            ca_location=values.get("ca_location") or "",
            certificate_location=values.get("certificate_location") or "",
            key_location=values.get("key_location") or "",
            key_password=values.get("key_password") or "",
        )

    # -- client forms --------------------------------------------------------------------
    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def librdkafka_config(self) -> dict[str, str]:
        """confluent-kafka / librdkafka properties (empty for PLAINTEXT: its defaults)."""
        if self.protocol == "PLAINTEXT":
            return {}
        config = {"security.protocol": self.protocol}
        if self.uses_sasl:
            config.update(
                {
                    "sasl.mechanism": self.sasl_mechanism,
                    "sasl.username": self.username,
                    "sasl.password": self.password,
                }
            )
        optional = {
            "ssl.ca.location": self.ca_location,
            "ssl.certificate.location": self.certificate_location,
            "ssl.key.location": self.key_location,
            "ssl.key.password": self.key_password,
        }
        config.update({key: value for key, value in optional.items() if value})
        return config

    def spark_options(self) -> dict[str, str]:
        """The same properties as Spark Kafka-source options (``kafka.<property>``)."""
        return {f"kafka.{key}": value for key, value in self.librdkafka_config().items()}

    @cached_property
    def _client_security(self) -> Any:
        if self.protocol == "PLAINTEXT":
            return None
        from weir.security.client import ClientSecurity

        context = None
        if self.uses_tls:
            from weir.security.tls import client_ssl_context

            context = client_ssl_context(
                ca_location=self.ca_location or None,
                cert_location=self.certificate_location or None,
                key_location=self.key_location or None,
                key_password=self.key_password or None,
            )
        return ClientSecurity(
            protocol=self.protocol,
            sasl_mechanism=self.sasl_mechanism or None,
            username=self.username or None,
            password=self.password or None,
            ssl_context=context,
        )

    def client_security(self) -> Any:
        """The kio clients' ``ClientSecurity`` (one per object: the TLS context is reused)."""
        return self._client_security

    def broker_client(self, host: str, port: int, *, client_id: str) -> BrokerClient:
        """A kio :class:`~weir.client.BrokerClient` that authenticates as configured."""
        from weir.client import BrokerClient

        return BrokerClient(host, port, client_id=client_id, security=self.client_security())

"""Java client settings translated to librdkafka, or refused by key (pure logic)."""

from __future__ import annotations

import pytest

from weir.mirror.clients import ClientConfigError, to_librdkafka


def test_plain_jaas_with_quotes_escapes_and_semicolons() -> None:
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="alice" password="p\\"a;ss";'
    )
    assert to_librdkafka({"sasl.jaas.config": jaas}) == {
        "sasl.username": "alice",
        "sasl.password": 'p"a;ss',
    }


def test_kerberos_jaas_becomes_keytab_and_principal() -> None:
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
        'keyTab="/etc/mirror.keytab" principal="mirror@EXAMPLE.COM";'
    )
    assert to_librdkafka({"sasl.jaas.config": jaas, "sasl.kerberos.service.name": "kafka"}) == {
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.keytab": "/etc/mirror.keytab",
        "sasl.kerberos.principal": "mirror@EXAMPLE.COM",
    }


def test_two_login_modules_are_refused() -> None:
    with pytest.raises(ClientConfigError, match=r"^sasl\.jaas\.config: cannot read"):
        to_librdkafka({"sasl.jaas.config": "A required x=1; B required y=2;"})


def test_pem_key_store_and_inline_pem() -> None:
    assert to_librdkafka(
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/client.pem",
            "ssl.key.password": "kp",
            "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----...",
        }
    ) == {
        "ssl.key.password": "kp",
        "ssl.certificate.location": "/client.pem",
        "ssl.key.location": "/client.pem",
        "ssl.ca.pem": "-----BEGIN CERTIFICATE-----...",
    }


def test_non_security_keys_pass_through_for_confluent_kafka_to_check() -> None:
    assert to_librdkafka({"linger.ms": "5", "compression.type": "zstd"}) == {
        "linger.ms": "5",
        "compression.type": "zstd",
    }


def test_errors_use_the_files_spelling() -> None:
    with pytest.raises(ClientConfigError, match=r"^east\.admin\.ssl\.provider:"):
        to_librdkafka({"ssl.provider": "SunJSSE"}, spell=lambda k: "east.admin." + k)

"""``WEIR_KAFKA_*``: a misconfiguration stops the control plane at startup with a message
naming the variable; a good one becomes the same credentials for librdkafka, the Spark source
and the kio clients."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from controlplane.kafka_security import KafkaSecurity
from tests.weir.clients.conftest import ROOT

SASL = {
    "WEIR_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
    "WEIR_KAFKA_SASL_USERNAME": "weir-controlplane",
    "WEIR_KAFKA_SASL_PASSWORD": "s3cret",
}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"WEIR_KAFKA_SECURITY_PROTOCOL": "SASL"}, "WEIR_KAFKA_SECURITY_PROTOCOL: 'SASL' is not"),
        (
            {"WEIR_KAFKA_SECURITY_PROTOCOL": "SASL_SSL"},
            "WEIR_KAFKA_SASL_USERNAME must be set when WEIR_KAFKA_SECURITY_PROTOCOL is SASL_SSL",
        ),
        (
            {**SASL, "WEIR_KAFKA_SASL_PASSWORD": ""},
            "WEIR_KAFKA_SASL_PASSWORD must be set",
        ),
        (
            {**SASL, "WEIR_KAFKA_SASL_MECHANISM": "GSSAPI"},
            "WEIR_KAFKA_SASL_MECHANISM: 'GSSAPI' is not one of PLAIN, SCRAM-SHA-256",
        ),
        (
            {"WEIR_KAFKA_SASL_USERNAME": "alice"},
            "WEIR_KAFKA_SASL_USERNAME is set but WEIR_KAFKA_SECURITY_PROTOCOL is PLAINTEXT",
        ),
        (
            {**SASL, "WEIR_KAFKA_SSL_CA_LOCATION": "/etc/hostname"},
            "WEIR_KAFKA_SSL_CA_LOCATION is set but WEIR_KAFKA_SECURITY_PROTOCOL is SASL_PLAINTEXT",
        ),
        (
            {"WEIR_KAFKA_SECURITY_PROTOCOL": "SSL", "WEIR_KAFKA_SSL_CA_LOCATION": "/no/ca.pem"},
            "WEIR_KAFKA_SSL_CA_LOCATION: no such file '/no/ca.pem'",
        ),
    ],
)
def test_misconfiguration_names_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match="^" + re.escape(message)):
        KafkaSecurity.from_settings(env)


def test_a_client_certificate_needs_its_key(tmp_path: Path) -> None:
    cert = tmp_path / "client.pem"
    cert.write_text("not checked here")
    env = {"WEIR_KAFKA_SECURITY_PROTOCOL": "SSL", "WEIR_KAFKA_SSL_CERTIFICATE_LOCATION": str(cert)}
    with pytest.raises(
        ImproperlyConfigured, match=r"CERTIFICATE_LOCATION and WEIR_KAFKA_SSL_KEY_LOCATION go"
    ):
        KafkaSecurity.from_settings(env)


def test_sasl_ssl_becomes_librdkafka_and_spark_properties(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not read until a connection")
    security = KafkaSecurity.from_settings(
        {
            **SASL,
            "WEIR_KAFKA_SECURITY_PROTOCOL": "sasl_ssl",
            "WEIR_KAFKA_SSL_CA_LOCATION": str(ca),
            "WEIR_KAFKA_LISTENER": "SASL_SSL",
        }
    )
    expected = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",  # the default: Weir has no GSSAPI
        "sasl.username": "weir-controlplane",
        "sasl.password": "s3cret",
        "ssl.ca.location": str(ca),
    }
    assert security.librdkafka_config() == expected
    assert security.spark_options() == {f"kafka.{k}": v for k, v in expected.items()}
    assert security.listener == "SASL_SSL"
    assert "s3cret" not in repr(security)
    assert KafkaSecurity.from_settings({}).librdkafka_config() == {}
    assert KafkaSecurity.from_settings({}).client_security() is None


def test_sasl_plaintext_gives_kio_clients_the_same_credentials() -> None:
    security = KafkaSecurity.from_settings({**SASL, "WEIR_KAFKA_SASL_MECHANISM": "scram-sha-256"})
    client = security.broker_client("127.0.0.1", 9092, client_id="weir-test")
    assert client.security.protocol == "SASL_PLAINTEXT"
    assert client.security.sasl_mechanism == "SCRAM-SHA-256"
    assert (client.security.username, client.security.password) == ("weir-controlplane", "s3cret")
    assert client.security.ssl_context is None


def test_manage_py_refuses_to_start_with_a_bad_protocol() -> None:
    env = dict(os.environ, WEIR_KAFKA_SECURITY_PROTOCOL="TLS")
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "WEIR_KAFKA_SECURITY_PROTOCOL: 'TLS' is not one of" in done.stderr

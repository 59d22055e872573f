"""``--command-config FILE``: Java-properties parsing and the client security it describes.

Pure logic: the properties become a ``ToolSecurity`` (librdkafka's properties and a kio
``ClientSecurity``) or a CommandError naming the property at fault. That the clients then log
in with them is proven against real brokers in
tests/weir/security/test_admin_tools_command_config.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management.base import CommandError

from brokers.management.command_config import load_properties, parse_properties, tool_security
from tests.weir.security.tls_certs import TlsCerts, tls_certs  # noqa: F401

SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="alice" password="alice-secret";'
)


def refused(props: dict[str, str]) -> str:
    with pytest.raises(CommandError) as caught:
        tool_security(props, source="--command-config f")
    return str(caught.value)


def test_properties_are_read_with_java_rules() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "\n"
        "security.protocol = SASL_SSL\n"
        "sasl.mechanism:SCRAM-SHA-256\n"
        "client.id weir-ops\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="alice" \\\n'
        '    password="a\\\\b";\n'
        "ssl.truststore.location=C\\:\\\\certs\\\\ca.pem\n"
        "key\\ with\\ blanks=v\\u00e9\n"
    )
    assert parse_properties(text) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "client.id": "weir-ops",
        "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="alice" password="a\\b";',
        "ssl.truststore.location": "C:\\certs\\ca.pem",
        "key with blanks": "vé",
    }


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"--command-config .*nope: cannot read it"):
        load_properties(str(tmp_path / "nope"))


def test_sasl_credentials_from_jaas_or_librdkafka_names() -> None:
    java = tool_security(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": SCRAM_JAAS,
        },
        source="f",
    )
    rdkafka = tool_security(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "bob",
            "sasl.password": "pw",
            "client.id": "ops",
        },
        source="f",
    )
    assert java.librdkafka_config() == {
        "security.protocol": "SASL_PLAINTEXT",
        "client.id": "weir-admin",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    security = java.client_security
    assert security is not None
    assert (security.sasl_mechanism, security.username, security.password) == (
        "SCRAM-SHA-256",
        "alice",
        "alice-secret",
    )
    assert rdkafka.librdkafka_config()["sasl.username"] == "bob"
    assert rdkafka.client_id == "ops"
    assert "alice-secret" not in repr(java)


def test_plaintext_needs_no_client_security() -> None:
    security = tool_security({}, source="f")
    assert security.client_security is None
    assert security.librdkafka_config()["security.protocol"] == "PLAINTEXT"


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({"bootstrap.servers": "x:1"}, "bootstrap.servers is not a client property"),
        ({"sasl.kerberos.service.name": "kafka"}, "sasl.kerberos.service.name is not supported"),
        ({"ssl.keystore.key": "..."}, "ssl.keystore.key is not supported"),
        ({"security.protocol": "SASL_TLS"}, "security.protocol=SASL_TLS is not one of"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.jaas.config": SCRAM_JAAS},
            "sasl.mechanism is required: Kafka's default, GSSAPI",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"},
            "sasl.mechanism=OAUTHBEARER is not supported",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "SASL needs credentials: set sasl.jaas.config",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": SCRAM_JAAS,
            },
            "sasl.jaas.config: ScramLoginModule does not log in with sasl.mechanism=PLAIN",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": "com.example.Login required username=a password=b;",
            },
            "sasl.jaas.config: login module com.example.Login is not supported",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-256",
                "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule",
            },
            "sasl.jaas.config: expected a control flag",
        ),
        ({"sasl.mechanism": "PLAIN"}, "sasl.mechanism is set but security.protocol is PLAINTEXT"),
        (
            {"security.protocol": "SASL_PLAINTEXT", "ssl.ca.location": "/ca.pem"},
            "ssl.ca.location is set but security.protocol is SASL_PLAINTEXT",
        ),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/missing.pem"},
            "ssl.truststore.location: cannot read /missing.pem",
        ),
        (
            {
                "security.protocol": "SSL",
                "ssl.truststore.location": "/a",
                "ssl.truststore.type": "JKS",
            },
            "ssl.truststore.type: JKS is not supported",
        ),
        (
            {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "dns"},
            "ssl.endpoint.identification.algorithm must be https or empty",
        ),
        (
            {"security.protocol": "SSL", "ssl.certificate.location": "/c.pem"},
            "ssl.certificate.location and ssl.key.location go together",
        ),
    ],
)
def test_what_the_tools_cannot_honour_is_refused_naming_the_property(
    props: dict[str, str], named: str
) -> None:
    message = refused(props)
    assert message.startswith("--command-config f: ")
    assert named in message


def test_the_same_thing_said_twice_is_refused(tls_certs: TlsCerts) -> None:  # noqa: F811
    message = refused(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": tls_certs.ca,
            "ssl.ca.location": tls_certs.ca,
        }
    )
    assert "ssl.truststore.location and ssl.ca.location both set" in message


def test_java_stores_become_librdkafka_properties(tls_certs: TlsCerts) -> None:  # noqa: F811
    pem = tool_security(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": tls_certs.ca,
            "ssl.keystore.location": tls_certs.writer.keystore,
            "ssl.endpoint.identification.algorithm": "",
        },
        source="f",
    )
    assert pem.librdkafka_config() == {
        "security.protocol": "SSL",
        "client.id": "weir-admin",
        "ssl.endpoint.identification.algorithm": "none",
        "ssl.ca.location": tls_certs.ca,
        "ssl.certificate.location": tls_certs.writer.keystore,
        "ssl.key.location": tls_certs.writer.keystore,
    }
    assert pem.client_security is not None
    assert pem.client_security.ssl_context is not None
    assert not pem.client_security.ssl_context.check_hostname
    # A PKCS12 truststore: librdkafka cannot read one, so it gets the CA certificates as PEM.
    p12 = tool_security(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": tls_certs.server_p12,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.password": TlsCerts.P12_PASSWORD,
        },
        source="f",
    )
    config = p12.librdkafka_config()
    assert config["ssl.endpoint.identification.algorithm"] == "https"
    assert config["ssl.ca.pem"].count("BEGIN CERTIFICATE") >= 1
    assert p12.client_security is not None and p12.client_security.ssl_context is not None
    assert p12.client_security.ssl_context.check_hostname


def test_a_wrong_pkcs12_password_names_the_password_property(
    tls_certs: TlsCerts,  # noqa: F811
) -> None:
    message = refused(
        {
            "security.protocol": "SSL",
            "ssl.truststore.location": tls_certs.server_p12,
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.password": "wrong",
        }
    )
    assert "wrong ssl.truststore.password" in message

"""weir.security.tls without a broker: SSL contexts from configs (handshakes over a socket
pair), errors naming the config, ssl.principal.mapping.rules; and runbroker's message."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import load_pem_x509_certificates

from tests.weir.security.conftest import ROOT, runbroker_argv
from tests.weir.security.tls_certs import ClientCert, TlsCerts, tls_certs  # noqa: F401
from weir.config import (
    BrokerConfig,
    InvalidConfigError,
    describe_broker_config,
    parse_broker_overrides,
)
from weir.security.tls import (
    TlsConfigError,
    broker_client_ssl_context,
    client_ssl_context,
    map_principal,
    parse_principal_mapping_rules,
    principal_from_peer,
    server_ssl_context,
)

DN = "CN=writer,OU=eng,O=Acme"


# -- ssl.principal.mapping.rules ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        (None, DN),
        ("DEFAULT", DN),
        ("RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/", "writer@eng"),
        ("RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/U", "WRITER@ENG"),
        ("RULE:^CN=([a-z]+).*$/Svc-$1/L", "svc-writer"),
        # the first rule that matches the whole DN wins; DEFAULT as the fallback
        ("RULE:^CN=admin,.*$/admin/, RULE:^CN=(.*?),.*$/$1/, DEFAULT", "writer"),
        ("RULE:^CN=admin,.*$/admin/,DEFAULT", DN),
        ("RULE:^OU=eng$/x/", None),  # must match the whole DN; no rule applies → None
        ("RULE:^CN=(.*?),.*$/user\\/$1/", "user/writer"),  # \/ is a literal slash
        ("RULE:^CN=(.*?),.*$/$1$2/", "writer$2"),  # $2 beyond the groups stays literal
        (" RULE:^CN=(.*?),.*$/$1/ ,\n DEFAULT ", "writer"),
    ],
)
def test_principal_mapping_rules(rules: str | None, expected: str | None) -> None:
    assert map_principal(DN, rules) == expected


@pytest.mark.parametrize("rules", ["RULE:^CN=(.*$/$1/", "NONSENSE", "RULE:a/b", "DEFAULT,FOO"])
def test_invalid_principal_mapping_rules_name_the_config(rules: str) -> None:
    with pytest.raises(TlsConfigError) as info:
        parse_principal_mapping_rules(rules)
    assert info.value.key == "ssl.principal.mapping.rules"
    assert "ssl.principal.mapping.rules" in str(info.value)


# -- contexts: handshakes over a socket pair ----------------------------------------------------
def _server_configs(certs: TlsCerts, client_auth: str | None = None) -> dict[str, str]:
    """A broker's PEM keystore and CA truststore, and ``ssl.client.auth`` if given."""
    configs = {"ssl.keystore.location": certs.server_keystore, "ssl.truststore.location": certs.ca}
    if client_auth is not None:
        configs["ssl.client.auth"] = client_auth
    return configs


def _connect(
    server_configs: dict[str, str],
    client: ClientCert | None,
    certs: TlsCerts,
    client_context: ssl.SSLContext | None = None,
) -> str:
    """TLS handshake through a socket pair; the principal the server side derives."""
    server_context = server_ssl_context(server_configs, "SSL")
    client_context = client_context or client_ssl_context(
        ca_location=certs.ca,
        cert_location=client.cert if client else None,
        key_location=client.key if client else None,
        check_hostname=True,
    )
    left, right = socket.socketpair()
    result: dict[str, str] = {}

    def serve() -> None:
        with server_context.wrap_socket(left, server_side=True) as tls:
            result["principal"] = principal_from_peer(
                tls, server_configs.get("ssl.principal.mapping.rules", "DEFAULT")
            )
            tls.sendall(b"ok")

    thread = threading.Thread(target=serve)
    thread.start()
    with client_context.wrap_socket(right, server_hostname="localhost") as tls:
        assert tls.recv(2) == b"ok"
    thread.join(10)
    return result["principal"]


def test_pem_keystore_with_required_client_certificate(tls_certs: TlsCerts) -> None:  # noqa: F811
    configs = _server_configs(tls_certs, "required")
    assert _connect(configs, tls_certs.writer, tls_certs) == "User:CN=writer,OU=eng,O=Acme"
    mapped = {**configs, "ssl.principal.mapping.rules": "RULE:^CN=(.*?),.*$/$1/U"}
    assert _connect(mapped, tls_certs.reader, tls_certs) == "User:READER"


def test_requested_client_auth_without_certificate_is_anonymous(
    tls_certs: TlsCerts,  # noqa: F811
) -> None:
    configs = _server_configs(tls_certs, "requested")
    assert _connect(configs, None, tls_certs) == "User:ANONYMOUS"


def test_pkcs12_keystore_and_truststore(tls_certs: TlsCerts, tmp_path: Path) -> None:  # noqa: F811
    ca = load_pem_x509_certificates(Path(tls_certs.ca).read_bytes())
    truststore = tmp_path / "trust.p12"
    truststore.write_bytes(
        pkcs12.serialize_key_and_certificates(
            None, None, None, ca, serialization.BestAvailableEncryption(b"trust-pw")
        )
    )
    configs = {
        "listener.name.ssl.ssl.keystore.location": tls_certs.server_p12,
        "listener.name.ssl.ssl.keystore.type": "PKCS12",
        "listener.name.ssl.ssl.keystore.password": TlsCerts.P12_PASSWORD,
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.password": "trust-pw",
        "ssl.client.auth": "required",
    }
    assert _connect(configs, tls_certs.writer, tls_certs) == tls_certs.writer.principal


def _encrypted_keystore(certs: TlsCerts, directory: Path, password: bytes) -> str:
    key = serialization.load_pem_private_key(Path(certs.server_key).read_bytes(), None)
    path = directory / "encrypted.keystore.pem"
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(password),
        )
        + Path(certs.server_cert).read_bytes()
    )
    return str(path)


def test_encrypted_pem_key_with_ssl_key_password(tls_certs: TlsCerts, tmp_path: Path) -> None:  # noqa: F811
    keystore = _encrypted_keystore(tls_certs, tmp_path, b"key-pw")
    configs = {"ssl.keystore.location": keystore, "ssl.key.password": "key-pw"}
    assert _connect(configs, None, tls_certs) == "User:ANONYMOUS"


# -- errors name the config -----------------------------------------------------------------
def _error_key(configs: dict[str, str]) -> TlsConfigError:
    with pytest.raises(TlsConfigError) as info:
        server_ssl_context(configs, "SSL")
    assert info.value.key in str(info.value)
    return info.value


def test_bad_tls_configs_name_the_key(tls_certs: TlsCerts, tmp_path: Path) -> None:  # noqa: F811
    keystore = tls_certs.server_keystore
    encrypted = _encrypted_keystore(tls_certs, tmp_path, b"key-pw")
    p12 = {"ssl.keystore.location": tls_certs.server_p12, "ssl.keystore.type": "PKCS12"}
    cases = [
        ({}, "ssl.keystore.location"),
        ({"ssl.keystore.location": str(tmp_path / "missing.pem")}, "ssl.keystore.location"),
        (
            {"listener.name.ssl.ssl.keystore.location": "/nope"},
            "listener.name.ssl.ssl.keystore.location",
        ),
        ({"ssl.keystore.location": tls_certs.ca}, "ssl.keystore.location"),  # no key in it
        ({"ssl.keystore.location": keystore, "ssl.keystore.type": "JKS"}, "ssl.keystore.type"),
        ({"ssl.keystore.location": encrypted}, "ssl.key.password"),
        ({"ssl.keystore.location": encrypted, "ssl.key.password": "no"}, "ssl.key.password"),
        ({**p12, "ssl.keystore.password": "wrong"}, "ssl.keystore.password"),
        (
            {**p12, "listener.name.ssl.ssl.keystore.password": "wrong"},
            "listener.name.ssl.ssl.keystore.password",
        ),
        ({"ssl.keystore.location": keystore, "ssl.client.auth": "maybe"}, "ssl.client.auth"),
        (
            {"ssl.keystore.location": keystore, "ssl.truststore.location": "/nope"},
            "ssl.truststore.location",
        ),
        (
            {"ssl.keystore.location": keystore, "ssl.principal.mapping.rules": "RULE:(/x/"},
            "ssl.principal.mapping.rules",
        ),
    ]
    for configs, key in cases:
        assert _error_key(configs).key == key, configs
    assert "JKS is not supported" in str(_error_key(cases[4][0]))
    assert "listener.name.ssl.ssl.keystore.location" in str(_error_key({}))


def test_runbroker_exits_with_a_message_naming_the_tls_config(tmp_path: Path) -> None:
    argv = runbroker_argv(
        tmp_path / "data",
        "127.0.0.1:0",
        "SSL://127.0.0.1:0",
        configs=["listener.name.ssl.ssl.keystore.location=/no/such/keystore.pem"],
    )
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "listener.name.ssl.ssl.keystore.location" in lines[0]
    assert "/no/such/keystore.pem" in lines[0]


# -- the configs ------------------------------------------------------------------------------
def test_listener_prefixed_configs_are_validated_like_the_bare_ones() -> None:
    overrides = parse_broker_overrides(
        [
            "listener.name.ssl.ssl.client.auth=required",
            "listener.name.ssl.ssl.keystore.password=secret",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=x",
        ]
    )
    assert overrides["listener.name.ssl.ssl.client.auth"] == "required"
    with pytest.raises(InvalidConfigError, match=r"ssl\.client\.auth"):
        parse_broker_overrides(["listener.name.ssl.ssl.client.auth=maybe"])
    with pytest.raises(InvalidConfigError, match=r"listener\.name\.ssl\.ssl\.nonsense"):
        parse_broker_overrides(["listener.name.ssl.ssl.nonsense=1"])


@pytest.mark.parametrize(
    "name", ["ssl.keystore.password", "ssl.key.password", "ssl.truststore.password"]
)
def test_tls_passwords_are_sensitive(name: str) -> None:
    config = BrokerConfig(broker_id=1, static={name: "secret"})
    (entry,) = describe_broker_config(config, keys=[name])
    assert entry.sensitive
    assert entry.value is None
    assert all(s.value is None for s in entry.synonyms)


def test_sasl_ssl_ignores_the_broker_wide_client_auth(tls_certs: TlsCerts) -> None:  # noqa: F811
    """KIP-684: on SASL_SSL only the listener-prefixed ssl.client.auth counts."""
    base = _server_configs(tls_certs)
    wide = {**base, "ssl.client.auth": "required"}
    assert server_ssl_context(wide, "SSL").verify_mode == ssl.CERT_REQUIRED
    assert server_ssl_context(wide, "SASL_SSL", protocol="SASL_SSL").verify_mode == ssl.CERT_NONE
    prefixed = {**base, "listener.name.sasl_ssl.ssl.client.auth": "requested"}
    context = server_ssl_context(prefixed, "SASL_SSL", protocol="SASL_SSL")
    assert context.verify_mode == ssl.CERT_OPTIONAL


def test_broker_client_context_checks_hostnames_unless_the_algorithm_is_empty(
    tls_certs: TlsCerts,  # noqa: F811
) -> None:
    configs = {
        "ssl.truststore.location": tls_certs.ca,
        "ssl.keystore.location": tls_certs.writer.keystore,
    }
    assert broker_client_ssl_context(configs, "SSL").check_hostname
    empty = {**configs, "ssl.endpoint.identification.algorithm": ""}
    assert not broker_client_ssl_context(empty, "SSL").check_hostname
    prefixed = {**empty, "listener.name.ssl.ssl.endpoint.identification.algorithm": "https"}
    assert broker_client_ssl_context(prefixed, "SSL").check_hostname


def test_broker_client_context_presents_the_listener_keystore(
    tls_certs: TlsCerts,  # noqa: F811
) -> None:
    server = _server_configs(tls_certs, "required")
    # The other broker's configs: its SSL listener's keystore is its client certificate.
    other = {
        "listener.name.ssl.ssl.keystore.location": tls_certs.writer.keystore,
        "listener.name.ssl.ssl.truststore.location": tls_certs.ca,
    }
    client_context = broker_client_ssl_context(other, "SSL")
    assert _connect(server, None, tls_certs, client_context) == tls_certs.writer.principal

"""The client side of inter-broker security: JAAS parsing, the SCRAM client, config checks,
and ``BrokerClient`` logging in to a real SASL listener."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kio.schema.metadata.v12.request import MetadataRequest

from tests.weir.clients.conftest import ROOT
from tests.weir.security.conftest import SaslBroker
from weir.client import BrokerClient, BrokerClientError
from weir.config import InvalidConfigError
from weir.security.client import (
    ClientSecurity,
    ScramClient,
    inter_broker_security,
    jaas_credentials,
    parse_jaas,
)
from weir.security.scram import ScramError, ScramServer, credential_from_password

SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


# -- JAAS -----------------------------------------------------------------------------------
def test_jaas_login_module_with_quoted_and_bare_values() -> None:
    login = parse_jaas(
        f'{SCRAM_MODULE} required username="broker" password="p w;=\\"x" tokenauth=false ;'
    )
    assert login.module == SCRAM_MODULE
    assert login.flag == "required"
    assert dict(login.options) == {
        "username": "broker",
        "password": 'p w;="x',
        "tokenauth": "false",
    }
    assert jaas_credentials(
        'org.apache.kafka.common.security.plain.PlainLoginModule REQUIRED username=a password="";'
    ) == ("a", "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty"),
        (f'{SCRAM_MODULE} username="a" password="b";', "invalid control flag 'username'"),
        (f'{SCRAM_MODULE} required username="a" password="b"', "expected ';'"),
        (f'{SCRAM_MODULE} required username password="b";', "expected '=' after username"),
        (f'{SCRAM_MODULE} required username="a" password="b', "unterminated quoted value"),
        (f'{SCRAM_MODULE} required username="a" password="b"; x required;', "exactly one"),
        (f'{SCRAM_MODULE} required username="a";', "has no password option"),
        (f"{SCRAM_MODULE} required;", "has no username and no password option"),
        (f'{SCRAM_MODULE} required username="" password="b";', "username is empty"),
    ],
)
def test_bad_jaas_names_the_config(text: str, message: str) -> None:
    key = "listener.name.internal.scram-sha-512.sasl.jaas.config"
    with pytest.raises(InvalidConfigError) as caught:
        jaas_credentials(text, key)
    assert caught.value.name == key
    assert key in str(caught.value)
    assert message in str(caught.value)


# -- inter-broker credentials from configs ----------------------------------------------------
def test_inter_broker_credentials_prefer_the_listener_prefixed_jaas() -> None:
    configs = {
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "sasl.jaas.config": f'{SCRAM_MODULE} required username="other" password="x";',
        "listener.name.internal.scram-sha-512.sasl.jaas.config": (
            f'{SCRAM_MODULE} required username="broker" password="s3cret";'
        ),
    }
    security = inter_broker_security(configs, listener="INTERNAL", protocol="SASL_PLAINTEXT")
    assert (security.protocol, security.sasl_mechanism) == ("SASL_PLAINTEXT", "SCRAM-SHA-512")
    assert (security.username, security.password) == ("broker", "s3cret")
    del configs["listener.name.internal.scram-sha-512.sasl.jaas.config"]
    security = inter_broker_security(configs, listener="INTERNAL", protocol="SASL_PLAINTEXT")
    assert security.username == "other"
    assert inter_broker_security({}, listener="PLAINTEXT", protocol="PLAINTEXT") == (
        ClientSecurity()
    )


@pytest.mark.parametrize(
    ("configs", "key", "message"),
    [
        ({}, "sasl.mechanism.inter.broker.protocol", "is required"),
        (
            {"sasl.mechanism.inter.broker.protocol": "GSSAPI"},
            "sasl.mechanism.inter.broker.protocol",
            "not supported",
        ),
        (
            {
                "sasl.mechanism.inter.broker.protocol": "PLAIN",
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            },
            "sasl.mechanism.inter.broker.protocol",
            "must be one of sasl.enabled.mechanisms",
        ),
        (
            {"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"},
            "sasl.jaas.config",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config",
        ),
    ],
)
def test_missing_inter_broker_settings_name_the_config(
    configs: dict[str, str], key: str, message: str
) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        inter_broker_security(configs, listener="SASL_PLAINTEXT", protocol="SASL_PLAINTEXT")
    assert caught.value.name == key
    assert message in str(caught.value)


# -- the SCRAM client -------------------------------------------------------------------------
def test_scram_client_rfc7677_sha256_test_vector() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.final(
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert final == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    client.verify(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")
    with pytest.raises(ScramError, match="server signature is wrong"):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_against_the_server(mechanism: str) -> None:
    credential = credential_from_password(mechanism, "right", 4096)
    server = ScramServer(mechanism, lambda user: credential if user == "a,b=c" else None)
    client = ScramClient(mechanism, "a,b=c", "right")
    client.verify(server.final(client.final(server.first(client.first()))))
    wrong = ScramClient(mechanism, "a,b=c", "wrong")
    server = ScramServer(mechanism, lambda user: credential)
    with pytest.raises(ScramError, match="Invalid user credentials"):
        server.final(wrong.final(server.first(wrong.first())))


def test_scram_client_rejects_a_bad_server_first_message() -> None:
    client = ScramClient("SCRAM-SHA-512", "u", "p", nonce="abc")
    with pytest.raises(ScramError, match="does not extend"):
        client.final(b"r=xyz123,s=AAAA,i=4096")
    with pytest.raises(ScramError, match="fewer than the minimum"):
        client.final(b"r=abcdef,s=AAAA,i=100")
    with pytest.raises(ScramError, match="server error: unknown-user"):
        client.final(b"e=unknown-user")


# -- BrokerClient against a real SASL_PLAINTEXT listener ---------------------------------------
def _metadata() -> MetadataRequest:
    return MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )


async def _request(broker: SaslBroker, security: ClientSecurity) -> object:
    client = BrokerClient(
        "127.0.0.1", broker.sasl_port, client_id="client-security-test", security=security
    )
    try:
        first = await client.request(_metadata(), timeout=10)
        second = await client.request(_metadata(), timeout=10)  # same, authenticated, connection
        assert second.cluster_id == first.cluster_id
        return first
    finally:
        await client.close()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_broker_client_logs_in_to_a_sasl_listener(sasl_broker: SaslBroker, mechanism: str) -> None:
    security = ClientSecurity(
        protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        username="alice",
        password="alice-secret",
    )
    response = asyncio.run(_request(sasl_broker, security))
    assert response.cluster_id == sasl_broker.cluster_id  # type: ignore[attr-defined]
    # Metadata on the SASL listener advertises the SASL endpoint.
    assert [(b.host, b.port) for b in response.brokers] == [  # type: ignore[attr-defined]
        ("127.0.0.1", sasl_broker.sasl_port)
    ]


def test_broker_client_reports_the_brokers_message_for_a_wrong_password(
    sasl_broker: SaslBroker,
) -> None:
    security = ClientSecurity(
        protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        username="alice",
        password="wrong",
    )
    with pytest.raises(BrokerClientError) as caught:
        asyncio.run(_request(sasl_broker, security))
    text = str(caught.value)
    assert f"SASL authentication with broker 127.0.0.1:{sasl_broker.sasl_port} failed" in text
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in text


def test_broker_client_reports_a_mechanism_the_user_or_broker_lacks(
    sasl_broker: SaslBroker,
) -> None:
    # bob has no SCRAM-SHA-512 credential: the broker refuses him like a wrong password.
    bob = ClientSecurity(
        protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512", username="bob", password="x"
    )
    with pytest.raises(BrokerClientError, match="invalid credentials"):
        asyncio.run(_request(sasl_broker, bob))
    # A SASL client on the PLAINTEXT listener: the handshake is not understood there.
    plain = BrokerClient(
        "127.0.0.1",
        sasl_broker.broker.port,
        client_id="client-security-test",
        security=ClientSecurity(
            protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="alice", password="x"
        ),
    )
    with pytest.raises(BrokerClientError, match="SASL handshake with broker"):
        asyncio.run(plain.request(_metadata(), timeout=10))


# -- runbroker refuses bad inter-broker settings ------------------------------------------------
def test_runbroker_names_a_missing_inter_broker_mechanism(
    tmp_path: Path, redis_server: str
) -> None:
    configs = [
        "listeners=SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name=sasl_plaintext",
    ]
    argv = [sys.executable, str(ROOT / "manage.py"), "runbroker", "--broker-id", "1"]
    argv += ["--listen", "127.0.0.1:0", "--data-dir", str(tmp_path)]
    for config in configs:
        argv += ["--config", config]
    env = dict(os.environ, WEIR_REDIS_URL=redis_server, WEIR_CLUSTER_ID="unused")
    result = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "sasl.mechanism.inter.broker.protocol is required" in result.stderr
    assert "Traceback" not in result.stderr

"""SCRAM: RFC test vectors, the scram-users CLI and the *UserScramCredentials admin APIs."""

from __future__ import annotations

import base64
import uuid

import pytest
import redis
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from tests.suite.commands import Completed, manage
from tests.weir.security.conftest import SaslBroker, sasl_conf
from weir.security.credentials import decode_credential, scram_key
from weir.security.scram import (
    ScramError,
    ScramServer,
    credential_from_password,
)


def test_rfc7677_sha256_test_vector() -> None:
    credential = credential_from_password(
        "SCRAM-SHA-256", "pencil", 4096, base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    )
    server = ScramServer(
        "SCRAM-SHA-256", lambda user: credential, server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    first = server.first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.final(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.username == "user"


def test_wrong_proof_and_bad_username_encoding_are_rejected() -> None:
    credential = credential_from_password("SCRAM-SHA-512", "right", 4096)
    server = ScramServer("SCRAM-SHA-512", lambda user: credential, server_nonce="S")
    server.first(b"n,,n=u,r=C")
    with pytest.raises(ScramError):
        server.final(b"c=biws,r=CS,p=" + base64.b64encode(b"\0" * 64))
    with pytest.raises(ScramError):
        ScramServer("SCRAM-SHA-512", lambda user: credential).first(b"n,,n=a=b,r=C")


def test_stored_credentials_are_salted_and_never_the_password(sasl_broker: SaslBroker) -> None:
    client = redis.Redis.from_url(sasl_broker.redis_url)
    try:
        raw = client.hget(scram_key(sasl_broker.cluster_id, "SCRAM-SHA-512"), "alice")
    finally:
        client.close()
    assert raw is not None and b"alice-secret" not in raw
    credential = decode_credential(raw)
    assert credential.iterations >= 4096 and len(credential.salt) >= 16


def _scram_users(broker: SaslBroker, *args: str) -> Completed:
    """``manage.py scram-users`` in process, with the broker's Redis and cluster id as a
    process would read them from ``WEIR_REDIS_URL`` and ``WEIR_CLUSTER_ID``."""
    settings = {"WEIR_REDIS_URL": broker.redis_url, "WEIR_CLUSTER_ID": broker.cluster_id}
    return manage("scram-users", *args, settings=settings)


def _cli(broker: SaslBroker, *args: str) -> str:
    """``scram-users`` that must succeed; its stdout."""
    result = _scram_users(broker, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _login_works(broker: SaslBroker, mechanism: str, user: str, password: str) -> bool:
    admin = AdminClient(
        {**sasl_conf(broker.sasl, user, mechanism, password), "reconnect.backoff.ms": 2000}
    )
    try:
        admin.list_topics(timeout=3)
    except Exception:
        return False
    return True


def test_scram_users_cli_add_describe_delete(sasl_broker: SaslBroker) -> None:
    user = f"carol-{uuid.uuid4().hex[:6]}"
    out = _cli(
        sasl_broker,
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=8192,password=carol-secret],SCRAM-SHA-512=[password=c2]",
        "--entity-type",
        "users",
        "--entity-name",
        user,
    )
    assert f"Completed updating config for user {user}." in out
    described = _cli(sasl_broker, "--describe", "--entity-type", "users", "--entity-name", user)
    assert described.strip() == (
        f"SCRAM credential configs for user-principal '{user}' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    )
    assert _login_works(sasl_broker, "SCRAM-SHA-256", user, "carol-secret")
    _cli(
        sasl_broker,
        "--alter",
        "--delete-config",
        "SCRAM-SHA-256",
        "--entity-type",
        "users",
        "--entity-name",
        user,
    )
    described = _cli(sasl_broker, "--describe", "--entity-type", "users", "--entity-name", user)
    assert "SCRAM-SHA-256" not in described and "SCRAM-SHA-512=iterations=4096" in described
    assert not _login_works(sasl_broker, "SCRAM-SHA-256", user, "carol-secret")


def test_scram_users_cli_rejects_too_few_iterations(sasl_broker: SaslBroker) -> None:
    result = _scram_users(
        sasl_broker,
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=100,password=x]",
        "--entity-type",
        "users",
        "--entity-name",
        "dave",
    )
    assert result.returncode != 0
    assert "4096" in result.stderr


def test_admin_client_alters_and_describes_scram_credentials(sasl_broker: SaslBroker) -> None:
    user = f"erin-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": sasl_broker.plaintext})
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"erin-secret"
            )
        ]
    )
    futures[user].result(timeout=10)
    described = admin.describe_user_scram_credentials([user])[user].result(timeout=10)
    infos = [(i.mechanism, i.iterations) for i in described.scram_credential_infos]
    assert infos == [(ScramMechanism.SCRAM_SHA_512, 8192)]
    assert _login_works(sasl_broker, "SCRAM-SHA-512", user, "erin-secret")
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)]
    )
    futures[user].result(timeout=10)
    with pytest.raises(Exception, match=r"RESOURCE_NOT_FOUND|does not exist"):
        admin.describe_user_scram_credentials([user])[user].result(timeout=10)


def test_admin_client_gets_unacceptable_credential_for_few_iterations(
    sasl_broker: SaslBroker,
) -> None:
    admin = AdminClient({"bootstrap.servers": sasl_broker.plaintext})
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "frank", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"pw"
            )
        ]
    )
    with pytest.raises(Exception, match=r"UNACCEPTABLE_CREDENTIAL|Iterations"):
        futures["frank"].result(timeout=10)

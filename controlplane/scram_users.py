"""SCRAM users of the cluster: list, upsert and delete credentials through the brokers.

Theory of operation
-------------------
Credentials are read and changed with Kafka's DescribeUserScramCredentials /
AlterUserScramCredentials (KIP-554), not by writing Redis directly: on a secured cluster the
brokers authorize those APIs (Describe / Alter on the cluster) against the control plane's
own principal, so the web app can do no more than its Kafka credentials allow, and the path
is the one ``kafka-configs --entity-type users`` takes. Alter goes through the shared
AdminClient, which salts and hashes the password itself (PBKDF2 with the given iterations):
only the salted password reaches a broker. Describe goes through the gateway's kio client
(see :func:`_describe` for why), and nothing secret is ever read back.

A user is listed once with each mechanism it has a credential for and that credential's
iteration count. Kafka errors become API errors here: a bad mechanism, iteration count or
user is 400 (the broker's message), an unknown user or credential 404, an authorization
failure 403, a cluster that does not answer 503.

One exception to "through the brokers": :func:`scram_user_bootstrap` writes a credential
straight into the cluster's Redis, for the first users of a cluster whose brokers cannot start
or be reached without them (inter-broker SASL, SASL-only listeners). It is Kafka's
``kafka-configs --zookeeper`` / ``kafka-storage format --add-scram`` and is only reachable from
``manage.py scram-users --redis-url``, never from the web app.

The services go through the process-wide gateway (the control plane's ``WEIR_KAFKA_*``
principal) unless given one: ``manage.py scram-users --command-config FILE`` passes a gateway
that logs in with the file's credentials, so the brokers authorize the operator's principal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rest_framework import status

from controlplane.errors import ApiError, BadRequest, KafkaUnavailable, NotFound
from weir.metadata.quorum import write_sync
from weir.metadata.redis_url import close_client, sync_client
from weir.security.scram import MAX_ITERATIONS, MECHANISM_BY_ID, MIN_ITERATIONS
from weir.security.scram import MECHANISMS as SCRAM_MECHANISMS

if TYPE_CHECKING:
    from controlplane.cluster import ClusterGateway

__all__ = [
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MIN_ITERATIONS",
    "ScramUser",
    "scram_user_bootstrap",
    "scram_user_delete",
    "scram_user_list",
    "scram_user_upsert",
]

MECHANISMS = tuple(SCRAM_MECHANISMS)
# kafka-configs' default when ``iterations=`` is not given.
DEFAULT_ITERATIONS = MIN_ITERATIONS
TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class ScramUser:
    """One user and its credentials: mechanism → iterations (never the secret)."""

    name: str
    credentials: dict[str, int]

    def fields(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mechanisms": [
                {"mechanism": m, "iterations": i} for m, i in sorted(self.credentials.items())
            ],
        }


def _gateway(given: ClusterGateway | None) -> ClusterGateway:
    from controlplane.cluster import gateway

    return given if given is not None else gateway()


def _mechanism(name: str) -> Any:
    from confluent_kafka.admin import ScramMechanism

    return ScramMechanism[name.replace("-", "_")]


def _result(future: Any, *, user: str | None = None) -> Any:
    """The future's result, or the API error its Kafka error stands for."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        return future.result(TIMEOUT)
    except KafkaException as exc:
        error = exc.args[0]
        code = error.code()
        text = f"{error.name()}: {error.str()}"
        if code == KafkaError.RESOURCE_NOT_FOUND:
            raise NotFound(f"SCRAM user {user!r}: {text}" if user else text) from None
        if code in (
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
            KafkaError.SASL_AUTHENTICATION_FAILED,
        ):
            raise ApiError(
                f"the control plane's Kafka principal may not do this: {text}",
                status_code=status.HTTP_403_FORBIDDEN,
            ) from None
        if error.retriable() or code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT):
            raise KafkaUnavailable(f"SCRAM credentials: {text}") from None
        raise BadRequest(f"SCRAM credentials: {text}") from None
    except TimeoutError:
        raise KafkaUnavailable(f"SCRAM credentials: no answer in {TIMEOUT:g} s") from None


def _describe(users: list[str] | None, cluster: ClusterGateway | None) -> dict[str, dict[str, int]]:
    """user → {mechanism: iterations} as the brokers describe ``users`` (None: everyone).

    Sent with the gateway's kio client, not the AdminClient: confluent-kafka 2.x aborts the
    process when a DescribeUserScramCredentials answer carries a top-level error (a control
    plane principal without Describe on the cluster), and a web process must not die of it.
    """
    from kio.schema.describe_user_scram_credentials.v0.request import (
        DescribeUserScramCredentialsRequest,
        UserName,
    )
    from kio.schema.errors import ErrorCode

    wanted = None if users is None else tuple(UserName(name=u) for u in users)
    response = _gateway(cluster).request_any(
        DescribeUserScramCredentialsRequest(users=wanted), timeout=TIMEOUT
    )
    _raise_for(ErrorCode(response.error_code), response.error_message)
    found: dict[str, dict[str, int]] = {}
    for result in response.results:
        _raise_for(ErrorCode(result.error_code), result.error_message, user=result.user)
        found[result.user] = {
            MECHANISM_BY_ID[int(info.mechanism)]: int(info.iterations)
            for info in result.credential_infos
            if int(info.mechanism) in MECHANISM_BY_ID
        }
    return found


def _raise_for(code: Any, message: str | None, *, user: str | None = None) -> None:
    """The API error a Kafka error code in a Describe answer stands for (none for 0)."""
    from kio.schema.errors import ErrorCode

    if code == ErrorCode.none:
        return
    text = f"{code.name.upper()}: {message or code.name.replace('_', ' ')}"
    if code == ErrorCode.resource_not_found:
        raise NotFound(f"SCRAM user {user!r}: {text}" if user else text)
    if code == ErrorCode.cluster_authorization_failed:
        raise ApiError(
            f"the control plane's Kafka principal may not do this: {text}",
            status_code=status.HTTP_403_FORBIDDEN,
        )
    if code.retriable:
        raise KafkaUnavailable(f"SCRAM credentials: {text}")
    raise BadRequest(f"SCRAM credentials: {text}")


def scram_user_list(*, gateway: ClusterGateway | None = None) -> list[ScramUser]:
    """Every user with a SCRAM credential, by name."""
    found = _describe(None, gateway)
    return [ScramUser(name=n, credentials=c) for n, c in sorted(found.items())]


def scram_user_get(*, name: str, gateway: ClusterGateway | None = None) -> ScramUser:
    """One user's credentials; 404 when it has none."""
    credentials = _describe([name], gateway).get(name) or {}
    if not credentials:
        raise NotFound(f"SCRAM user {name!r} has no credentials")
    return ScramUser(name=name, credentials=credentials)


def scram_user_upsert(
    *,
    name: str,
    mechanism: str,
    password: str,
    iterations: int,
    gateway: ClusterGateway | None = None,
) -> ScramUser:
    """Create or replace ``name``'s credential for ``mechanism``; the user as it now is."""
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialUpsertion

    upsert = UserScramCredentialUpsertion(
        name, ScramCredentialInfo(_mechanism(mechanism), iterations), password.encode()
    )
    admin = _gateway(gateway).admin()
    futures = admin.alter_user_scram_credentials([upsert], request_timeout=TIMEOUT)
    _result(futures[name], user=name)
    return scram_user_get(name=name, gateway=gateway)


def scram_user_delete(
    *, name: str, mechanism: str | None, gateway: ClusterGateway | None = None
) -> list[str]:
    """Delete one credential of ``name`` (or all of them); the mechanisms deleted."""
    from confluent_kafka.admin import UserScramCredentialDeletion

    mechanisms = (
        [mechanism] if mechanism else sorted(scram_user_get(name=name, gateway=gateway).credentials)
    )
    deletions = [UserScramCredentialDeletion(name, _mechanism(m)) for m in mechanisms]
    admin = _gateway(gateway).admin()
    futures = admin.alter_user_scram_credentials(deletions, request_timeout=TIMEOUT)
    _result(futures[name], user=name)
    return mechanisms


def scram_user_bootstrap(
    *,
    redis_url: str,
    cluster_id: str,
    name: str,
    upserts: dict[str, tuple[str, int]],
    deletions: list[str],
) -> None:
    """Write ``name``'s credentials into Redis without the brokers (see the module docstring).

    ``upserts`` maps mechanism → (password, iterations). The credential is salted and encoded
    by the same helpers the brokers use for AlterUserScramCredentials.
    """

    from weir.security.credentials import encode_credential, scram_key
    from weir.security.scram import credential_from_password

    credentials = {
        mechanism: encode_credential(credential_from_password(mechanism, password, iterations))
        for mechanism, (password, iterations) in upserts.items()
    }

    def queue(pipe: Any) -> None:
        for mechanism in deletions:
            pipe.hdel(scram_key(cluster_id, mechanism), name)
        for mechanism, encoded in credentials.items():
            pipe.hset(scram_key(cluster_id, mechanism), name, encoded)

    client = sync_client(redis_url)
    try:
        # On a Sentinel deployment the change counts once every replica in sync has it.
        write_sync(client, queue)
    finally:
        close_client(client)

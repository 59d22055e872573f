"""DescribeUserScramCredentials (API 50) and AlterUserScramCredentials (API 51), v0.

Credentials live in Redis (``weir.security.credentials``). Alter receives what Kafka's
admin client sends: the salt, the iteration count and the *salted* password, from which the
broker derives StoredKey and ServerKey; the password never reaches the broker. Errors follow
Kafka's ``ControllerApis``/``ScramControlManager``: an unknown mechanism is
UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..16384 or an empty user/salt is
UNACCEPTABLE_CREDENTIAL, a user named twice in one request is DUPLICATE_RESOURCE, deleting or
describing a credential that does not exist is RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import cluster_denied, make, respond, types_of
from weir.metadata.errors import MetadataUnavailableError
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.security.scram import (
    MAX_ITERATIONS,
    MECHANISM_BY_ID,
    MECHANISMS,
    MIN_ITERATIONS,
    credential_from_salted_password,
)
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.credential_store import ScramCredentialStore
    from weir.handlers._authz import Access


# Kafka's errors for a whole alteration of one user.
_TWICE = (
    ErrorCode.duplicate_resource,
    "A user credential cannot be altered twice in the same request",
)
_NO_SUCH_CREDENTIAL = (
    ErrorCode.resource_not_found,
    "Attempt to delete a user credential that does not exist",
)


def _unnamed_or_unknown(change: Any) -> tuple[ErrorCode, str] | None:
    """Kafka's first checks on a deletion or an upsertion: it names a user and a known
    mechanism."""
    if not change.name:
        return ErrorCode.unacceptable_credential, "Username must not be empty"
    if int(change.mechanism) not in MECHANISM_BY_ID:
        return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
    return None


def _upsertion_problem(upsert: Any) -> tuple[ErrorCode, str] | None:
    """Kafka's checks on an upsertion: a named user, a known mechanism, iterations in range,
    a salt and a salted password."""
    problem = _unnamed_or_unknown(upsert)
    if problem is not None:
        return problem
    if not MIN_ITERATIONS <= upsert.iterations <= MAX_ITERATIONS:
        return (
            ErrorCode.unacceptable_credential,
            f"Iterations must be in {MIN_ITERATIONS}..{MAX_ITERATIONS}",
        )
    if not upsert.salt or not upsert.salted_password:
        return ErrorCode.unacceptable_credential, "Salt and password are required"
    return None


async def handle_describe(
    ctx: ConnectionContext, request: Request, *, access: Access, credentials: ScramCredentialStore
) -> Any:
    types = types_of(request)
    if not access.on_cluster(ctx, AclOperation.DESCRIBE):
        return cluster_denied(request, results=())
    stored = await credentials.describe()
    wanted = request.body.users
    # Kafka describes every user for a null *or empty* list (librdkafka sends an empty one).
    names = sorted(stored) if not wanted else [u.name for u in wanted]
    counts = Counter(names)
    results = []
    for name in dict.fromkeys(names):
        infos = stored.get(name, {})
        if counts[name] > 1:
            error, message = (
                ErrorCode.duplicate_resource,
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {name}",
            )
        elif not infos:
            error, message = (
                ErrorCode.resource_not_found,
                f"Attempt to describe a user credential that does not exist: {name}",
            )
        else:
            error, message = ErrorCode.none, None
        results.append(
            make(
                types.DescribeUserScramCredentialsResult,
                user=name,
                error_code=error,
                error_message=message,
                credential_infos=tuple(
                    make(types.CredentialInfo, mechanism=MECHANISMS[m][1], iterations=i)
                    for m, i in sorted(infos.items())
                )
                if error == ErrorCode.none
                else (),
            )
        )
    return respond(request, results=tuple(results))


async def handle_alter(
    ctx: ConnectionContext, request: Request, *, access: Access, credentials: ScramCredentialStore
) -> Any:
    types = types_of(request)
    body = request.body
    counts = Counter(d.name for d in body.deletions) + Counter(u.name for u in body.upsertions)
    errors: dict[str, tuple[ErrorCode, str | None]] = {}

    def fail(user: str, code: ErrorCode, message: str) -> None:
        errors.setdefault(user, (code, message))

    if not access.on_cluster(ctx, AclOperation.ALTER):
        for user in counts:
            fail(user, ErrorCode.cluster_authorization_failed, "not authorized")
    for user, count in counts.items():
        if count > 1:
            fail(user, *_TWICE)
    for deletion in body.deletions:
        problem = _unnamed_or_unknown(deletion)
        if problem is not None:
            fail(deletion.name, *problem)
        elif deletion.name not in errors and not await credentials.exists(
            MECHANISM_BY_ID[int(deletion.mechanism)], deletion.name
        ):
            fail(deletion.name, *_NO_SUCH_CREDENTIAL)
    for upsert in body.upsertions:
        problem = _upsertion_problem(upsert)
        if problem is not None:
            fail(upsert.name, *problem)
    for deletion in body.deletions:
        if deletion.name not in errors:
            mechanism = MECHANISM_BY_ID[int(deletion.mechanism)]
            try:
                await credentials.delete(mechanism, deletion.name)
            except MetadataUnavailableError as exc:  # Redis away, or not confirmed
                fail(deletion.name, ErrorCode.unknown_server_error, str(exc))
    for upsert in body.upsertions:
        if upsert.name not in errors:
            mechanism = MECHANISM_BY_ID[int(upsert.mechanism)]
            credential = credential_from_salted_password(
                mechanism, bytes(upsert.salted_password), bytes(upsert.salt), upsert.iterations
            )
            try:
                await credentials.put(mechanism, upsert.name, credential)
            except MetadataUnavailableError as exc:
                fail(upsert.name, ErrorCode.unknown_server_error, str(exc))
    results = []
    for user in counts:
        code, message = errors.get(user, (ErrorCode.none, None))
        results.append(
            make(
                types.AlterUserScramCredentialsResult,
                user=user,
                error_code=code,
                error_message=message,
            )
        )
    return respond(request, results=tuple(results))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ((0, 0), handle_describe),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ((0, 0), handle_alter),
}

"""SaslHandshake (API 17, v0-1) and SaslAuthenticate (API 36, v0-2).

SaslHandshake picks a mechanism from ``sasl.enabled.mechanisms`` and starts a
``weir.security.sasl.SaslSession`` on the connection (v0: the tokens that follow are bare,
length-prefixed frames, handled by the server). SaslAuthenticate feeds one token to the
session; on success the connection's principal becomes ``User:<name>``. Failures answer
SASL_AUTHENTICATION_FAILED and the connection is closed after the response, as Kafka does; a
token above ``MAX_TOKEN_BYTES`` gets no answer and the connection is closed. On a PLAINTEXT
listener, or when the state is wrong (handshake twice, authenticate before handshake), the
answer is ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import make, response_class
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.sasl import MAX_TOKEN_BYTES, SUPPORTED_MECHANISMS, SaslFailure, SaslSession
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.config import BrokerConfig
    from weir.credential_store import ScramCredentialStore
    from weir.metadata_view import MetadataView


log = logging.getLogger("weir.sasl")


def enabled_mechanisms(config: BrokerConfig) -> tuple[str, ...]:
    value = config.get("sasl.enabled.mechanisms")
    names = value.split(",") if isinstance(value, str) else list(value or ())
    return tuple(n.strip() for n in names if n.strip() in SUPPORTED_MECHANISMS)


async def handle_handshake(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    credentials: ScramCredentialStore,
) -> Any:
    mechanisms = enabled_mechanisms(metadata.config)
    cls = response_class(ApiKey.SASL_HANDSHAKE, request.api_version)
    if not ctx.security_protocol.startswith("SASL_") or ctx.sasl is not None:
        ctx.close_after_response = ctx.security_protocol.startswith("SASL_")
        return make(cls, error_code=ErrorCode.illegal_sasl_state, mechanisms=mechanisms)
    mechanism = request.body.mechanism
    if mechanism not in mechanisms:
        ctx.close_after_response = True
        return make(cls, error_code=ErrorCode.unsupported_sasl_mechanism, mechanisms=mechanisms)

    ctx.sasl = SaslSession(mechanism, credentials.lookup, raw=request.api_version == 0)
    return make(cls, error_code=ErrorCode.none, mechanisms=mechanisms)


async def handle_authenticate(ctx: ConnectionContext, request: Request) -> Any:
    cls = response_class(ApiKey.SASL_AUTHENTICATE, request.api_version)
    session = ctx.sasl
    if session is None or session.raw or ctx.authenticated:
        ctx.close_after_response = ctx.security_protocol.startswith("SASL_")
        return make(
            cls,
            error_code=ErrorCode.illegal_sasl_state,
            error_message="SaslAuthenticate without a SaslHandshake, or after authentication",
            auth_bytes=b"",
            session_lifetime=timedelta(0),
        )
    token = request.body.auth_bytes
    if len(token) > MAX_TOKEN_BYTES:
        log.warning("closing %s: SASL token of %d bytes", ctx.peer_host, len(token))
        ctx.close_after_response = True
        return None
    try:
        answer = await session.step(bytes(token))
    except SaslFailure as exc:
        log.warning(
            "SASL/%s authentication from %s:%d failed: %s",
            session.mechanism,
            ctx.peer_host,
            ctx.peer_port,
            exc,
        )
        ctx.close_after_response = True
        return make(
            cls,
            error_code=ErrorCode.sasl_authentication_failed,
            error_message=f"Authentication failed during authentication due to invalid "
            f"credentials with SASL mechanism {session.mechanism}",
            auth_bytes=b"",
            session_lifetime=timedelta(0),
        )
    if session.complete:
        assert session.principal is not None
        ctx.principal = session.principal
        ctx.authenticated = True
    return make(
        cls,
        error_code=ErrorCode.none,
        error_message=None,
        auth_bytes=answer,
        session_lifetime=timedelta(0),
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.SASL_HANDSHAKE: ((0, 1), handle_handshake),
    ApiKey.SASL_AUTHENTICATE: ((0, 2), handle_authenticate),
}

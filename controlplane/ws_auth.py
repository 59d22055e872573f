"""Websocket authentication: the same credentials as the HTTP API.

A websocket handshake may carry ``Authorization: Basic ...`` or ``Authorization: Token ...``
(programs), or the browser's session cookie. Browsers cannot set headers on a websocket, so a
``?token=<key>`` query parameter is accepted too. The resolved user lands in
``scope["user"]``; consumers close with code 4401 (unauthenticated) or 4403 (no role) before
accepting.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from django.contrib.auth import authenticate
from django.contrib.auth.models import AnonymousUser

__all__ = [
    "FORBIDDEN",
    "UNAUTHENTICATED",
    "WebsocketAuthMiddleware",
    "admit_viewer",
    "websocket_auth_stack",
]

UNAUTHENTICATED = 4401
FORBIDDEN = 4403


@database_sync_to_async
def _user_from_token(key: str) -> Any:
    from rest_framework.authtoken.models import Token

    token = Token.objects.select_related("user").filter(key=key).first()
    if token is None or not token.user.is_active:
        return None
    return token.user


@database_sync_to_async
def _user_from_basic(encoded: str) -> Any:
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, sep, password = decoded.partition(":")
    if not sep:
        return None
    user = authenticate(username=username, password=password)
    return user if user is not None and user.is_active else None


async def user_from_scope(scope: dict[str, Any]) -> Any:
    """The user named by the handshake's credentials, or None when none were given."""
    headers = dict(scope.get("headers") or [])
    authorization = headers.get(b"authorization", b"").decode("latin-1").strip()
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "token" and credentials:
        return await _user_from_token(credentials.strip()) or AnonymousUser()
    if scheme.lower() == "basic" and credentials:
        return await _user_from_basic(credentials.strip()) or AnonymousUser()
    query = parse_qs((scope.get("query_string") or b"").decode("latin-1"))
    if query.get("token"):
        return await _user_from_token(query["token"][0]) or AnonymousUser()
    return None


class WebsocketAuthMiddleware:
    """Puts the user from Basic/Token credentials in ``scope["user"]`` (after the session's)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        user = await user_from_scope(scope)
        if user is not None:
            scope = dict(scope, user=user)
        return await self.inner(scope, receive, send)


def websocket_auth_stack(inner: Any) -> Any:
    """Session auth (browsers) wrapped around header/query auth (programs)."""
    return AuthMiddlewareStack(WebsocketAuthMiddleware(inner))


async def admit_viewer(consumer: Any) -> bool:
    """Close ``consumer`` (4401 anonymous, 4403 no role) unless its user may view the cluster."""
    from controlplane.roles import VIEWER, has_role

    user = consumer.scope.get("user")
    if user is None or not user.is_authenticated:
        await consumer.close(code=UNAUTHENTICATED)
        return False
    if not await database_sync_to_async(has_role)(user, VIEWER):
        await consumer.close(code=FORBIDDEN)
        return False
    return True

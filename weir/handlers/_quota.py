"""Client quotas as the handlers apply them (the arithmetic is ``weir.quotas``').

Who a request belongs to: the user is the connection's principal name (``User:alice`` →
``alice``, ``ANONYMOUS`` on a PLAINTEXT listener) and the client id is the request header's
(``""`` when null), as Kafka's quota callback sees them.

Byte-rate quotas are recorded by the Produce and Fetch handlers (``charge``); the request
quota by ``with_request_quota``, which wraps every handler: it times the handler (leaving out
the waits it marks with ``weir.quotas.not_request_time``), records the time and, when the
connection is throttled for any reason, puts the throttle time into the response's
``throttle_time_ms``. A Fetch records its request time itself (``charge_request_time``)
just before it answers, because either quota's throttle makes it answer empty. Setting
``ctx.throttle_ms`` is what makes the listener mute the connection after the response
(``weir.server``).

Exempt from the request quota, as in Kafka: the inter-broker cluster actions (a follower's
Fetch, AlterPartition) and the requests of the SASL exchange, which come before the principal
is known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from weir.protocol.api_keys import ApiKey
from weir.quotas import QuotaKind, QuotaManager, RequestTimer, current_request_timer

if TYPE_CHECKING:
    from weir.protocol.codec import Request
    from weir.server import ConnectionContext, Handler

__all__ = ["charge", "charge_request_time", "identity", "with_request_quota"]

_EXEMPT = frozenset(
    {ApiKey.ALTER_PARTITION, ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
)
# Request time is recorded in percent-seconds of one thread: Kafka's nanosToPercentage.
_PERCENT_PER_NS = 100 / 1_000_000_000


def identity(ctx: ConnectionContext, request: Request) -> tuple[str, str]:
    """(user, client id) of a request, as quotas name them."""
    return ctx.principal.partition(":")[2], request.client_id or ""


def charge(
    ctx: ConnectionContext,
    request: Request,
    quotas: QuotaManager,
    kind: QuotaKind,
    value: float,
    now_ms: int,
) -> int:
    """Record ``value`` against the request's quota of ``kind``; the throttle time (0 within
    it). A throttle is counted and set on the connection."""
    if not quotas.enabled(kind):
        return 0
    user, client_id = identity(ctx, request)
    throttle_ms = quotas.record(kind, user, client_id, value, now_ms)
    if throttle_ms > 0:
        quotas.throttled(kind, user, client_id, throttle_ms, now_ms)
        ctx.throttle_ms = max(ctx.throttle_ms, throttle_ms)
    return throttle_ms


def charge_request_time(
    ctx: ConnectionContext, request: Request, quotas: QuotaManager, now_ms: int
) -> int:
    """Record the request time spent so far against the request quota, now rather than when
    the handler returns; the throttle time (0 within the quota, or when the request is not
    timed: exempt, or no request quota anywhere). The wrapper then records nothing more.

    For the Fetch handler: as Kafka's handleFetchRequest, it needs the request quota's
    throttle before it answers, since a throttled Fetch goes out empty.
    """
    timer = current_request_timer()
    if timer is None or timer.charged:
        return 0
    timer.charged = True
    percent = timer.elapsed_ns() * _PERCENT_PER_NS
    return charge(ctx, request, quotas, QuotaKind.REQUEST, percent, now_ms)


def with_request_quota(
    api_key: int, handler: Handler, quotas: QuotaManager, time_ms: Callable[[], int]
) -> Handler:
    """``handler`` under the request quota, answering with the connection's throttle time."""

    async def handle(ctx: ConnectionContext, request: Request) -> Any:
        if (
            not quotas.enabled(QuotaKind.REQUEST)
            or api_key in _EXEMPT
            or getattr(request.body, "replica_id", -1) >= 0
        ):
            body = await handler(ctx, request)
        else:
            with RequestTimer() as timer:
                body = await handler(ctx, request)
            if not timer.charged:
                percent = timer.elapsed_ns() * _PERCENT_PER_NS
                charge(ctx, request, quotas, QuotaKind.REQUEST, percent, time_ms())
        if ctx.throttle_ms > 0 and body is not None and hasattr(body, "throttle_time"):
            throttle = timedelta(milliseconds=ctx.throttle_ms)
            if throttle > body.throttle_time:
                body = dataclasses.replace(body, throttle_time=throttle)
        return body

    return handle

"""ApiVersions (API 18): advertise exactly the APIs and versions the dispatch table holds.

The v3 response carries no tagged fields (no features): Debian's kcat links librdkafka 2.0.2,
which mis-skips tagged fields in this response (DESIGN §5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from weir.handlers._build import make, respond, types_of
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.server import ConnectionContext


async def handle(
    ctx: ConnectionContext, request: Request, *, supported_versions: Mapping[int, tuple[int, int]]
) -> Any:
    types = types_of(request)
    return respond(
        request,
        api_keys=tuple(
            make(types.ApiVersion, api_key=key, min_version=low, max_version=high)
            for key, (low, high) in sorted(supported_versions.items())
        ),
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.API_VERSIONS: ((0, 3), handle),
}

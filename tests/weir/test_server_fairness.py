"""Connections take turns: a client that pipelines many requests does not hold the event
loop until all of them are handled.

A ``KafkaServer`` on port 0 in the test's event loop whose ApiVersions handler completes at
once (as most handlers do: no await suspends) and records the order in which requests were
handled. One client writes a burst of pipelined requests, another a single request right
after; the single request must be handled before the burst is done. Order, not time.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode

from weir.client import encode_request
from weir.server import ConnectionContext, KafkaServer

BURST = 200
WAIT_S = 10.0


async def _read_responses(reader: asyncio.StreamReader, count: int) -> None:
    for _ in range(count):
        size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), WAIT_S))[0]
        await asyncio.wait_for(reader.readexactly(size), WAIT_S)


async def test_a_pipelining_client_does_not_hold_the_loop_until_its_burst_is_handled() -> None:
    handled: list[str] = []

    async def api_versions(ctx: ConnectionContext, request: Any) -> Any:
        handled.append(request.client_id)
        return ApiVersionsResponse(error_code=ErrorCode.none, api_keys=())

    server = KafkaServer(
        name="PLAINTEXT",
        handlers={18: api_versions},
        supported_versions={18: (0, 0)},
        max_request_size=1024 * 1024,
    )
    _, port = await server.bind("127.0.0.1", 0)
    await server.start_serving()
    try:
        flood_reader, flood = await asyncio.open_connection("127.0.0.1", port)
        polite_reader, polite = await asyncio.open_connection("127.0.0.1", port)
        # Both connections are served before the burst (their tasks are running).
        for writer, reader, name in ((flood, flood_reader, "flood"), (polite, polite_reader, "p")):
            writer.write(encode_request(ApiVersionsRequest(), 0, name))
            await _read_responses(reader, 1)
        handled.clear()
        burst = b"".join(encode_request(ApiVersionsRequest(), i, "flood") for i in range(BURST))
        flood.write(burst)
        polite.write(encode_request(ApiVersionsRequest(), 1, "polite"))
        await _read_responses(polite_reader, 1)
        await _read_responses(flood_reader, BURST)
        assert handled.count("flood") == BURST
        assert handled.index("polite") < BURST - 1, "the burst was handled in one go"
        flood.close()
        polite.close()
    finally:
        await server.stop()

"""Weir's broker client: response framing straight into per-frame buffers, and pipelining
(several requests in flight on one connection, responses matched by correlation id)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersion, ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import ProduceRequest
from kio.static.primitive import i16

from weir.client import _SCRATCH_BYTES, BrokerClient, BrokerClientError, _FrameProtocol
from weir.protocol.codec import decode_request, encode_response


def feed(protocol: _FrameProtocol, data: bytes, chunk: int) -> None:
    """Deliver ``data`` the way the event loop does: into get_buffer(), ``chunk`` at most."""
    pos = 0
    while pos < len(data):
        buffer = protocol.get_buffer(-1)
        n = min(len(buffer), chunk, len(data) - pos)
        buffer[:n] = data[pos : pos + n]
        protocol.buffer_updated(n)
        pos += n


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def frames_of(protocol: _FrameProtocol) -> list[bytes]:
    return [bytes(f) for f in protocol._frames]


@pytest.mark.parametrize("chunk", [1, 3, 4, 5, 1000, 1 << 20])
def test_frames_split_anywhere_are_reassembled(chunk: int) -> None:
    bodies = [b"", b"a", b"hello world", bytes(range(256)) * 700]  # the last is > scratch
    protocol = _FrameProtocol()
    feed(protocol, b"".join(frame(b) for b in bodies), chunk)
    assert frames_of(protocol) == bodies
    assert protocol._frame is None and protocol._pending == 0


def test_a_large_frame_is_received_into_its_own_buffer() -> None:
    body = b"x" * (_SCRATCH_BYTES * 3 + 17)
    protocol = _FrameProtocol()
    feed(protocol, frame(body)[:1000], 1000)
    assert protocol._frame is not None and len(protocol._frame) == len(body)
    # The next receive goes straight into the frame, not the scratch buffer.
    assert len(protocol.get_buffer(-1)) == len(body) - (1000 - 4)
    feed(protocol, frame(body)[1000:], 1 << 20)
    assert frames_of(protocol) == [body]


def test_negative_size_fails_the_connection() -> None:
    protocol = _FrameProtocol()
    feed(protocol, struct.pack(">i", -5), 4)
    assert isinstance(protocol._lost, BrokerClientError)


async def test_read_frame_waits_and_reports_a_lost_connection() -> None:
    protocol = _FrameProtocol()
    reader = asyncio.create_task(protocol.read_frame())
    await asyncio.sleep(0)
    feed(protocol, frame(b"late"), 2)
    assert bytes(await reader) == b"late"
    waiting = asyncio.create_task(protocol.read_frame())
    await asyncio.sleep(0)
    protocol.connection_lost(None)
    with pytest.raises(asyncio.IncompleteReadError):
        await waiting


# -- pipelining, against a small in-process fake broker -------------------------------------

SUPPORTED = {18: (0, 3), 0: (3, 9)}


def ask(n: int) -> ApiVersionsRequest:
    """A request that carries ``n``; the fake broker echoes it in its response."""
    return ApiVersionsRequest(client_software_name=str(n), client_software_version="1")


def answer_of(response: Any) -> int:
    (key,) = response.api_keys
    return key.api_key


async def read_request(reader: asyncio.StreamReader) -> tuple[int, int]:
    """The next request's (correlation id, echoed number); -1 for a non-ApiVersions one."""
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    request = decode_request(await reader.readexactly(size), SUPPORTED)
    if request.api_key != 18:
        return request.correlation_id, -1
    return request.correlation_id, int(request.body.client_software_name)


def respond(writer: asyncio.StreamWriter, correlation_id: int, n: int) -> None:
    body = ApiVersionsResponse(
        error_code=ErrorCode.none,
        api_keys=(ApiVersion(api_key=i16(n), min_version=i16(0), max_version=i16(0)),),
        throttle_time=timedelta(0),
    )
    writer.write(b"".join(encode_response(18, 3, correlation_id, body)))  # type: ignore[arg-type]


Script = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def fake_broker(
    *scripts: Script, max_in_flight: int = 32
) -> AsyncIterator[tuple[BrokerClient, list[int]]]:
    """A broker on port 0 whose i-th connection runs ``scripts[i]``; yields a client of it
    and the list of connections accepted so far (one entry per connection)."""
    accepted: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(len(accepted))
        try:
            await scripts[len(accepted) - 1](reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = BrokerClient("127.0.0.1", port, client_id="test", max_in_flight=max_in_flight)
    try:
        yield client, accepted
    finally:
        await client.close()
        server.close()
        await server.wait_closed()


async def test_requests_are_pipelined_and_matched_by_correlation_id() -> None:
    """The broker reads all eight requests before answering any, then answers them in
    reverse order: a one-at-a-time client would deadlock, a client that matched responses
    by arrival order would mix them up."""
    n = 8

    async def reverse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        requests = [await read_request(reader) for _ in range(n)]
        for correlation_id, echoed in reversed(requests):
            respond(writer, correlation_id, echoed)
        await writer.drain()
        await reader.read()  # until the client hangs up

    async with fake_broker(reverse) as (client, accepted):
        responses = await asyncio.gather(*(client.request(ask(i), timeout=5) for i in range(n)))
        assert [answer_of(r) for r in responses] == list(range(n))
        assert accepted == [0]  # one connection carried them all


async def test_requests_beyond_max_in_flight_wait_for_a_slot() -> None:
    async def two_at_a_time(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = [await read_request(reader) for _ in range(2)]
        with pytest.raises(TimeoutError):  # the third is held back by the client
            await asyncio.wait_for(reader.readexactly(1), 0.3)
        for request in first:
            respond(writer, *request)
        respond(writer, *await read_request(reader))
        await writer.drain()
        await reader.read()

    async with fake_broker(two_at_a_time, max_in_flight=2) as (client, _):
        responses = await asyncio.gather(*(client.request(ask(i), timeout=5) for i in range(3)))
        assert [answer_of(r) for r in responses] == [0, 1, 2]


async def test_a_timed_out_request_leaves_the_connection_usable() -> None:
    """The late response of a request that timed out is dropped by its correlation id; the
    next request on the same connection gets its own answer."""

    async def late(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        slow = await read_request(reader)
        fast = await read_request(reader)  # sent after the slow one timed out
        respond(writer, *slow)  # too late: nobody waits for it any more
        respond(writer, *fast)
        await writer.drain()
        await reader.read()

    async with fake_broker(late) as (client, accepted):
        with pytest.raises(BrokerClientError, match="TimeoutError"):
            await client.request(ask(1), timeout=0.2)
        assert answer_of(await client.request(ask(2), timeout=5)) == 2
        assert accepted == [0]


async def test_a_lost_connection_fails_every_request_in_flight_and_the_next_reconnects() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(3):
            await read_request(reader)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        respond(writer, *await read_request(reader))
        await writer.drain()
        await reader.read()

    async with fake_broker(hang_up, serve) as (client, accepted):
        results = await asyncio.gather(
            *(client.request(ask(i), timeout=5) for i in range(3)), return_exceptions=True
        )
        assert all(isinstance(r, BrokerClientError) for r in results), results
        assert answer_of(await client.request(ask(7), timeout=5)) == 7
        assert accepted == [0, 1]


async def test_close_fails_the_requests_in_flight() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async with fake_broker(silent) as (client, _):
        pending = [asyncio.create_task(client.request(ask(i), timeout=5)) for i in range(2)]
        await asyncio.sleep(0.1)
        await client.close()
        for task in pending:
            with pytest.raises(BrokerClientError):
                await task


async def test_produce_with_acks_0_expects_no_response() -> None:
    """Kafka never answers Produce acks=0: the client returns None at once and the next
    request's response is not mistaken for it."""

    async def no_answer_to_produce(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        _, kind = await read_request(reader)
        assert kind == -1
        respond(writer, *await read_request(reader))
        await writer.drain()
        await reader.read()

    async with fake_broker(no_answer_to_produce) as (client, _):
        produce = ProduceRequest(acks=i16(0), timeout=timedelta(seconds=1), topic_data=())
        assert await client.request(produce, timeout=5) is None
        assert answer_of(await client.request(ask(3), timeout=5)) == 3

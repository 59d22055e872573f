"""The listener's connection limits with real sockets, in the test's event loop.

A ``KafkaServer`` on ``127.0.0.1`` port 0 with two tiny handlers: ApiVersions answers at
once, Metadata waits on a gate (a request held in flight, like a parked Fetch). Clients are
asyncio streams sending kio-encoded frames. Each test proves one config of
``weir.connection_limits`` on the wire: ``max.connections.per.ip`` (+ overrides),
``max.connections``, ``connections.max.idle.ms``, ``queued.max.requests`` and the socket
buffer sizes. Waits are for a condition, never for a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.api_versions.v0.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v0.request import MetadataRequest
from kio.schema.metadata.v0.response import MetadataResponse

from weir.client import encode_request
from weir.config import BrokerConfig
from weir.connection_limits import ConnectionLimits, ConnectionQuotas, CurrentLimits, RequestQueue
from weir.metrics import BrokerMetrics
from weir.server import ConnectionContext, KafkaConnection, KafkaServer

WAIT_S = 10.0
API_VERSIONS = encode_request(ApiVersionsRequest(), 1, "t")
PARKED = encode_request(MetadataRequest(topics=()), 2, "t")


@dataclass
class Served:
    server: KafkaServer
    port: int
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    clients: list[asyncio.StreamWriter] = field(default_factory=list)

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.clients.append(writer)
        return reader, writer

    async def connect_answered(
        self, count: int
    ) -> list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
        """``count`` new connections, each of which the server has answered once."""
        clients = [await self.connect() for _ in range(count)]
        for client in clients:
            assert await answered(*client)
        return clients

    async def refused(self) -> bool:
        """A new connection is closed by the server (over a limit) without an answer."""
        reader, _ = await self.connect()
        return await closed_by_server(reader)

    def connection(self, index: int = 0) -> KafkaConnection:
        return sorted(self.server.connections, key=lambda c: c.context.peer_port)[index]


async def serve(**settings: Any) -> Served:
    served: Served

    async def api_versions(ctx: ConnectionContext, request: Any) -> Any:
        return ApiVersionsResponse(error_code=ErrorCode.none, api_keys=())

    async def parked(ctx: ConnectionContext, request: Any) -> Any:
        await served.gate.wait()
        return MetadataResponse(brokers=(), topics=())

    server = KafkaServer(
        name="PLAINTEXT",
        handlers={18: api_versions, 3: parked},
        supported_versions={18: (0, 0), 3: (0, 0)},
        max_request_size=1024 * 1024,
        metrics=BrokerMetrics(),
        **settings,
    )
    _, port = await server.bind("127.0.0.1", 0)
    await server.start_serving()
    served = Served(server, port)
    return served


@contextlib.asynccontextmanager
async def serving(**settings: Any) -> AsyncIterator[Served]:
    served = await serve(**settings)
    try:
        yield served
    finally:
        for writer in served.clients:
            writer.close()
        served.gate.set()
        await served.server.stop()


async def response(reader: asyncio.StreamReader) -> int:
    """Read one response frame; its correlation id."""
    size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), WAIT_S))[0]
    body = await asyncio.wait_for(reader.readexactly(size), WAIT_S)
    return struct.unpack_from(">i", body)[0]


async def answered(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    writer.write(API_VERSIONS)
    return await response(reader) == 1


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), WAIT_S) == b""
    except ConnectionResetError:
        return True


async def until(condition: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), WAIT_S)


def quotas(**static: str) -> ConnectionQuotas:
    """Quotas over a BrokerConfig, as the broker builds them."""
    config = BrokerConfig(broker_id=1, static=static)
    return ConnectionQuotas(CurrentLimits(lambda: config))


async def test_the_connection_over_max_connections_per_ip_is_closed_until_one_closes() -> None:
    async with serving(quotas=quotas(**{"max.connections.per.ip": "2"})) as served:
        first, _ = await served.connect_answered(2)
        assert await served.refused()
        assert await answered(*first)  # the others are still served
        assert served.server.metrics is not None
        assert served.server.metrics.connections_refused == {"per_ip": 1}
        first[1].close()
        await until(lambda: served.server.quotas.total == 1)
        assert await answered(*await served.connect())


async def test_an_override_for_the_address_changes_its_limit() -> None:
    settings = {"max.connections.per.ip": "1", "max.connections.per.ip.overrides": "127.0.0.1:3"}
    async with serving(quotas=quotas(**settings)) as served:
        await served.connect_answered(3)
        assert await served.refused()


async def test_max_connections_holds_new_clients_while_existing_ones_are_served() -> None:
    async with serving(quotas=quotas(**{"max.connections": "2"})) as served:
        first, second = await served.connect_answered(2)
        # The third connects (the kernel's backlog) and asks; the listener does not accept.
        waiting_reader, waiting_writer = await served.connect()
        waiting_writer.write(API_VERSIONS)
        for _ in range(3):
            assert await answered(*first) and await answered(*second)
        assert len(served.server.connections) == 2
        assert served.server.metrics is not None
        assert served.server.metrics.connections_refused == {}
        # A slot frees: the waiting client is accepted and answered.
        first[1].close()
        assert await response(waiting_reader) == 1
        assert await answered(*second)


async def test_a_raised_max_connections_lets_the_waiting_client_in() -> None:
    limits = [ConnectionLimits(max_connections=1)]
    async with serving(quotas=ConnectionQuotas(lambda: limits[-1])) as served:
        assert await answered(*await served.connect())
        waiting_reader, waiting_writer = await served.connect()
        waiting_writer.write(API_VERSIONS)
        limits.append(ConnectionLimits(max_connections=2))
        served.server.quotas.changed()  # what the broker does on a new metadata image
        assert await response(waiting_reader) == 1


async def test_idle_connection_is_closed_but_not_one_with_a_request_in_flight() -> None:
    async with serving(max_idle_ms=300) as served:
        parked_reader, parked_writer = await served.connect()
        parked_writer.write(PARKED)
        await until(lambda: any(c.busy for c in served.server.connections))
        # Connected after the parked request was last active: idle for less time than it.
        idle_reader, idle_writer = await served.connect()
        assert await answered(idle_reader, idle_writer)
        assert await closed_by_server(idle_reader)
        assert served.server.metrics is not None
        assert served.server.metrics.connections_closed_idle == 1
        # The sweep that closed the idle one would have closed the parked one too.
        assert len(served.server.connections) == 1
        served.gate.set()
        assert await response(parked_reader) == 2


async def test_queued_max_requests_stops_reading_from_connections_with_requests_queued() -> None:
    queue: RequestQueue[KafkaConnection] = RequestQueue(2)
    async with serving(request_queue=queue) as served:
        reader, writer = await served.connect()
        writer.write(PARKED + API_VERSIONS * 3)  # three read behind the parked one
        await until(lambda: queue.count >= 2)
        held = served.connection()
        await until(lambda: not held._transport.is_reading())  # type: ignore[union-attr]
        before = queue.count
        writer.write(API_VERSIONS * 5)  # stays in the socket: the server is not reading
        # Another client with nothing queued is always read and answered.
        other = await served.connect()
        assert await answered(*other) and await answered(*other)
        assert queue.count == before and queue.waiting == 1
        served.gate.set()
        assert [await response(reader) for _ in range(9)] == [2] + [1] * 8
        assert queue.count == 0 and held._transport.is_reading()  # type: ignore[union-attr]


async def test_socket_buffer_sizes_are_applied_to_the_server_side_sockets() -> None:
    async with serving(send_buffer_bytes=32 * 1024, receive_buffer_bytes=48 * 1024) as served:
        reader, writer = await served.connect()
        assert await answered(reader, writer)
        sock = served.connection()._transport.get_extra_info("socket")  # type: ignore[union-attr]
        # Linux reports twice the size asked for (its bookkeeping overhead).
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) in (32768, 65536)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) in (49152, 98304)


async def test_the_protected_inter_broker_listener_makes_the_others_shed_a_connection() -> None:
    shared = ConnectionQuotas(
        lambda: ConnectionLimits(max_connections=1), protected_listener="BROKER"
    )
    # A 5 s idle time sweeps every 0.5 s: the excess check runs with it.
    async with serving(quotas=shared, max_idle_ms=5000) as clients:
        inter = await serve(quotas=shared, max_idle_ms=5000)
        inter.server.name = "BROKER"
        try:
            client_reader, client_writer = await clients.connect()
            assert await answered(client_reader, client_writer)
            # Over max.connections, yet the inter-broker listener accepts...
            assert await answered(*await inter.connect())
            # ...and the client listener closes its least recently active connection.
            assert await closed_by_server(client_reader)
            assert clients.server.metrics is not None
            assert clients.server.metrics.connections_refused == {"max_connections": 1}
            assert shared.total == 1
        finally:
            for writer in inter.clients:
                writer.close()
            await inter.server.stop()

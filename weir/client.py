"""A minimal asyncio Kafka client for broker-to-broker and control-plane requests.

Brokers talk to each other over the Kafka protocol, as Kafka's do: a broker that must
auto-create a topic sends CreateTopics to the controller (Kafka's AutoTopicCreationManager),
and followers fetch from leaders the same way. Requests are encoded with the same kio schemas
the server decodes.

Theory of operation
-------------------
The client is *pipelined*, like aiokafka's connection: one ``BrokerClient`` is shared by
every caller that talks to a broker (the control plane keeps one per broker), so requests do
not queue behind each other. Each request gets the next correlation id and a future in the
connection's in-flight map, and is written at once; one reader task per connection takes
response frames off the socket and completes the future whose correlation id the frame
names (the broker answers in request order, but nothing here relies on it). So:

* a request that times out only leaves the map: its late response finds no future and is
  dropped, and the connection stays usable;
* a lost connection (or a response that cannot be framed) fails every in-flight request with
  ``BrokerClientError``; the next request opens a new connection;
* a request Kafka never answers (Produce with ``acks=0``) is written and returns ``None``;
* at most ``max_in_flight`` requests are in flight; more wait for a slot (within their own
  timeout);
* ``close()`` fails the requests still in flight with ``BrokerClientError``.

Security (``weir.security.client.ClientSecurity``): on SSL/SASL_SSL the connection is
opened with TLS; on SASL_* the client authenticates (SaslHandshake v1, then SaslAuthenticate
v2 with PLAIN or SCRAM tokens) right after connecting, before any request is sent on it;
concurrent first requests wait for that one connection. A refused login raises
``BrokerClientError`` carrying the broker's error message, and the connection is closed: the
next request starts over.
"""

from __future__ import annotations

import asyncio
import collections
import io
import logging
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.serial import entity_reader, entity_writer

from weir.security.client import ClientSecurity, ScramClient, plain_token
from weir.security.scram import ScramError

__all__ = ["BrokerClient", "BrokerClientError", "encode_request"]

log = logging.getLogger("weir.client")

_SIZE = struct.Struct(">i")
_SCRATCH_BYTES = 64 * 1024
# Larger than any response a broker sends (fetch.max.bytes is at most a few hundred MB).
_MAX_FRAME_BYTES = 1 << 30


class BrokerClientError(Exception):
    """The peer broker could not be reached or answered garbage."""


class _FrameProtocol(asyncio.BufferedProtocol):
    """Reads size-prefixed response frames straight into their own buffers.

    A follower's Fetch responses are megabytes: asyncio streams would copy every byte twice
    (into the stream's buffer, then out of it). Here the kernel writes a frame's body
    directly into the bytearray that becomes the frame, so each byte is copied once.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._scratch = bytearray(_SCRATCH_BYTES)
        self._pending = 0  # bytes of the scratch buffer not yet consumed
        self._frame: bytearray | None = None
        self._filled = 0
        self._frames: collections.deque[bytearray] = collections.deque()
        self._waiter: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None
        self._closed = asyncio.Event()

    @property
    def closed(self) -> bool:
        return self.transport is None or self._lost is not None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._frame is not None:
            return memoryview(self._frame)[self._filled :]
        return memoryview(self._scratch)[self._pending :]

    def buffer_updated(self, nbytes: int) -> None:
        if self._frame is not None:
            self._filled += nbytes
            if self._filled == len(self._frame):
                self._deliver(self._frame)
                self._frame = None
            return
        self._pending += nbytes
        self._split_scratch()

    def _split_scratch(self) -> None:
        view = memoryview(self._scratch)
        start = 0
        while self._pending - start >= 4:
            (size,) = _SIZE.unpack_from(view, start)
            if size < 0 or size > _MAX_FRAME_BYTES:
                self._fail(BrokerClientError(f"response frame of {size} bytes"))
                return
            body_start = start + 4
            available = self._pending - body_start
            if available >= size:
                self._deliver(bytearray(view[body_start : body_start + size]))
                start = body_start + size
                continue
            # A large frame: give it its own buffer and receive the rest straight into it.
            self._frame = bytearray(size)
            self._frame[:available] = view[body_start : self._pending]
            self._filled = available
            start = self._pending
            break
        remaining = self._pending - start
        if remaining and start:
            self._scratch[:remaining] = view[start : self._pending]
        self._pending = remaining

    def _deliver(self, frame: bytearray) -> None:
        self._frames.append(frame)
        self._wake()

    def _fail(self, exc: BaseException) -> None:
        self._lost = exc
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._lost is None:
            self._lost = exc or asyncio.IncompleteReadError(b"", None)
        self._closed.set()
        self._wake()

    async def shutdown(self, timeout: float = 1.0) -> None:
        """Close and wait until the socket is closed: a TLS connection first exchanges
        close_notify, which a caller about to end its event loop must not cut short."""
        if self.transport is None:
            return
        self.transport.close()
        try:
            async with asyncio.timeout(timeout):
                await self._closed.wait()
        except TimeoutError:
            self.transport.abort()

    async def read_frame(self) -> bytearray:
        while not self._frames:
            if self._lost is not None:
                raise self._lost
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._frames.popleft()


# Kafka's clients allow 5 requests in flight per connection; the control plane fans out
# more than that to one broker (a dashboard page, the lag monitor), and the broker queues
# what it has not read yet, so a few more is cheap.
DEFAULT_MAX_IN_FLIGHT = 32
_PRODUCE_KEY = 0


def _expects_response(body: Any) -> bool:
    """Kafka sends no response to a Produce with acks=0."""
    return not (body.__api_key__ == _PRODUCE_KEY and body.acks == 0)


def encode_request(body: Any, correlation_id: int, client_id: str) -> bytes:
    """A size-prefixed request frame: header (by the body's API version) and body; public for
    clients that drive a raw socket themselves (tests, tools)."""
    header_type = body.__header_schema__
    buffer = io.BytesIO()
    buffer.write(b"\x00\x00\x00\x00")
    entity_writer(header_type)(
        buffer,
        header_type(
            request_api_key=body.__api_key__,
            request_api_version=body.__version__,
            correlation_id=correlation_id,
            client_id=client_id,
        ),
    )
    entity_writer(type(body))(buffer, body)
    frame = buffer.getbuffer()
    _SIZE.pack_into(frame, 0, len(frame) - 4)
    return bytes(frame)


def _decode(body: Any, frame: bytearray) -> Any:
    """The response body in ``frame`` (whose header the reader task already matched)."""
    response_type = load_response_schema(body.__api_key__, body.__version__)
    # kio's native readers want a read-only buffer; the view costs no copy.
    payload = memoryview(frame).toreadonly()
    _, offset = entity_reader(response_type.__header_schema__)(payload, 0)
    response, _ = entity_reader(response_type)(payload, offset)
    return response


class _Connection:
    """One open connection: the in-flight map and the task that reads responses."""

    def __init__(self, protocol: _FrameProtocol, client_id: str, where: str) -> None:
        self.protocol = protocol
        self._client_id = client_id
        self._where = where
        self._correlation = 0
        self._in_flight: dict[int, asyncio.Future[bytearray]] = {}
        self._failure: BrokerClientError | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read_responses())

    @property
    def usable(self) -> bool:
        return self._failure is None and not self.protocol.closed

    async def exchange(self, body: Any) -> Any:
        """Send ``body`` and wait for its response (None for a request Kafka never answers)."""
        if self._failure is not None:
            raise BrokerClientError(str(self._failure))
        transport = self.protocol.transport
        assert transport is not None
        self._correlation = correlation = (self._correlation + 1) & 0x7FFFFFFF
        frame = encode_request(body, correlation, self._client_id)
        if not _expects_response(body):
            transport.write(frame)
            return None
        future: asyncio.Future[bytearray] = asyncio.get_running_loop().create_future()
        self._in_flight[correlation] = future
        try:
            transport.write(frame)
            response = await future
        finally:
            # Also on timeout or cancellation: a late response then finds no future.
            self._in_flight.pop(correlation, None)
        try:
            return _decode(body, response)
        except Exception as exc:  # kio raises several types for a malformed response
            error = BrokerClientError(f"{self._where} sent a malformed response: {exc!r}")
            self.fail(error)  # the stream cannot be trusted any more
            raise error from exc

    async def _read_responses(self) -> None:
        """Complete each in-flight future with the frame that names its correlation id."""
        try:
            while True:
                frame = await self.protocol.read_frame()
                if len(frame) < 4:
                    raise BrokerClientError(f"response frame of {len(frame)} bytes")
                # Every response header, legacy or flexible, starts with the correlation id.
                (correlation,) = _SIZE.unpack_from(frame, 0)
                future = self._in_flight.pop(correlation, None)
                if future is None:
                    log.debug("%s: dropping the late response %d", self._where, correlation)
                elif not future.done():
                    future.set_result(frame)
        except asyncio.CancelledError:
            self.fail(BrokerClientError(f"connection to {self._where} closed"))
            raise
        except BrokerClientError as exc:
            self.fail(exc)
        except Exception as exc:  # OSError, IncompleteReadError, ssl errors: the socket is gone
            self.fail(BrokerClientError(f"connection to {self._where} lost: {exc!r}"))

    def fail(self, exc: BrokerClientError) -> None:
        """End the connection: every request in flight fails with ``exc``."""
        if self._failure is None:
            self._failure = exc
        in_flight, self._in_flight = self._in_flight, {}
        for future in in_flight.values():
            if not future.done():
                future.set_exception(BrokerClientError(str(exc)))  # one per waiting task
        if self.protocol.transport is not None:
            self.protocol.transport.close()

    async def close(self) -> None:
        self.fail(BrokerClientError(f"connection to {self._where} closed"))
        await self.protocol.shutdown()
        self._reader.cancel()
        try:
            await self._reader
        except asyncio.CancelledError:
            if (task := asyncio.current_task()) is not None and task.cancelling():
                raise

    def abort(self) -> None:
        """Drop the connection at once (a failed login, a connect cut short)."""
        self.fail(BrokerClientError(f"connection to {self._where} aborted"))
        self._reader.cancel()
        if self.protocol.transport is not None:
            self.protocol.transport.abort()


class BrokerClient:
    """A pipelined connection to one broker, opened on first use and reopened after failures."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        security: ClientSecurity | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.security = security or ClientSecurity()
        self._connection: _Connection | None = None
        # One connect (and SASL login) at a time: concurrent first requests share it.
        self._connecting = asyncio.Lock()
        self._slots = asyncio.Semaphore(max_in_flight)

    @property
    def _where(self) -> str:
        return f"broker {self.host}:{self.port}"

    async def request(self, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` (a kio request entity) and return the decoded response body."""
        try:
            async with asyncio.timeout(timeout), self._slots:
                connection = await self._connect_once()
                return await connection.exchange(body)
        except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
            raise BrokerClientError(f"request to {self._where} failed: {exc!r}") from exc

    async def _connect_once(self) -> _Connection:
        connection = self._connection
        if connection is not None and connection.usable:
            return connection
        async with self._connecting:
            connection = self._connection
            if connection is not None and connection.usable:
                return connection
            self._connection = None
            if connection is not None:
                await connection.close()
            connection = await self._connect()
            self._connection = connection
            return connection

    async def _connect(self) -> _Connection:
        """A new connection: TLS and SASL authentication as ``security`` says."""
        security = self.security
        loop = asyncio.get_running_loop()
        if security.tls:
            _, protocol = await loop.create_connection(
                _FrameProtocol,
                self.host,
                self.port,
                ssl=security.ssl_context,
                server_hostname=security.server_hostname or self.host,
            )
        else:
            _, protocol = await loop.create_connection(_FrameProtocol, self.host, self.port)
        connection = _Connection(protocol, self.client_id, self._where)
        if security.sasl:
            try:
                await self._authenticate(connection)
            except BaseException:
                connection.abort()
                raise
        return connection

    async def _authenticate(self, connection: _Connection) -> None:
        security = self.security
        mechanism = security.sasl_mechanism
        assert mechanism is not None and security.username is not None
        password = security.password or ""
        where = self._where
        handshake = await connection.exchange(SaslHandshakeRequest(mechanism=mechanism))
        if handshake.error_code != ErrorCode.none:
            raise BrokerClientError(
                f"SASL handshake with {where} failed: {ErrorCode(handshake.error_code).name} "
                f"(it enables {', '.join(handshake.mechanisms) or 'no mechanism'}, "
                f"not {mechanism})"
            )
        if mechanism == "PLAIN":
            await self._sasl_step(connection, plain_token(security.username, password), where)
            return
        scram = ScramClient(mechanism, security.username, password)
        try:
            server_first = await self._sasl_step(connection, scram.first(), where)
            server_final = await self._sasl_step(connection, scram.final(server_first), where)
            scram.verify(server_final)
        except ScramError as exc:
            raise BrokerClientError(f"SASL {mechanism} with {where} failed: {exc}") from None

    async def _sasl_step(self, connection: _Connection, token: bytes, where: str) -> bytes:
        response = await connection.exchange(SaslAuthenticateRequest(auth_bytes=token))
        if response.error_code != ErrorCode.none:
            raise BrokerClientError(
                f"SASL authentication with {where} failed: "
                f"{response.error_message or ErrorCode(response.error_code).name}"
            )
        return bytes(response.auth_bytes)

    async def close(self) -> None:
        """Close the connection; requests still in flight fail with ``BrokerClientError``."""
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()

"""A minimal asyncio Kafka client for broker-to-broker requests.

Brokers talk to each other over the Kafka protocol, as Kafka's do: a broker that must
auto-create a topic sends CreateTopics to the controller (Kafka's AutoTopicCreationManager),
and followers fetch from leaders the same way. One request at a time per connection;
requests are encoded with the same kio schemas the server decodes.

Security (``weir.security.client.ClientSecurity``): on SSL/SASL_SSL the connection is
opened with TLS; on SASL_* the client authenticates (SaslHandshake v1, then SaslAuthenticate
v2 with PLAIN or SCRAM tokens) right after connecting, before the request that made it
connect. A refused login raises ``BrokerClientError`` carrying the broker's error message,
and the connection is closed: the next request starts over.
"""

from __future__ import annotations

import asyncio
import collections
import io
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.serial import entity_reader, entity_writer

from weir.security.client import ClientSecurity, ScramClient, plain_token
from weir.security.scram import ScramError

__all__ = ["BrokerClient", "BrokerClientError"]

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


class BrokerClient:
    """A connection to one broker, opened on first use and reopened after failures."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        security: ClientSecurity | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.security = security or ClientSecurity()
        self._protocol: _FrameProtocol | None = None
        self._correlation = 0
        self._lock = asyncio.Lock()

    async def request(self, body: Any, *, timeout: float = 30.0) -> Any:
        """Send ``body`` (a kio request entity) and return the decoded response body."""
        async with self._lock:
            try:
                async with asyncio.timeout(timeout):
                    return await self._roundtrip(body)
            except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
                await self.close()
                raise BrokerClientError(
                    f"request to broker {self.host}:{self.port} failed: {exc!r}"
                ) from exc
            except BrokerClientError:
                await self.close()
                raise

    async def _roundtrip(self, body: Any) -> Any:
        if self._protocol is None or self._protocol.closed:
            self._protocol = await self._connect()
        return await self._exchange(self._protocol, body)

    async def _connect(self) -> _FrameProtocol:
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
        if security.sasl:
            try:
                await self._authenticate(protocol)
            except BaseException:
                if protocol.transport is not None:
                    protocol.transport.abort()
                raise
        return protocol

    async def _authenticate(self, protocol: _FrameProtocol) -> None:
        security = self.security
        mechanism = security.sasl_mechanism
        assert mechanism is not None and security.username is not None
        password = security.password or ""
        where = f"broker {self.host}:{self.port}"
        handshake = await self._exchange(protocol, SaslHandshakeRequest(mechanism=mechanism))
        if handshake.error_code != ErrorCode.none:
            raise BrokerClientError(
                f"SASL handshake with {where} failed: {ErrorCode(handshake.error_code).name} "
                f"(it enables {', '.join(handshake.mechanisms) or 'no mechanism'}, "
                f"not {mechanism})"
            )
        if mechanism == "PLAIN":
            await self._sasl_step(protocol, plain_token(security.username, password), where)
            return
        scram = ScramClient(mechanism, security.username, password)
        try:
            server_first = await self._sasl_step(protocol, scram.first(), where)
            server_final = await self._sasl_step(protocol, scram.final(server_first), where)
            scram.verify(server_final)
        except ScramError as exc:
            raise BrokerClientError(f"SASL {mechanism} with {where} failed: {exc}") from None

    async def _sasl_step(self, protocol: _FrameProtocol, token: bytes, where: str) -> bytes:
        response = await self._exchange(protocol, SaslAuthenticateRequest(auth_bytes=token))
        if response.error_code != ErrorCode.none:
            raise BrokerClientError(
                f"SASL authentication with {where} failed: "
                f"{response.error_message or ErrorCode(response.error_code).name}"
            )
        return bytes(response.auth_bytes)

    async def _exchange(self, protocol: _FrameProtocol, body: Any) -> Any:
        assert protocol.transport is not None
        self._correlation += 1
        api_key = body.__api_key__
        version = body.__version__
        header_type = body.__header_schema__
        buffer = io.BytesIO()
        buffer.write(b"\x00\x00\x00\x00")
        entity_writer(header_type)(
            buffer,
            header_type(
                request_api_key=api_key,
                request_api_version=version,
                correlation_id=self._correlation,
                client_id=self.client_id,
            ),
        )
        entity_writer(type(body))(buffer, body)
        frame = buffer.getbuffer()
        _SIZE.pack_into(frame, 0, len(frame) - 4)
        protocol.transport.write(bytes(frame))
        # kio's native readers want a read-only buffer; the view costs no copy.
        payload = memoryview(await protocol.read_frame()).toreadonly()
        response_type = load_response_schema(api_key, version)
        response_header_type = response_type.__header_schema__
        header, offset = entity_reader(response_header_type)(payload, 0)
        if header.correlation_id != self._correlation:
            raise BrokerClientError(
                f"correlation id {header.correlation_id} != {self._correlation}"
            )
        response, _ = entity_reader(response_type)(payload, offset)
        return response

    async def close(self) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            await protocol.shutdown()

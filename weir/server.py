"""The Kafka listener: a thin asyncio loop around the sans-io protocol package.

Theory of operation
-------------------
One ``KafkaConnection`` per client socket. It is a ``BufferedProtocol``: the socket is read
straight into the ``FrameDecoder``'s buffers, so a request's bytes land in the ``bytearray``
that becomes its frame (a large Produce without any user-space copy), and a Produce payload
reaches the log as a view of that frame (``weir.protocol.framing``). Whole frames are
queued; a single task per connection decodes and handles them one at a time and writes each
response before reading the next request, so responses leave in request order (Kafka
"mutes" a connection the same way while a request is in flight). A parked Fetch or an
``acks=all`` Produce simply holds that connection's task.

Bad input never takes the process down: a framing error or an unparseable request closes
only that connection; a handler that raises is logged and the connection closed, because a
Kafka client cannot match a missing response. Responses are bytes plus file regions, and
file regions go out with ``loop.sendfile`` (``os.sendfile`` under the hood: zero copy).

Security: each ``KafkaServer`` is one listener with a security protocol. On a SASL listener a
connection is unauthenticated until SaslAuthenticate succeeds (``weir.handlers.sasl``); until
then only ApiVersions, SaslHandshake and SaslAuthenticate are served (the API key is peeked
before decoding) and anything else closes the connection. After a v0 SaslHandshake the client
sends bare length-prefixed tokens, answered the same way. Until authenticated, frames are capped
at 512 KB (Kafka's ``sasl.server.max.receive.size``), then at ``socket.request.max.bytes``.
``ctx.principal`` is ``User:<name>`` once authenticated and ``User:ANONYMOUS`` on a PLAINTEXT
listener. A handler sets ``ctx.close_after_response`` to have its response sent and the
connection then closed (failed authentication). A listener may carry a response filter
(``rewrite``) that puts its own advertised endpoint into Metadata-like responses
(``weir.security.listeners``).

TLS (SSL and SASL_SSL listeners): the server accepts plain TCP and each connection upgrades
itself with ``loop.start_tls`` before reading a single Kafka byte, so a failed handshake (an
untrusted certificate, a plaintext client, garbage, a client that stalls past
``_TLS_HANDSHAKE_TIMEOUT``) is one log line and a closed connection, never a traceback, and the
listener keeps serving. On an SSL listener the principal comes from the client certificate
(``weir.security.tls.principal_from_peer``); on SASL_SSL, SASL sets it as on SASL_PLAINTEXT.
File regions cannot be sendfile'd through TLS (the kernel would send them unencrypted): they
are read with ``os.pread`` in pieces and written as bytes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from weir.metrics import BrokerMetrics
from weir.protocol.codec import (
    API_VERSIONS_KEY,
    ProtocolError,
    Request,
    UnsupportedVersionError,
    decode_request,
    encode_response,
    encode_unsupported_api_versions,
)
from weir.protocol.framing import FrameDecoder, FramingError
from weir.security.sasl import ANONYMOUS, PRE_AUTH_APIS, SaslFailure
from weir.security.tls import TlsConfigError, principal_from_peer

__all__ = ["ConnectionContext", "Handler", "KafkaServer"]

log = logging.getLogger("weir.server")

# Stop reading from a client that has this many request bytes queued but unhandled.
_MAX_QUEUED_BYTES = 8 * 1024 * 1024
# File regions up to this size are copied (pread) rather than sent with sendfile.
# Kafka's sasl.server.max.receive.size: the largest frame an unauthenticated client may send.
_PRE_AUTH_MAX_FRAME = 512 * 1024
_SENDFILE_MIN_BYTES = 64 * 1024
# Where bytes that arrive after a framing error go (the connection is closing).
_DISCARD_BYTES = 4096
# A TLS client must finish its handshake within this many seconds (Kafka has no such config;
# this bounds what a client that connects and says nothing can hold).
_TLS_HANDSHAKE_TIMEOUT = 10.0
# Over TLS a file region is read and written in pieces of this size, so that a large Fetch
# response never sits in memory whole.
_TLS_READ_CHUNK = 1024 * 1024


@dataclass(slots=True)
class ConnectionContext:
    """What a handler may know about the connection a request came from."""

    peer_host: str
    peer_port: int
    listener: str
    closed: bool = False
    security_protocol: str = "PLAINTEXT"
    principal: str = ANONYMOUS
    authenticated: bool = False
    sasl: Any = None  # weir.security.sasl.SaslSession during/after a SASL exchange
    close_after_response: bool = False
    # A client quota's throttle (weir.quotas): the connection is muted this long after the
    # response is sent (KIP-219).
    throttle_ms: int = 0


Handler = Callable[[ConnectionContext, Request], Awaitable[Any]]


class KafkaConnection(asyncio.BufferedProtocol):
    """One client connection: frames in, responses out, strictly in order."""

    def __init__(self, server: KafkaServer) -> None:
        self._server = server
        self._decoder = FrameDecoder(
            min(server.max_request_size, _PRE_AUTH_MAX_FRAME)
            if server.sasl
            else server.max_request_size
        )
        self._frames: deque[bytearray] = deque()
        self._queued_bytes = 0
        self._wakeup = asyncio.Event()
        self._transport: asyncio.Transport | None = None
        self._reading_paused = False
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._task: asyncio.Task[None] | None = None
        self.context = ConnectionContext(
            peer_host="?",
            peer_port=0,
            listener=server.name,
            security_protocol=server.security_protocol,
            authenticated=not server.sasl,
        )

    # asyncio.Protocol callbacks -------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        peer = transport.get_extra_info("peername") or ("?", 0)
        self.context.peer_host, self.context.peer_port = peer[0], peer[1]
        self._server.connections.add(self)
        loop = asyncio.get_running_loop()
        if self._server.ssl_context is not None:
            # No byte may reach the Kafka decoder before the handshake: start_tls resumes
            # reading once it has put its TLS protocol in front of this one.
            transport.pause_reading()
            self._task = loop.create_task(self._start_tls(transport))
        else:
            self._task = loop.create_task(self._serve())

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._decoder.failed:  # closing: whatever still arrives is dropped
            return memoryview(bytearray(_DISCARD_BYTES))
        return self._decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._decoder.failed:
            return
        try:
            frames = self._decoder.buffer_updated(nbytes)
        except FramingError as exc:
            log.warning("closing %s: %s", self._peer(), exc)
            self.close()
            return
        if frames:
            for frame in frames:
                self._queued_bytes += len(frame)
            self._frames.extend(frames)
            self._wakeup.set()
            if self._queued_bytes > _MAX_QUEUED_BYTES and self._transport:
                self._transport.pause_reading()
                self._reading_paused = True

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.context.closed = True
        self._server.connections.discard(self)
        self._wakeup.set()
        self._can_write.set()
        if self._task is not None:
            self._task.cancel()

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    # request loop ----------------------------------------------------------------------
    def close(self) -> None:
        self.context.closed = True
        if self._transport is not None:
            self._transport.close()

    def _peer(self) -> str:
        return f"{self.context.peer_host}:{self.context.peer_port}"

    async def _next_frame(self) -> bytearray | None:
        while not self._frames:
            if self.context.closed:
                return None
            self._wakeup.clear()
            await self._wakeup.wait()
        frame = self._frames.popleft()
        self._queued_bytes -= len(frame)
        if self._reading_paused and self._queued_bytes <= _MAX_QUEUED_BYTES // 2:
            self._reading_paused = False
            if self._transport is not None and not self.context.closed:
                self._transport.resume_reading()
        return frame

    async def _start_tls(self, transport: asyncio.Transport) -> None:
        """Upgrade the connection to TLS, set an SSL listener's principal, then serve."""
        server = self._server
        assert server.ssl_context is not None
        try:
            tls = await asyncio.get_running_loop().start_tls(
                transport,
                self,
                server.ssl_context,
                server_side=True,
                ssl_handshake_timeout=_TLS_HANDSHAKE_TIMEOUT,
            )
            if tls is None:
                raise ConnectionError("connection closed during the TLS handshake")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # ssl.SSLError, timeouts, resets: all end this client only
            # A bad certificate, a plaintext client or a stalled handshake is worth a line; a
            # peer that hangs up first (a port probe) only at debug level.
            level = logging.INFO if isinstance(exc, ssl.SSLError | TimeoutError) else logging.DEBUG
            if isinstance(exc, ConnectionAbortedError):  # asyncio's handshake timeout
                level = logging.INFO
            log.log(level, "closing %s: TLS handshake failed: %s", self._peer(), exc or repr(exc))
            self._drop(transport)
            return
        self._transport = tls
        if not server.sasl:
            try:
                self.context.principal = principal_from_peer(
                    tls.get_extra_info("ssl_object"), server.principal_mapping_rules
                )
            except TlsConfigError as exc:  # no mapping rule applies: Kafka fails the client
                log.info("closing %s: %s", self._peer(), exc)
                self._drop(tls)
                return
        await self._serve()

    def _drop(self, transport: asyncio.BaseTransport) -> None:
        self.context.closed = True
        self._server.connections.discard(self)
        transport.close()

    async def _serve(self) -> None:
        try:
            while True:
                frame = await self._next_frame()
                if frame is None:
                    return
                if not await self._handle(frame):
                    self.close()
                    return
                if self.context.throttle_ms > 0:
                    await self._throttle()
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("connection %s failed; closing it", self._peer())
            self.close()

    async def _handle(self, frame: bytearray) -> bool:
        """Handle one request; False means the connection must close."""
        server = self._server
        started_ns = time.perf_counter_ns()
        was_authenticated = self.context.authenticated
        if not was_authenticated:
            if self.context.sasl is not None and self.context.sasl.raw:
                return await self._raw_sasl_token(frame)
            api_key = struct.unpack_from(">h", frame)[0] if len(frame) >= 2 else -1
            if api_key not in PRE_AUTH_APIS:
                log.warning("closing %s: API %d before SASL authentication", self._peer(), api_key)
                return False
        try:
            request = decode_request(frame, server.supported_versions)
        except UnsupportedVersionError as exc:
            if exc.api_key == API_VERSIONS_KEY:
                await self._send(
                    [encode_unsupported_api_versions(exc.correlation_id, server.supported_versions)]
                )
                return True
            log.warning("closing %s: %s", self._peer(), exc)
            return False
        except ProtocolError as exc:
            log.warning("closing %s: %s", self._peer(), exc)
            return False
        handler = server.handlers[request.api_key]
        try:
            body = await handler(self.context, request)
        except Exception:
            log.exception(
                "handler for API %d v%d failed (client %s at %s)",
                request.api_key,
                request.api_version,
                request.client_id,
                self._peer(),
            )
            return False
        if server.rewrite is not None:
            body = server.rewrite(request.api_key, body)
        sent = 0
        if body is not None:  # None: e.g. Produce with acks=0, Kafka sends no response
            chunks = encode_response(
                request.api_key, request.api_version, request.correlation_id, body
            )
            sent = await self._send(chunks)
        metrics = server.metrics
        if metrics is not None:
            metrics.observe(
                request.api_key,
                time.perf_counter_ns() - started_ns,
                len(frame),
                sent,
                request.body,
            )
        if self._server.sasl and self.context.authenticated and not was_authenticated:
            self._lift_frame_cap()
        return not self.context.close_after_response

    async def _throttle(self) -> None:
        """Mute a throttled client as Kafka does (KIP-219): its response went out with
        ``throttle_time_ms``; nothing more is read from it until that time has passed."""
        delay_ms, self.context.throttle_ms = self.context.throttle_ms, 0
        transport = self._transport
        mute = transport is not None and not self._reading_paused
        if mute:
            assert transport is not None
            transport.pause_reading()
        try:
            await asyncio.sleep(delay_ms / 1000)
        finally:
            if mute and not self.context.closed and not self._reading_paused:
                assert transport is not None
                transport.resume_reading()

    async def _raw_sasl_token(self, frame: bytearray) -> bool:
        """A bare SASL token after a v0 SaslHandshake: answer with a bare token."""
        ctx = self.context
        try:
            answer = await ctx.sasl.step(bytes(frame))
        except SaslFailure as exc:
            log.warning("closing %s: SASL authentication failed: %s", self._peer(), exc)
            return False
        await self._send([struct.pack(">i", len(answer)) + answer])
        if ctx.sasl.complete:
            ctx.principal = ctx.sasl.principal
            ctx.authenticated = True
            self._lift_frame_cap()
        return True

    def _lift_frame_cap(self) -> None:
        """Authenticated: frames up to socket.request.max.bytes from now on. Clients send
        nothing while authentication is in flight, so the pre-auth decoder holds no bytes."""
        if self._decoder.buffered == 0:
            self._decoder = FrameDecoder(self._server.max_request_size)
        else:
            log.warning("%s sent data during SASL authentication; keeping the cap", self._peer())

    async def _send(self, chunks: list[Any]) -> int:
        """Write a response; the bytes written."""
        transport = self._transport
        if transport is None or self.context.closed:
            return 0
        total = 0
        loop = asyncio.get_running_loop()
        # Coalesce the response into as few transport writes as possible: each write on an
        # idle transport is a send() system call.
        pending: list[bytes | bytearray] = []
        for chunk in chunks:
            if isinstance(chunk, bytes | bytearray):
                pending.append(chunk)
                total += len(chunk)
                continue
            if self._server.ssl_context is not None and chunk.size > _SENDFILE_MIN_BYTES:
                if pending:
                    transport.write(b"".join(pending))
                    pending.clear()
                sent = await self._write_region_tls(chunk)
            elif chunk.size <= _SENDFILE_MIN_BYTES:
                # Small regions (a caught-up consumer's few batches): one pread is cheaper
                # than sendfile, which must drain the buffer first and register the socket
                # with the selector and unregister it again.
                data = os.pread(chunk.file.fileno(), chunk.size, chunk.position)
                sent = len(data)
                pending.append(data)
            else:
                if pending:
                    transport.write(b"".join(pending))
                    pending.clear()
                if self.context.closed:
                    return total
                sent = await loop.sendfile(transport, chunk.file, chunk.position, chunk.size)
            if sent != chunk.size:
                # The file shrank under us; the frame's length prefix is now a lie.
                log.warning("closing %s: log file region shrank while sending", self._peer())
                self.close()
                return total
            total += sent
        if pending and not self.context.closed:
            transport.write(pending[0] if len(pending) == 1 else b"".join(pending))
        if not self._can_write.is_set():
            await self._can_write.wait()
        return total

    async def _write_region_tls(self, chunk: Any) -> int:
        """A file region through TLS: pread + write piece by piece, waiting for the transport
        to drain in between; the bytes read (short when the file shrank)."""
        sent = 0
        fd = chunk.file.fileno()
        while sent < chunk.size:
            if self.context.closed or self._transport is None:
                return sent
            data = os.pread(fd, min(_TLS_READ_CHUNK, chunk.size - sent), chunk.position + sent)
            if not data:
                return sent
            self._transport.write(data)
            sent += len(data)
            if not self._can_write.is_set():
                await self._can_write.wait()
        return sent


@dataclass(eq=False, repr=False, kw_only=True)
class KafkaServer:
    """Accepts connections on one listener and dispatches requests to handlers."""

    name: str
    handlers: dict[int, Handler]
    supported_versions: dict[int, tuple[int, int]]
    max_request_size: int
    metrics: BrokerMetrics | None = None
    security_protocol: str = "PLAINTEXT"
    sasl_mechanisms: tuple[str, ...] = ()
    rewrite: Callable[[int, Any], Any] | None = None
    # SSL / SASL_SSL: the server side of the TLS handshake (weir.security.tls).
    ssl_context: ssl.SSLContext | None = None
    # ssl.principal.mapping.rules: the SSL principal from the client certificate's DN.
    principal_mapping_rules: str = "DEFAULT"
    connections: set[KafkaConnection] = field(init=False, default_factory=set)
    _server: asyncio.Server | None = field(init=False, default=None)

    @property
    def sasl(self) -> bool:
        """SASL_PLAINTEXT / SASL_SSL: connections must authenticate first."""
        return self.security_protocol.startswith("SASL_")

    async def bind(self, host: str, port: int) -> tuple[str, int]:
        """Bind the listening socket without accepting yet; the bound (host, port)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(self),
            host,
            port,
            reuse_address=True,
            backlog=1024,
            start_serving=False,
        )
        sockname = self._server.sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def start_serving(self) -> None:
        assert self._server is not None
        await self._server.start_serving()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()

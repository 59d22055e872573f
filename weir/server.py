"""The Kafka listener: a thin asyncio loop around the sans-io protocol package.

Theory of operation
-------------------
One ``KafkaConnection`` per client socket. It is a ``BufferedProtocol``: the socket is read
straight into the ``FrameDecoder``'s buffers, so a request's bytes land in the ``bytearray``
that becomes its frame (a large Produce without any user-space copy), and a Produce payload
reaches the log as a view of that frame (``weir.protocol.framing``). Whole frames are
queued; a single task per connection decodes and handles them one at a time and writes each
response before reading the next request, so responses leave in request order (Kafka
"mutes" a connection the same way while a request is in flight). A connection with more
requests read ahead yields to the event loop after each one, so every connection gets a
turn between two requests of a pipelining client (Kafka's processors likewise take one
request per channel at a time). A parked Fetch or an
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

Connection limits (``weir.connection_limits``, shared by the broker's listeners): each listener
runs its own accept loop so that it can stop accepting -- at ``max.connections`` (or the
listener's own limit) it waits for a slot before the next ``accept``, as Kafka's Acceptor does,
while every accepted client keeps being served. A connection over ``max.connections.per.ip``
(and its overrides) is closed as soon as it is accepted. ``queued.max.requests`` bounds the
requests read ahead across connections (a connection that has some queued stops reading
while the bound is reached); ``connections.max.idle.ms`` closes connections that moved no
bytes for that long and have no request in flight; accepted sockets get
``socket.send.buffer.bytes``, the listening socket ``socket.receive.buffer.bytes``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import struct
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from weir.connection_limits import (
    ConnectionQuotas,
    RequestQueue,
    apply_socket_buffers,
    is_idle,
    normalize_host,
)
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
# asyncio's own wait after a failed accept (EMFILE, ENFILE, ENOBUFS): retry a second later.
_ACCEPT_RETRY_DELAY = 1.0
# Why reading from a connection is paused (several may hold at once).
_PAUSED_FOR_BYTES = "bytes"
_PAUSED_FOR_QUEUE = "queued.max.requests"
_PAUSED_FOR_THROTTLE = "client quota throttle"


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
        self._paused_for: set[str] = set()
        # connections.max.idle.ms: when bytes last moved either way; whether a request is
        # being handled (a connection with one in flight is never idle).
        self.last_active = time.monotonic()
        self._handling = False
        # The address counted by the listener's ConnectionQuotas, until released.
        self.quota_address: str | None = None
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
        self.last_active = time.monotonic()
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
            if self._queued_bytes > _MAX_QUEUED_BYTES:
                self._pause(_PAUSED_FOR_BYTES)
            queue = self._server.request_queue
            queue.add(len(frames))
            if queue.full:
                self._pause(_PAUSED_FOR_QUEUE)
                queue.wait(self)

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.context.closed = True
        self._server.forget(self)
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
        if self._queued_bytes <= _MAX_QUEUED_BYTES // 2:
            self._resume(_PAUSED_FOR_BYTES)
        for waiter in self._server.request_queue.remove(1):
            waiter._resume(_PAUSED_FOR_QUEUE)
        if not self._frames:  # nothing read ahead: the next request may always be read
            self._server.request_queue.forget(self)
            self._resume(_PAUSED_FOR_QUEUE)
        return frame

    def _pause(self, reason: str) -> None:
        if not self._paused_for and self._transport is not None:
            self._transport.pause_reading()
        self._paused_for.add(reason)

    def _resume(self, reason: str) -> None:
        if reason not in self._paused_for:
            return
        self._paused_for.discard(reason)
        if not self._paused_for and self._transport is not None and not self.context.closed:
            self._transport.resume_reading()

    def release_queued(self) -> None:
        """Closing: the frames still queued leave the broker's request queue."""
        queue = self._server.request_queue
        queue.forget(self)
        for waiter in queue.remove(len(self._frames)):
            waiter._resume(_PAUSED_FOR_QUEUE)
        self._frames.clear()

    @property
    def busy(self) -> bool:
        """A request is being handled (a parked Fetch, too) or waits behind one."""
        return self._handling or bool(self._frames)

    def idle(self, now: float, max_idle_s: float) -> bool:
        """connections.max.idle.ms: no bytes moved for that long, nothing in flight."""
        return is_idle(last_active=self.last_active, now=now, max_idle_s=max_idle_s, busy=self.busy)

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
        self._server.forget(self)
        transport.close()

    async def _serve(self) -> None:
        try:
            while True:
                frame = await self._next_frame()
                if frame is None:
                    return
                self._handling = True
                keep = await self._handle(frame)
                self._handling = False
                self.last_active = time.monotonic()
                if not keep:
                    self.close()
                    return
                if self.context.throttle_ms > 0:
                    await self._throttle()
                elif self._frames:
                    # Pipelined requests take turns with other connections: a handler that
                    # completes at once never suspends, so without this the task would handle
                    # every frame read ahead (up to _MAX_QUEUED_BYTES) before any other
                    # connection got one, and a flooding client would starve the rest.
                    await asyncio.sleep(0)
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
        self._pause(_PAUSED_FOR_THROTTLE)
        try:
            await asyncio.sleep(delay_ms / 1000)
        finally:
            self._resume(_PAUSED_FOR_THROTTLE)

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
    # Connection limits, shared by the broker's listeners (weir.connection_limits).
    quotas: ConnectionQuotas = field(default_factory=ConnectionQuotas)
    request_queue: RequestQueue[KafkaConnection] = field(default_factory=RequestQueue)
    # socket.send.buffer.bytes / socket.receive.buffer.bytes (-1: the OS default).
    send_buffer_bytes: int = -1
    receive_buffer_bytes: int = -1
    # connections.max.idle.ms (negative: never close idle connections, as Kafka).
    max_idle_ms: int = 600_000
    connections: set[KafkaConnection] = field(init=False, default_factory=set)
    _sockets: list[socket.socket] = field(init=False, default_factory=list)
    _tasks: list[asyncio.Task[None]] = field(init=False, default_factory=list)
    _slot_freed: asyncio.Event = field(init=False, default_factory=asyncio.Event)

    @property
    def sasl(self) -> bool:
        """SASL_PLAINTEXT / SASL_SSL: connections must authenticate first."""
        return self.security_protocol.startswith("SASL_")

    async def bind(self, host: str, port: int) -> tuple[str, int]:
        """Bind the listening socket(s) without accepting yet; the bound (host, port)."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
        # As loop.create_server binds (one socket per address), but accepted by our own
        # loop, which can wait at max.connections.
        seen: set[tuple[int, Any]] = set()
        for family, type_, proto, _, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, type_, proto)
            self._sockets.append(sock)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                # Before listen(), as Kafka: accepted sockets inherit it and TCP's window
                # scale is chosen from it.
                apply_socket_buffers(sock, send=-1, receive=self.receive_buffer_bytes)
                sock.bind(address)
                sock.listen(1024)
                sock.setblocking(False)
            except OSError as exc:
                self._close_sockets()
                message = f"error while attempting to bind on address {address!r}: "
                raise OSError(exc.errno, message + (exc.strerror or str(exc)).lower()) from None
        sockname = self._sockets[0].getsockname()
        return sockname[0], sockname[1]

    async def start_serving(self) -> None:
        assert self._sockets
        self.quotas.subscribe(self._slot_freed.set)
        for sock in self._sockets:
            self._tasks.append(asyncio.create_task(self._accept_loop(sock)))
        if self.max_idle_ms >= 0 or self.quotas.protected_listener is not None:
            self._tasks.append(asyncio.create_task(self._watch_connections()))

    async def stop(self) -> None:
        self.quotas.unsubscribe(self._slot_freed.set)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._close_sockets()
        for connection in list(self.connections):
            connection.close()

    def _close_sockets(self) -> None:
        for sock in self._sockets:
            sock.close()
        self._sockets.clear()

    # connection limits -----------------------------------------------------------------
    async def _accept_loop(self, listening: socket.socket) -> None:
        """Accept while a slot is free (max.connections); admit or refuse (per ip)."""
        loop = asyncio.get_running_loop()
        while True:
            if not self.quotas.slot_available(self.name):
                log.info(
                    "listener %s: at its connection limit, accepting when one closes", self.name
                )
                while not self.quotas.slot_available(self.name):
                    self._slot_freed.clear()
                    await self._slot_freed.wait()
            try:
                sock, address = await loop.sock_accept(listening)
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                continue
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS: wait and retry, as asyncio does
                log.error("listener %s: accept failed (%s); retrying", self.name, exc)
                await asyncio.sleep(_ACCEPT_RETRY_DELAY)
                continue
            await self._admit(sock, str(address[0]))

    async def _admit(self, sock: socket.socket, host: str) -> None:
        """Count the accepted socket against the per-ip limit and serve it, or close it."""
        refused = self.quotas.admit(self.name, host)
        if refused is not None:
            limit = self.quotas.limits.ip_limit(normalize_host(host))
            log.info(
                "Rejected connection from %s, address already has the configured maximum "
                "of %d connections.",
                host,
                limit,
            )
            if self.metrics is not None:
                self.metrics.connection_refused(refused)
            sock.close()
            return
        connection = KafkaConnection(self)
        connection.quota_address = host
        try:
            apply_socket_buffers(sock, send=self.send_buffer_bytes, receive=-1)
            sock.setblocking(False)
            await asyncio.get_running_loop().connect_accepted_socket(lambda: connection, sock)
        except OSError as exc:  # the peer left already
            log.debug("listener %s: dropping a connection from %s: %s", self.name, host, exc)
            self.forget(connection)
            sock.close()

    def forget(self, connection: KafkaConnection) -> None:
        """A connection closed: it leaves the listener, its quota slot and the queue."""
        self.connections.discard(connection)
        connection.release_queued()
        address, connection.quota_address = connection.quota_address, None
        if address is not None:
            self.quotas.release(self.name, address)

    async def _watch_connections(self) -> None:
        """connections.max.idle.ms, and the excess left by the protected listener."""
        max_idle_s = self.max_idle_ms / 1000
        # A tenth of the idle time (at most a second): closes within 10 % of the limit.
        interval = min(1.0, max_idle_s / 10) if self.max_idle_ms >= 0 else 1.0
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            if self.max_idle_ms >= 0:
                for connection in list(self.connections):
                    if connection.idle(now, max_idle_s):
                        log.info(
                            "closing %s: idle for connections.max.idle.ms (%d ms)",
                            connection._peer(),
                            self.max_idle_ms,
                        )
                        if self.metrics is not None:
                            self.metrics.connections_closed_idle += 1
                        connection.close()
            if self.quotas.over_limit(self.name) and self.connections:
                # Kafka's closeExcessConnections: the least recently active one goes.
                victim = min(self.connections, key=lambda c: (c.busy, c.last_active))
                log.info("closing %s: over max.connections", victim._peer())
                if self.metrics is not None:
                    self.metrics.connection_refused("max_connections")
                victim.close()

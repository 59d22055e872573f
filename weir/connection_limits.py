"""Connection limits of a broker: Kafka's ``ConnectionQuotas`` and the request-queue bound.

Theory of operation
-------------------
Pure bookkeeping; the listener (``weir.server``) does the I/O and asks this module what to do.

**Connection counts** (``ConnectionQuotas``), shared by every listener of a broker, as Kafka's
``ConnectionQuotas`` is:

* ``max.connections`` (dynamic, cluster-wide or per broker) caps the broker's connections
  across all listeners; ``listener.name.<listener>.max.connections`` caps one listener. At
  either limit the *acceptor waits*: a listener accepts nothing until a connection closes
  (or a config change raises the limit); new clients wait in the kernel's accept backlog,
  exactly as Kafka blocks its Acceptor thread. Clients already connected are served as
  before -- the accept loop is the only thing that waits. When the broker has more than one
  listener, the inter-broker listener is *protected*: it is not held back by
  ``max.connections`` (so replication and the controller keep working under a client
  flood), and while its connections push the total over the limit, the other listeners
  close their least recently active idle connection, one at a time, as Kafka's Processors
  do (``closeExcessConnections``).
* ``max.connections.per.ip`` with ``max.connections.per.ip.overrides`` (``host:count,...``;
  a host name stands for every address it resolves to) caps the connections from one
  address. Over it the new connection is accepted and closed at once, as Kafka does
  (``TooManyConnectionsException``): the client sees a disconnect and retries after its
  reconnect backoff.

**Request queue** (``RequestQueue``): ``queued.max.requests`` bounds the requests read from
sockets and not yet being handled. Kafka's network threads put each request into a shared
queue that handler threads drain, and block (stop reading sockets) when it is full. Weir
has no handler pool: each connection's task handles its own requests one at a time, so a
request waits in a queue only when it was read *ahead*, behind another request of the same
connection (pipelining clients: librdkafka keeps several Produce requests in flight). The
bound is therefore broker-wide on read-ahead requests: while the total queued reaches
``queued.max.requests``, a connection that has requests queued stops reading its socket; it
reads again when the total falls below the bound or its own queue empties. A connection
with nothing queued always gets its next request read, so one client's pipeline never
starves another client, a follower's Fetch or a heartbeat.

**Idle connections** (``idle_deadline``): ``connections.max.idle.ms`` closes a connection that
has neither read nor written anything for that long, but never one with a request in
flight or queued (a parked Fetch, an ``acks=all`` Produce waiting for the ISR).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar

__all__ = [
    "PER_IP",
    "ConnectionLimits",
    "ConnectionQuotas",
    "CurrentLimits",
    "RequestQueue",
    "apply_socket_buffers",
    "is_idle",
    "normalize_host",
    "parse_ip_overrides",
]

log = logging.getLogger("weir.connection_limits")

W = TypeVar("W")

INT_MAX = 2**31 - 1
# Why a connection was refused (the BrokerMetrics counter's label).
PER_IP = "per_ip"
# Kafka's Selectable.USE_DEFAULT_BUFFER_SIZE: leave the OS default.
USE_DEFAULT_BUFFER_SIZE = -1


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count,host:count`` → ``{host: count}``.

    Kafka's ``Csv.parseCsvMap``: entries split on commas, each at its *last* colon (so an
    IPv6 address keeps its colons), both sides trimmed; each count a non-negative int.
    Raises ValueError naming the bad entry.
    """
    result: dict[str, int] = {}
    if not text.strip():
        return result
    for entry in text.split(","):
        host, sep, count = entry.strip().rpartition(":")
        host, count = host.strip(), count.strip()
        if not sep or not host or not count.isdigit() or int(count) > INT_MAX:
            raise ValueError(f"expected host:count, got {entry.strip()!r}")
        result[host] = int(count)
    return result


def normalize_host(host: str) -> str:
    """The address as ConnectionQuotas keys it: an IPv4-mapped IPv6 peer (a dual-stack
    listener) counts as its IPv4 address, IPv6 in compressed form; names are kept."""
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _resolve(host: str) -> set[str]:
    """The addresses an override's host stands for (Kafka: ``InetAddress.getByName``)."""
    normalized = normalize_host(host)
    if normalized != host or _is_address(host):
        return {normalized}
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        log.warning("max.connections.per.ip.overrides: cannot resolve %s: %s", host, exc)
        return set()
    return {normalize_host(str(info[4][0])) for info in infos}


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """The limits in force (Kafka's defaults: no limit)."""

    max_connections: int = INT_MAX
    per_ip: int = INT_MAX
    # address → its own per-ip limit (host names already resolved).
    per_ip_overrides: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    # listener name → listener.name.<listener>.max.connections
    per_listener: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_config(
        cls,
        config: Any,
        *,
        listeners: tuple[str, ...] = (),
        resolve: Callable[[str], set[str]] = _resolve,
    ) -> ConnectionLimits:
        """The limits of a ``BrokerConfig`` (values already validated by weir.config);
        ``listeners`` are the names whose ``listener.name.<name>.max.connections`` apply."""
        overrides: dict[str, int] = {}
        text = config.get("max.connections.per.ip.overrides") or ""
        for host, count in parse_ip_overrides(text).items():
            for address in resolve(host):
                overrides[address] = count
        per_listener = {}
        for name in listeners:
            raw = config.raw(f"listener.name.{name.lower()}.max.connections")
            if raw is not None:
                per_listener[name] = int(raw)
        return cls(
            max_connections=int(config.get("max.connections")),
            per_ip=int(config.get("max.connections.per.ip")),
            per_ip_overrides=MappingProxyType(overrides),
            per_listener=MappingProxyType(per_listener),
        )

    def ip_limit(self, address: str) -> int:
        return self.per_ip_overrides.get(address, self.per_ip)


class CurrentLimits:
    """The ``ConnectionLimits`` of the broker's current config, rebuilt only when the config
    object changes (``BrokerConfig`` is immutable: a dynamic change is a new object), so a host
    name in the overrides is resolved once per change rather than once per connection."""

    __slots__ = ("_config", "_limits", "_listeners", "_seen")

    def __init__(self, config: Callable[[], Any], *, listeners: tuple[str, ...] = ()) -> None:
        self._config = config
        self._listeners = listeners
        self._seen: Any = None
        self._limits = ConnectionLimits()

    def __call__(self) -> ConnectionLimits:
        config = self._config()
        if config is not self._seen:
            self._limits = ConnectionLimits.from_config(config, listeners=self._listeners)
            self._seen = config
        return self._limits


class ConnectionQuotas:
    """Connection counts per address, per listener and in total, against ``ConnectionLimits``.

    ``limits`` is called on each decision, so dynamic configs apply to the next connection;
    ``protected_listener`` is the inter-broker listener when the broker has several
    listeners (Kafka's ``protectedListener``), else None. ``on_change`` callbacks run when a
    slot may have opened (a connection closed, the limits changed): blocked acceptors wait
    on them.
    """

    def __init__(
        self,
        limits: Callable[[], ConnectionLimits] = ConnectionLimits,
        *,
        protected_listener: str | None = None,
    ) -> None:
        self._limits = limits
        self.protected_listener = protected_listener
        self.total = 0
        self.by_listener: dict[str, int] = {}
        self.by_address: dict[str, int] = {}
        self._on_change: list[Callable[[], None]] = []

    @property
    def limits(self) -> ConnectionLimits:
        return self._limits()

    def subscribe(self, callback: Callable[[], None]) -> None:
        self._on_change.append(callback)

    def unsubscribe(self, callback: Callable[[], None]) -> None:
        if callback in self._on_change:
            self._on_change.remove(callback)

    def changed(self) -> None:
        """A slot may have opened: the limits changed or a connection closed."""
        for callback in list(self._on_change):
            callback()

    def slot_available(self, listener: str) -> bool:
        """May ``listener`` accept another connection now (Kafka's
        ``connectionSlotAvailable``)? False means its acceptor waits."""
        limits = self.limits
        if self.by_listener.get(listener, 0) >= limits.per_listener.get(listener, INT_MAX):
            return False
        if listener == self.protected_listener:
            return True
        return self.total < limits.max_connections

    def admit(self, listener: str, address: str) -> str | None:
        """Count a new connection from ``address``: None when it may stay, or the reason
        (``PER_IP``) it must be closed at once; a refused connection is not counted."""
        address = normalize_host(address)
        count = self.by_address.get(address, 0)
        if count >= self.limits.ip_limit(address):
            return PER_IP
        self.by_address[address] = count + 1
        self.by_listener[listener] = self.by_listener.get(listener, 0) + 1
        self.total += 1
        return None

    def release(self, listener: str, address: str) -> None:
        """An admitted connection closed."""
        address = normalize_host(address)
        left = self.by_address.get(address, 0) - 1
        if left > 0:
            self.by_address[address] = left
        else:
            self.by_address.pop(address, None)
        self.by_listener[listener] = max(0, self.by_listener.get(listener, 0) - 1)
        self.total = max(0, self.total - 1)
        self.changed()

    def over_limit(self, listener: str) -> bool:
        """Must ``listener`` shed a connection? True while the protected listener holds
        the broker above ``max.connections`` (Kafka's ``maxConnectionsExceeded``)."""
        return listener != self.protected_listener and self.total > self.limits.max_connections


class RequestQueue(Generic[W]):
    """``queued.max.requests``: the requests read ahead and not yet handled, broker-wide.

    A connection ``add``s the frames it queues and ``remove``s each one it starts to handle
    (or drops, closing). While ``full``, a connection with frames queued stops reading and
    ``wait``s; ``remove`` returns the waiters to wake once the count falls below the bound.
    """

    __slots__ = ("_waiting", "capacity", "count")

    def __init__(self, capacity: int = 500) -> None:
        self.capacity = capacity
        self.count = 0
        self._waiting: dict[W, None] = {}  # insertion-ordered: woken first come, first served

    @property
    def full(self) -> bool:
        return self.count >= self.capacity

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def add(self, frames: int) -> None:
        self.count += frames

    def wait(self, waiter: W) -> None:
        self._waiting[waiter] = None

    def forget(self, waiter: W) -> None:
        self._waiting.pop(waiter, None)

    def remove(self, frames: int = 1) -> Sequence[W]:
        """Frames left the queue; the waiters to wake when it is no longer full."""
        self.count = max(0, self.count - frames)
        if self.full or not self._waiting:
            return ()  # the hot path: once per request, no allocation
        woken = list(self._waiting)
        self._waiting.clear()
        return woken


def is_idle(*, last_active: float, now: float, max_idle_s: float, busy: bool) -> bool:
    """``connections.max.idle.ms``: no bytes either way for that long, and no request in
    flight or queued (a parked Fetch is busy, never idle)."""
    return not busy and now - last_active >= max_idle_s


def apply_socket_buffers(sock: socket.socket, *, send: int, receive: int) -> None:
    """``socket.send.buffer.bytes`` / ``socket.receive.buffer.bytes`` (-1: the OS default).

    Kafka sets SO_RCVBUF on the listening socket, before ``listen``, so that TCP's window
    scale of accepted connections can use it, and SO_SNDBUF on each accepted socket; the
    listener calls this with the values for each.
    """
    if send != USE_DEFAULT_BUFFER_SIZE:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send)
    if receive != USE_DEFAULT_BUFFER_SIZE:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive)

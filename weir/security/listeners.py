"""Listeners: Kafka's ``listeners`` / ``advertised.listeners`` / ``listener.security.protocol.map``.

Theory of operation
-------------------
A listener is a name (``PLAINTEXT``, ``SASL_PLAINTEXT``, ``CLIENT`` ...), a security protocol
(from the protocol map; a name that is itself a protocol maps to itself) and a bind address.
``runbroker --listen`` may repeat with an optional ``NAME://`` prefix (no prefix = PLAINTEXT);
the ``listeners`` config adds the listeners it names that ``--listen`` did not. The first
listener is the broker's primary one (any protocol): its endpoint is the registration's
``host``/``port``. Every listener's advertised endpoint is registered (``endpoints``, see
``weir.metadata.registration``). ``advertised.listeners`` overrides what clients are told
per listener name (``--advertise`` still sets the primary's).

Brokers reach each other on the listener named by ``inter.broker.listener.name`` (default: the
primary; ``inter_broker_listener``): replica fetchers, requests to the controller and ISR
changes use the other brokers' registered endpoints for that listener, secured as its
protocol says (``weir.security.client``).

Kafka's rule for Metadata is to answer with the endpoints of the listener the request came in
on. ``endpoint_rewriter`` does that for every listener: in Metadata, FindCoordinator and
DescribeCluster responses each broker is named by its registered endpoint for *that*
listener. A broker without that listener is left out of the broker lists (as Kafka does); a
coordinator without it is COORDINATOR_NOT_AVAILABLE, so the client retries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SUPPORTED_PROTOCOLS",
    "ListenerError",
    "ListenerSpec",
    "endpoint_rewriter",
    "inter_broker_listener",
    "parse_host_port",
    "parse_listener",
    "resolve_listeners",
]

SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class ListenerError(ValueError):
    """A listener flag or config is malformed."""


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    name: str
    protocol: str
    host: str
    port: int
    advertised: tuple[str, int] | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` → (host, port), brackets of an IPv6 host removed; an empty host (all
    interfaces, as in ``PLAINTEXT://:9092``) is allowed. ListenerError names ``what``."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise ListenerError(f"{what} expects HOST:PORT, got {text!r}")
    try:
        port = int(port_text)
    except ValueError:
        raise ListenerError(f"{what} expects a numeric port, got {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise ListenerError(f"{what} port {port} is outside 0..65535")
    return host.strip("[]"), port


def parse_listener(text: str, what: str = "--listen") -> tuple[str, str, int]:
    """``[NAME://]HOST:PORT`` → (NAME, host, port); no prefix means PLAINTEXT."""
    name, sep, rest = text.strip().partition("://")
    if not sep:
        name, rest = "PLAINTEXT", text.strip()
    name = name.upper()
    if not name or not all(c.isalnum() or c in "_-" for c in name):
        raise ListenerError(f"{what}: invalid listener name in {text!r}")
    host, port = parse_host_port(rest, what)
    return name, host, port


def _protocol_map(text: str | None) -> dict[str, str]:
    result = {p: p for p in SUPPORTED_PROTOCOLS}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.strip().partition(":")
        if not sep or protocol.upper() not in SUPPORTED_PROTOCOLS:
            raise ListenerError(f"listener.security.protocol.map: invalid entry {item!r}")
        result[name.upper()] = protocol.upper()
    return result


def resolve_listeners(
    listen: list[str],
    *,
    advertise: tuple[str, int] | None = None,
    configs: dict[str, str] | None = None,
) -> list[ListenerSpec]:
    """All listeners of a broker, primary first, from the flags and Kafka's configs."""
    configs = configs or {}
    protocols = _protocol_map(configs.get("listener.security.protocol.map"))
    entries: list[tuple[str, str, int]] = [parse_listener(v) for v in listen]
    for item in (configs.get("listeners") or "").split(","):
        if not item.strip():
            continue
        name, host, port = parse_listener(item, "listeners")
        same = [e for e in entries if e[0] == name]
        if same and same[0] != (name, host, port):
            raise ListenerError(
                f"listener {name} is {same[0][1]}:{same[0][2]} in --listen but "
                f"{host}:{port} in listeners"
            )
        if not same:
            entries.append((name, host, port))
    advertised: dict[str, tuple[str, int]] = {}
    for item in (configs.get("advertised.listeners") or "").split(","):
        if item.strip():
            name, host, port = parse_listener(item, "advertised.listeners")
            advertised[name] = (host, port)
    if not entries:
        raise ListenerError("no listener: give --listen HOST:PORT")
    specs: list[ListenerSpec] = []
    for index, (name, host, port) in enumerate(entries):
        if any(s.name == name for s in specs):
            raise ListenerError(f"listener {name} is given twice")
        protocol = protocols.get(name)
        if protocol is None:
            raise ListenerError(
                f"listener {name} has no security protocol in listener.security.protocol.map"
            )
        adv = advertise if index == 0 and advertise else advertised.get(name)
        specs.append(ListenerSpec(name, protocol, host, port, adv))
    return specs


def inter_broker_listener(specs: list[ListenerSpec], configs: Mapping[str, str]) -> ListenerSpec:
    """The listener named by ``inter.broker.listener.name`` (default: the primary)."""
    name = (configs.get("inter.broker.listener.name") or "").strip().upper()
    if not name:
        return specs[0]
    for spec in specs:
        if spec.name == name:
            return spec
    raise ListenerError(
        f"inter.broker.listener.name={name} is not one of the listeners "
        f"({', '.join(s.name for s in specs)})"
    )


_METADATA, _FIND_COORDINATOR, _DESCRIBE_CLUSTER = 3, 10, 60
_ENDPOINT_APIS = frozenset({_METADATA, _FIND_COORDINATOR, _DESCRIBE_CLUSTER})
_COORDINATOR_NOT_AVAILABLE = 15

Endpoints = Mapping[int, tuple[str, int]]


def _node(entity: Any) -> int | None:
    return getattr(entity, "node_id", getattr(entity, "broker_id", None))


def _renamed(entity: Any, endpoints: Endpoints) -> Any | None:
    """``entity`` with its broker's endpoint on this listener; None if it has none."""
    endpoint = endpoints.get(_node(entity))  # type: ignore[arg-type]
    if endpoint is None:
        return None
    host, port = endpoint
    return dataclasses.replace(entity, host=host, port=port)


def _coordinator(entity: Any, endpoints: Endpoints) -> Any:
    """A FindCoordinator answer (v0-3 body or v4 ``Coordinator``) on this listener."""
    if getattr(entity, "error_code", 0) != 0 or _node(entity) in (None, -1):
        return entity
    renamed = _renamed(entity, endpoints)
    if renamed is not None:
        return renamed
    return dataclasses.replace(
        entity,
        node_id=-1,
        host="",
        port=-1,
        error_code=_COORDINATOR_NOT_AVAILABLE,
        error_message="The coordinator is not available on this listener.",
    )


def endpoint_rewriter(
    listener: str, endpoints: Callable[[], Endpoints]
) -> Callable[[int, Any], Any]:
    """A response filter naming every broker by its endpoint on ``listener``.

    ``endpoints()`` maps broker id → its advertised endpoint on ``listener`` (brokers
    without it are absent); it is called once per response, so it reads the newest
    metadata.
    """

    def rewrite(api_key: int, body: Any) -> Any:
        if api_key not in _ENDPOINT_APIS or not dataclasses.is_dataclass(body):
            return body
        current = endpoints()
        changes: dict[str, Any] = {}
        brokers = getattr(body, "brokers", None)
        if isinstance(brokers, tuple):
            renamed = (_renamed(b, current) for b in brokers)
            changes["brokers"] = tuple(b for b in renamed if b is not None)
        coordinators = getattr(body, "coordinators", None)
        if isinstance(coordinators, tuple):
            changes["coordinators"] = tuple(_coordinator(c, current) for c in coordinators)
        body = dataclasses.replace(body, **changes) if changes else body
        if api_key == _FIND_COORDINATOR and hasattr(body, "host"):
            body = _coordinator(body, current)
        return body

    return rewrite

"""Listeners: Kafka's ``listeners`` / ``advertised.listeners`` / ``listener.security.protocol.map``.

Theory of operation
-------------------
A listener is a name (``PLAINTEXT``, ``SASL_PLAINTEXT``, ``CLIENT`` ...), a security protocol
(from the protocol map; a name that is itself a protocol maps to itself) and a bind address.
``runbroker --listen`` may repeat with an optional ``NAME://`` prefix (no prefix = PLAINTEXT);
the ``listeners`` config adds the listeners it names that ``--listen`` did not. The first
listener is the broker's primary one: it is registered in Redis and used for replication, so it
must be PLAINTEXT for now (``inter.broker.listener.name`` comes later).
``advertised.listeners`` overrides what clients are told per listener name (``--advertise``
still sets the primary's).

Kafka's rule for Metadata is to answer with the endpoints of the listener the request came in
on. ``endpoint_rewriter`` does that for this broker's own entry in Metadata, FindCoordinator
and DescribeCluster responses on a secondary listener (other brokers' secondary endpoints are
not registered yet, so they keep their primary endpoints).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SUPPORTED_PROTOCOLS",
    "ListenerError",
    "ListenerSpec",
    "endpoint_rewriter",
    "parse_listener",
    "resolve_listeners",
]

SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_KNOWN_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


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


def _endpoint(text: str, what: str) -> tuple[str, int]:
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
    host, port = _endpoint(rest, what)
    return name, host, port


def _protocol_map(text: str | None) -> dict[str, str]:
    result = {p: p for p in _KNOWN_PROTOCOLS}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, sep, protocol = item.strip().partition(":")
        if not sep or protocol.upper() not in _KNOWN_PROTOCOLS:
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
        if protocol not in SUPPORTED_PROTOCOLS:
            raise ListenerError(f"listener {name}: security protocol {protocol} is not supported")
        adv = advertise if index == 0 and advertise else advertised.get(name)
        specs.append(ListenerSpec(name, protocol, host, port, adv))
    if specs[0].protocol != "PLAINTEXT":
        raise ListenerError(
            f"the first listener ({specs[0].name}) carries replication and must be PLAINTEXT"
        )
    return specs


_ENDPOINT_APIS = frozenset({3, 10, 60})  # Metadata, FindCoordinator, DescribeCluster


def _rewrite_entity(entity: Any, broker_id: int, host: str, port: int) -> Any:
    node = getattr(entity, "node_id", getattr(entity, "broker_id", None))
    if node == broker_id and hasattr(entity, "host") and hasattr(entity, "port"):
        return dataclasses.replace(entity, host=host, port=port)
    return entity


def endpoint_rewriter(
    broker_id: int, endpoint: Callable[[], tuple[str, int]]
) -> Callable[[int, Any], Any]:
    """A response filter putting this listener's endpoint in place of the primary one."""

    def rewrite(api_key: int, body: Any) -> Any:
        if api_key not in _ENDPOINT_APIS or not dataclasses.is_dataclass(body):
            return body
        host, port = endpoint()
        changes: dict[str, Any] = {}
        for field in ("brokers", "coordinators"):
            items = getattr(body, field, None)
            if isinstance(items, tuple):
                changes[field] = tuple(_rewrite_entity(e, broker_id, host, port) for e in items)
        body = dataclasses.replace(body, **changes) if changes else body
        if api_key == 10 and hasattr(body, "host"):
            body = _rewrite_entity(body, broker_id, host, port)
        return body

    return rewrite

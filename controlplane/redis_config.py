"""How the control plane's libraries reach ``WEIR_REDIS_URL``: Channels' layer and Celery.

Weir's own clients come from :mod:`weir.metadata.redis_url`, which understands both a plain
``redis://``/``rediss://`` URL and ``redis+sentinel://[:password@]h1:26379,h2,h3/<service>[/<db>]``.
channels_redis and Celery (kombu) each spell a Sentinel deployment their own way, so this
module translates the one URL into their settings, and ``controlplane/settings.py`` stays a
list of assignments:

* channels_redis takes a ``hosts`` entry; for Sentinel a dict with ``sentinels`` and
  ``master_name`` (its ``create_pool`` builds a ``SentinelConnectionPool``). Either entry
  carries Weir's reconnection policy (``connection_options``: retry with backoff for the
  length of a failover, health checks), so the first websocket after a Redis restart or a
  failover is not dropped. The layer retries every command on a connection error, also one
  that may have been applied: its messages are live views a client gets again a second
  later, so a duplicate costs nothing.
* kombu and Celery's result backend take ``sentinel://host:port/db`` URLs joined with ``;``
  plus ``{"master_name": service}`` in ``broker_transport_options`` and
  ``result_backend_transport_options``. kombu reconnects the worker's consumer itself; its
  transport is ``controlplane.kombu_sentinel`` so a refused write right after a failover
  makes it reconnect rather than exit.

Django-free, so tests and other entry points can call it without settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from weir.metadata.redis_url import connection_options, parse_redis_url

__all__ = ["CeleryRedis", "celery_redis", "channel_layer_host"]


@dataclass(frozen=True, kw_only=True)
class CeleryRedis:
    """Celery's broker and result backend settings for one Redis URL."""

    broker_url: str
    result_backend: str
    transport_options: dict[str, Any] = field(default_factory=dict)
    # kombu's transport for broker_url: None lets the URL's scheme choose.
    broker_transport: str | None = None


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def celery_redis(url: str) -> CeleryRedis:
    """Celery's settings for ``url`` (plain: unchanged; Sentinel: kombu's spelling)."""
    target = parse_redis_url(url)
    if not target.is_sentinel:
        return CeleryRedis(broker_url=url, result_backend=url)
    # kombu and Celery pass the URL's password to the primary, not to the sentinels, as
    # the redis+sentinel:// contract means it.
    auth = f":{quote(target.password, safe='')}@" if target.password else ""
    joined = ";".join(
        f"sentinel://{auth}{_host(host)}:{port}/{target.db}" for host, port in target.sentinels
    )
    return CeleryRedis(
        broker_url=joined,
        result_backend=joined,
        transport_options={"master_name": target.service_name},
        broker_transport="controlplane.kombu_sentinel:Transport",
    )


def channel_layer_host(url: str) -> dict[str, Any]:
    """The channels_redis ``hosts`` entry for ``url``."""
    target = parse_redis_url(url)
    options = connection_options(asynchronous=True, sentinel=target.is_sentinel)
    if not target.is_sentinel:
        return {"address": url, **options}
    return {
        "sentinels": list(target.sentinels),
        "master_name": target.service_name,
        "db": target.db,
        "password": target.password,
        **options,
    }

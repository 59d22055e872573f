"""kombu's Redis Sentinel transport with Weir's Sentinel connection (``CELERY_BROKER_TRANSPORT``).

kombu reconnects the worker's consumer on connection errors but treats any other Redis error
as unrecoverable: the worker exits. Right after a Sentinel failover the new primary refuses
writes for a second or two (NOREPLICAS: ``min-replicas-to-write`` while the other replica
resynchronises), and kombu's first write on reconnecting (the mutex of ``restore_visible``)
met exactly that. :class:`weir.metadata.redis_url.SentinelConnection` reports the refusal as
a connection error, so with it kombu reconnects until the primary takes writes.
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis

from weir.metadata.redis_url import SentinelConnection

__all__ = ["Transport"]


class SentinelChannel(kombu_redis.SentinelChannel):
    connection_class = SentinelConnection


class Transport(kombu_redis.SentinelTransport):
    """``sentinel://`` URLs (see ``controlplane/redis_config.py``) with Weir's connection."""

    Channel = SentinelChannel

"""One registry per web process, over the cluster's ``_schemas`` topic.

The first request opens a :class:`~weir.registry.store.KafkaStore` with the control plane's
Kafka client settings (the brokers registered in Redis, ``WEIR_KAFKA_*`` security) and the
coordination Redis (the writers' lease); it keeps reading ``_schemas`` in the background, so
every later request answers from memory and sees other processes' writes within a second.
A cluster that cannot be reached yet is a 500 with Confluent's store error code (50001)
and is tried again on the next request.
"""

from __future__ import annotations

import atexit
import threading

from django.conf import settings

from controlplane.cluster import gateway
from controlplane.errors import ApiError
from weir.metadata.redis_url import sync_client
from weir.registry import errors
from weir.registry.service import SchemaRegistry
from weir.registry.store import KafkaStore

__all__ = ["registry", "reset_registries"]

_registries: dict[tuple[str, str], tuple[KafkaStore, SchemaRegistry]] = {}
_lock = threading.Lock()


def registry() -> SchemaRegistry:
    """The registry of the cluster the settings name, opened on first use."""
    key = (settings.WEIR_REDIS_URL, settings.WEIR_CLUSTER_ID)
    with _lock:
        found = _registries.get(key)
        if found is None:
            found = _open(*key)
            _registries[key] = found
        return found[1]


def _open(redis_url: str, cluster_id: str) -> tuple[KafkaStore, SchemaRegistry]:
    try:
        config = gateway().client_config(**{"client.id": "weir-schema-registry"})
    except ApiError as exc:
        raise errors.store_error(f"the cluster cannot be reached: {exc.message}") from None
    store = KafkaStore(config, sync_client(redis_url), cluster_id)
    try:
        store.open()
    except errors.RegistryError:
        store.close()
        raise
    except Exception as exc:  # a store that cannot start is this request's error, not a crash
        store.close()
        raise errors.store_error(f"the _schemas topic cannot be read: {exc}") from None
    return store, SchemaRegistry(store)


def reset_registries() -> None:
    """Close every store (tests switch clusters; the process exits)."""
    with _lock:
        for store, _ in _registries.values():
            store.close()
        _registries.clear()


atexit.register(reset_registries)

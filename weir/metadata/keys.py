"""The Redis key layout: every key of a cluster lives under ``weir:{cluster_id}:``.

==============================  =======  =====================================================
key (after the prefix)          type     holds
==============================  =======  =====================================================
``metadata_log``                stream   change records (``type``, ``data`` JSON, ``end`` on
                                         the last record of one atomic write)
``metadata_log_trimmed``        string   id of the newest entry trimmed from the log
``metadata_log_committed``      string   id of the newest entry known to be on a majority of
                                         a Sentinel deployment's nodes (weir.metadata.quorum)
``topics``                      hash     topic name → JSON ``{topic_id, partitions: [...]}``
``topic_ids``                   hash     topic id → topic name
``topic_collisions``            hash     name with '.' → '_' → topic name (Kafka's rule)
``configs:topic:<name>``        hash     dynamic topic config overrides
``configs:broker:<id>``         hash     dynamic per-broker config overrides
``configs:broker:``             hash     dynamic cluster-wide broker defaults
``config_resources``            set      ``topic:<name>`` / ``broker:<id>`` with overrides
``brokers``                     hash     broker id → JSON registration (last known endpoint)
``broker:<id>``                 string   live lease (JSON registration), PX TTL
``broker_epoch``                counter  source of broker epochs (INCR)
``controller``                  string   controller lease ``<broker_id>:<epoch>``, PX TTL
``controller_epoch``            counter  controller epoch; every controller write checks it
``next_producer_id``            counter  producer id allocation (INCRBY)
``incarnation``                 string   random id of this metadata store (detects a reset)
``commands:<id>``               stream   commands for broker ``<id>`` (weir.commands: group
                                         rebalances, retention, compaction)
``command_reply:<cmd>``         list     the broker's JSON answer to command ``<cmd>`` (TTL)
``scram:<mechanism>``           hash     user → JSON SCRAM credential (salt, iterations,
                                         StoredKey, ServerKey; weir.security.credentials)
``acls``                        set      ACL bindings, canonical JSON each (weir.security)
``acls_version``                counter  INCR on every ACL change; brokers poll it to reload
``client_quotas``               hash     quota entity (canonical JSON ``[[type, name|null]]``)
                                         → JSON ``{quota key: value}`` (weir.quotas)
==============================  =======  =====================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = [
    "DEFAULT_CLUSTER_ID",
    "DEFAULT_REDIS_URL",
    "KeyLayout",
    "cluster_id_from_env",
    "redis_url_from_env",
]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_CLUSTER_ID = "weir"


def redis_url_from_env() -> str:
    return os.environ.get("WEIR_REDIS_URL", DEFAULT_REDIS_URL)


def cluster_id_from_env() -> str:
    return os.environ.get("WEIR_CLUSTER_ID", DEFAULT_CLUSTER_ID)


class _Fixed:
    """A key with a fixed name under the cluster prefix, named as the attribute is:
    ``layout.topics`` is ``weir:<cluster_id>:topics``."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, layout: KeyLayout, owner: type | None = None) -> str:
        return layout.key(self._name)


@dataclass(frozen=True, slots=True)
class KeyLayout:
    """Key names of one cluster."""

    cluster_id: str

    @property
    def prefix(self) -> str:
        return f"weir:{self.cluster_id}:"

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"

    # Keys with fixed names (the table above); parameterized keys follow.
    metadata_log = _Fixed()
    topics = _Fixed()
    topic_ids = _Fixed()
    topic_collisions = _Fixed()
    config_resources = _Fixed()
    brokers = _Fixed()
    broker_epoch = _Fixed()
    controller = _Fixed()
    controller_epoch = _Fixed()
    next_producer_id = _Fixed()
    incarnation = _Fixed()
    metadata_log_trimmed = _Fixed()
    metadata_log_committed = _Fixed()
    # Set of ACL bindings (canonical JSON), see ``weir.security.acl_store``.
    acls = _Fixed()
    # Counter bumped with every ACL change.
    acls_version = _Fixed()
    # Client quotas by entity, see ``weir.quotas``.
    client_quotas = _Fixed()

    def configs(self, resource_type: str, resource_name: str) -> str:
        """``configs:topic:<name>``, ``configs:broker:<id>`` or ``configs:broker:``."""
        return self.key(f"configs:{resource_type}:{resource_name}")

    def broker_lease(self, broker_id: int) -> str:
        return self.key(f"broker:{broker_id}")

    def broker_commands(self, broker_id: int) -> str:
        """Stream of commands for one broker (``weir.commands``)."""
        return self.key(f"commands:{broker_id}")

    def command_reply(self, command_id: str) -> str:
        """List the broker pushes its answer to ``command_id`` onto (expires)."""
        return self.key(f"command_reply:{command_id}")

    def scram_credentials(self, mechanism: str) -> str:
        """Hash of SCRAM credentials for ``SCRAM-SHA-256`` / ``SCRAM-SHA-512``."""
        return self.key(f"scram:{mechanism}")

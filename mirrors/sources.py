"""Where the control plane learns about mirror flows: the MM2 properties file and live statuses.

Two sources, used together:

* ``WEIR_MIRROR_PROPERTIES`` (optional) names the same ``connect-mirror-maker.properties``
  the ``mirror-maker`` processes run. With it the control plane knows every flow, even one no
  process runs, and reaches both clusters of a flow with the file's own client settings
  (``MirrorConfig.client_config``: bootstrap servers, security, per-role overrides). The file
  is read with the mirror's own reader and validated by ``MirrorConfig.from_properties``; it is
  read again when its size or modification time changes, so editing it needs no restart. A
  file that cannot be read or does not validate is reported with the reader's message
  (``MirrorConfigError`` names the key), never raised as a 500.
* The statuses every running ``mirror-maker`` process publishes to the coordination Redis
  (``weir.mirror.status.StatusStore``, 15 s TTL), read through the gateway's Redis client.

AdminClients for the mirror's clusters are built once per (alias, client settings) and shared,
as the gateway shares its own.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
from django.conf import settings

from controlplane.cluster import gateway
from controlplane.errors import NotFound, ServiceUnavailable
from weir.mirror.config import Flow, MirrorConfig, MirrorConfigError
from weir.mirror.properties import PropertiesError, load_properties
from weir.mirror.status import FlowStatus, StatusStore

__all__ = [
    "MirrorSetup",
    "MirrorsNotConfigured",
    "admin_client",
    "configured_flow",
    "consumer",
    "mirror_setup",
    "published_statuses",
    "reset_clients",
]

SETTING = "WEIR_MIRROR_PROPERTIES"
CLIENT_ID = "weir-controlplane-mirrors"


class MirrorsNotConfigured(ServiceUnavailable):
    """The action needs the mirror's properties file: unset, unreadable or invalid."""


@dataclass(frozen=True, slots=True)
class MirrorSetup:
    """The properties file as last read: its path ("" when unset), the config or the error."""

    path: str
    config: MirrorConfig | None
    error: str | None

    def require(self) -> MirrorConfig:
        """The config; NotFound when no file is set, MirrorsNotConfigured (503) when the file
        set cannot be read or is not valid."""
        if self.config is not None:
            return self.config
        if self.error is not None:
            raise MirrorsNotConfigured(self.error)
        # Not a server fault: this control plane simply knows no flow it can reach.
        raise NotFound(
            f"{SETTING} is not set: the control plane needs the path of the mirror's "
            "connect-mirror-maker.properties to reach its clusters"
        )


_lock = threading.Lock()
_cached: tuple[tuple[str, int, int], MirrorSetup] | None = None
_admins: dict[tuple[str, tuple[tuple[str, str], ...]], AdminClient] = {}


def mirror_setup() -> MirrorSetup:
    """The mirror's configuration from ``WEIR_MIRROR_PROPERTIES`` (re-read when it changes)."""
    global _cached
    path = str(getattr(settings, SETTING, "") or "")
    if not path:
        return MirrorSetup("", None, None)
    try:
        stat = os.stat(path)
    except OSError as exc:
        return MirrorSetup(path, None, f"{SETTING}={path}: cannot read it ({exc.strerror})")
    key = (path, stat.st_mtime_ns, stat.st_size)
    with _lock:
        if _cached is not None and _cached[0] == key:
            return _cached[1]
        try:
            setup = MirrorSetup(path, MirrorConfig.from_properties(load_properties(path)), None)
        except (MirrorConfigError, PropertiesError) as exc:
            setup = MirrorSetup(path, None, f"{path}: {exc}")
        except OSError as exc:
            setup = MirrorSetup(path, None, f"{SETTING}={path}: cannot read it ({exc.strerror})")
        _cached = (key, setup)
        return setup


def configured_flow(config: MirrorConfig, source: str, target: str) -> Flow:
    """The flow ``source->target`` of the properties file; NotFound naming the clusters."""
    try:
        return config.flow(source, target)
    except KeyError:
        raise NotFound(
            f"no mirror flow {source}->{target} in {mirror_setup().path} "
            f"(clusters = {', '.join(config.clusters)})"
        ) from None


def admin_client(config: MirrorConfig, alias: str) -> AdminClient:
    """A shared AdminClient of cluster ``alias`` with the file's admin settings."""
    conf = {"client.id": CLIENT_ID, **config.client_config(alias, "admin")}
    key = (alias, tuple(sorted(conf.items())))
    with _lock:
        found = _admins.get(key)
        if found is None:
            found = _admins[key] = AdminClient(conf)
        return found


def reset_clients() -> None:
    """Drop the shared AdminClients (tests switch clusters between modules)."""
    with _lock:
        _admins.clear()


def consumer(config: MirrorConfig, alias: str, **extra: Any) -> Consumer:
    """A new assign-only Consumer of cluster ``alias`` (the caller closes it); it never
    commits, so it leaves no trace in any group."""
    return Consumer(
        {
            "client.id": CLIENT_ID,
            **config.client_config(alias, "consumer"),
            "group.id": CLIENT_ID,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            **extra,
        }
    )


def published_statuses() -> list[FlowStatus]:
    """What every live ``mirror-maker`` process last published, sorted by flow and process."""
    gw = gateway()
    return StatusStore(gw.redis, gw.cluster_id).read_all()

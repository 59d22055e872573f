"""The controller lease: which broker is the controller, and for which epoch.

Every broker competes for one expiring lease in Redis (``MetadataStore.acquire_controller``);
the holder renews it every heartbeat and is the controller while it holds it. The lease lives
as long as a broker lease (``broker.session.timeout.ms``), so a dead controller's broker and
its controllership expire together. When Redis is away (a Sentinel failover takes seconds)
the holder keeps its epoch for as long as the lease it last renewed would run, and renews it
on the new primary when one answers: a failover then costs no controller change. Keeping it
is safe because every controller write is fenced by the epoch in Redis: if another broker
took the lease meanwhile, the first write or renewal fails and the lease is given up. Once
the lease it last renewed has run out, it gives the lease up.

While it holds the lease, the controller also trims metadata log history older than
``metadata.max.retention.ms`` (once a minute).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from weir.config import BrokerConfig
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.store import MetadataStore

__all__ = ["METADATA_TRIM_INTERVAL_S", "ControllerLease"]

log = logging.getLogger("weir.broker")

# How often the controller trims metadata log history (metadata.max.retention.ms).
METADATA_TRIM_INTERVAL_S = 60.0


@dataclass(eq=False, repr=False, kw_only=True)
class ControllerLease:
    """Takes, renews and resigns the controller lease; ``epoch`` is None when not held."""

    store: MetadataStore
    broker_id: int
    config: Callable[[], BrokerConfig]
    monotonic: Callable[[], float]
    wall_ms: Callable[[], int]
    epoch: int | None = field(init=False, default=None)
    _renewed_at: float = field(init=False, default=0.0)

    @property
    def is_controller(self) -> bool:
        return self.epoch is not None

    def _lease_ms(self) -> int:
        return int(self.config().get("broker.session.timeout.ms"))

    async def try_acquire(self) -> None:
        """Take the lease if it is free, or renew the one held."""
        try:
            if self.epoch is None:
                self.epoch = await self.store.acquire_controller(self.broker_id, self._lease_ms())
                if self.epoch is not None:
                    self._renewed_at = self.monotonic()
                    log.info("broker %d is the controller (epoch %d)", self.broker_id, self.epoch)
            elif await self.store.renew_controller(self.broker_id, self.epoch, self._lease_ms()):
                self._renewed_at = self.monotonic()
            else:
                log.warning("broker %d lost the controller lease", self.broker_id)
                self.epoch = None
        except Exception as exc:  # Redis away: keep serving, try again
            held = self.epoch is not None
            if held and self.monotonic() - self._renewed_at < self._lease_ms() / 1000:
                log.warning("controller lease renewal failed (still held): %s", exc)
                return
            log.warning("controller lease check failed: %s", exc)
            if held:
                log.warning("broker %d gave the controller lease up", self.broker_id)
            self.epoch = None

    async def run(self) -> None:
        """Renew (or compete for) the lease every heartbeat; trim while controller."""
        next_trim = 0.0
        while True:
            await asyncio.sleep(int(self.config().get("broker.heartbeat.interval.ms")) / 1000)
            await self.try_acquire()
            if self.epoch is not None and self.monotonic() >= next_trim:
                next_trim = self.monotonic() + METADATA_TRIM_INTERVAL_S
                await self._trim_metadata_log()

    async def resign(self) -> None:
        """Give the lease up (shutdown), so another broker takes over without waiting."""
        if self.epoch is not None:
            await self.store.resign_controller(self.broker_id, self.epoch)

    async def _trim_metadata_log(self) -> None:
        """Drop metadata history older than ``metadata.max.retention.ms``."""
        retention = int(self.config().get("metadata.max.retention.ms"))
        try:
            removed = await self.store.trim_log(older_than_ms=self.wall_ms() - retention)
        except MetadataUnavailableError as exc:
            log.warning("metadata log trim failed: %s", exc)
            return
        if removed:
            log.info("trimmed %d metadata log entries older than %d ms", removed, retention)

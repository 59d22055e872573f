"""The transaction coordinator's settings, with Kafka's names and defaults.

Theory of operation
-------------------
As for groups (``weir.coordinator.config``): the pure coordinator never reads the broker
config; the asyncio layer builds a ``TransactionConfig`` (``from_broker_config``) and passes
it in, so tests can shrink every timeout. Each field names the Kafka setting it mirrors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from weir.transactions.state import DEFAULT_TXN_PARTITIONS

__all__ = ["TransactionConfig"]


class _ConfigSource(Protocol):
    def get(self, name: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """Transaction timeouts, id expiry and the ``__transaction_state`` record version."""

    max_timeout_ms: int = 900_000
    """``transaction.max.timeout.ms``: the largest ``transaction.timeout.ms`` a producer may
    ask for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it)."""
    id_expiration_ms: int = 604_800_000
    """``transactional.id.expiration.ms``: an id with no transaction that has not been
    updated for this long is forgotten (a tombstone)."""
    abort_timed_out_interval_ms: int = 10_000
    """``transaction.abort.timed.out.transaction.cleanup.interval.ms``"""
    remove_expired_interval_ms: int = 3_600_000
    """``transaction.remove.expired.transaction.cleanup.interval.ms``"""
    num_partitions: int = DEFAULT_TXN_PARTITIONS
    """``transaction.state.log.num.partitions``"""
    value_version: int = 1
    """The ``TransactionLogValue`` version written: 1 as Kafka 4.x (``transaction.version``
    1+), 0 as Kafka 3.x."""

    @classmethod
    def from_broker_config(cls, config: _ConfigSource) -> TransactionConfig:
        """Read the ``transaction*`` settings of a ``weir.config.BrokerConfig``."""
        return cls(
            max_timeout_ms=int(config.get("transaction.max.timeout.ms")),
            id_expiration_ms=int(config.get("transactional.id.expiration.ms")),
            abort_timed_out_interval_ms=int(
                config.get("transaction.abort.timed.out.transaction.cleanup.interval.ms")
            ),
            remove_expired_interval_ms=int(
                config.get("transaction.remove.expired.transaction.cleanup.interval.ms")
            ),
            num_partitions=int(config.get("transaction.state.log.num.partitions")),
        )

"""Values the transaction coordinator returns: replies, parked-request markers and effects.

Theory of operation
-------------------
Like the group coordinator (``weir.coordinator.results``), every operation answers with
values, never callbacks or futures. A request's ``Outcome`` holds its ``reply``, either the
response itself or ``Pending(ticket)`` when it must wait for a write, plus the ``effects``
the call caused, which the asyncio layer carries out:

* ``WriteTxn``: append ``record`` to the shard's ``__transaction_state`` partition with
  ``acks=all``, wait until the high watermark passes it, then call
  ``TransactionShard.persisted(token, error=..., now_ms=...)``. Until then the transactional
  id has a pending state and every other request for it answers CONCURRENT_TRANSACTIONS.
  ``retry`` says the same write failed before: wait a backoff first.
* ``SendMarkers``: write a COMMIT or ABORT marker (WriteTxnMarkers) for ``producer_id`` /
  ``producer_epoch`` with ``coordinator_epoch`` on every partition in ``partitions``, each to
  its leader, then report every partition's error with ``TransactionShard.markers_written``.
  ``retry`` again asks for a backoff.
* ``Reply``: the answer of a parked request, matched by ticket.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

from weir.transactions.records import TransactionRecord
from weir.transactions.state import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TopicPartition

__all__ = [
    "Effect",
    "InitProducerIdResult",
    "Outcome",
    "Pending",
    "Reply",
    "SendMarkers",
    "TransactionDescription",
    "TransactionListing",
    "WriteTxn",
]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    """An InitProducerId response: the producer id and epoch, or an error with -1/-1."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class Pending:
    """The request waits for a write; its answer comes later as a ``Reply`` with this ticket."""

    ticket: int


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer of a parked request."""

    ticket: int
    response: InitProducerIdResult | ErrorCode


@dataclass(frozen=True, slots=True)
class WriteTxn:
    """Append ``record`` acks=all, then call ``persisted(token, ...)``."""

    token: int
    record: TransactionRecord
    retry: bool = False


@dataclass(frozen=True, slots=True)
class SendMarkers:
    """Write transaction markers to ``partitions``, then call ``markers_written``."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartition]
    retry: bool = False


Effect = WriteTxn | SendMarkers | Reply


@dataclass(frozen=True, slots=True)
class Outcome(Generic[R]):
    """A request's own answer plus everything else the request caused."""

    reply: R | Pending
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """One transactional id as DescribeTransactions shows it."""

    transactional_id: str
    error: ErrorCode
    state: str = ""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    timeout_ms: int = 0
    start_timestamp_ms: int = -1
    partitions: tuple[TopicPartition, ...] = ()


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One entry of a ListTransactions response."""

    transactional_id: str
    producer_id: int
    state: str

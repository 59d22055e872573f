"""A transactional id's state: Kafka's eight transaction states, their table, the metadata.

Theory of operation
-------------------
Kafka's ``TransactionState``: each state has the id written in ``__transaction_state``
(``TransactionLogValue.TransactionStatus``), the name DescribeTransactions and
ListTransactions show, and the states it may be entered from. ``check_transition`` refuses
any other move: that is a coordinator bug, never a client's fault, so it raises
``InvalidTransition`` (an ``AssertionError`` kind of failure, not an ``ErrorCode``).

::

    Empty ──────────── AddPartitionsToTxn / AddOffsetsToTxn ────────────▶ Ongoing
    CompleteCommit ◀── markers ── PrepareCommit ◀── EndTxn(commit) ──────────┤
    CompleteAbort  ◀── markers ── PrepareAbort  ◀── EndTxn(abort) ───────────┤
                                       ▲                                     │ InitProducerId,
                                       └──── PrepareEpochFence (epoch + 1) ◀─┘ timeout
    Empty / CompleteCommit / CompleteAbort ── InitProducerId ──▶ Empty (epoch + 1)
                                           ── AddPartitionsToTxn ──▶ Ongoing
                                           ── transactional.id.expiration.ms ──▶ Dead

``PrepareEpochFence`` is never written: it is the pending state of an InitProducerId that
found an Ongoing transaction, and turns straight into PrepareAbort with the bumped epoch.
Kafka's table also lets Empty and Complete* enter PrepareAbort, for transactions version 2
(KIP-890 part 2: EndTxn v5 bumps the epoch on every transaction); Weir speaks version 1
(EndTxn v0-v4), whose operations never take those edges.

``TransactionMetadata`` is one transactional id's row, Kafka's ``TransactionMetadata``:
what the last acknowledged record says, plus ``pending_state`` (a transition whose record is
being written: nothing else may start until it is acknowledged or fails) and the in-memory
``last_producer_epoch`` and ``has_failed_epoch_fence`` Kafka does not persist.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from types import MappingProxyType

from weir.coordinator.records import partition_for as _java_partition_for

__all__ = [
    "DEFAULT_TXN_PARTITIONS",
    "MAX_PRODUCER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "VALID_PREVIOUS_STATES",
    "InvalidTransition",
    "TopicPartition",
    "TransactionMetadata",
    "TransactionState",
    "check_transition",
    "is_epoch_exhausted",
    "partition_for",
]

DEFAULT_TXN_PARTITIONS = 50
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 0x7FFF  # Short.MAX_VALUE

TopicPartition = tuple[str, int]
"""(topic, partition)"""


class TransactionState(enum.Enum):
    """A transaction's state; the value is the id ``__transaction_state`` stores."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions show (``PrepareCommit``)."""
        return _NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        """May ``transactional.id.expiration.ms`` remove an id resting in this state?"""
        return self in _EXPIRABLE

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState | None:
        return _BY_NAME.get(name)


_S = TransactionState

_NAMES: MappingProxyType[TransactionState, str] = MappingProxyType(
    {
        _S.EMPTY: "Empty",
        _S.ONGOING: "Ongoing",
        _S.PREPARE_COMMIT: "PrepareCommit",
        _S.PREPARE_ABORT: "PrepareAbort",
        _S.COMPLETE_COMMIT: "CompleteCommit",
        _S.COMPLETE_ABORT: "CompleteAbort",
        _S.DEAD: "Dead",
        _S.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
    }
)
_BY_NAME = {name: state for state, name in _NAMES.items()}
_EXPIRABLE = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})

VALID_PREVIOUS_STATES: MappingProxyType[TransactionState, frozenset[TransactionState]] = (
    MappingProxyType(
        {
            _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
            _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
            _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
            _S.PREPARE_ABORT: frozenset(
                {
                    _S.ONGOING,
                    _S.PREPARE_EPOCH_FENCE,
                    _S.EMPTY,
                    _S.COMPLETE_COMMIT,
                    _S.COMPLETE_ABORT,
                }
            ),
            _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
            _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
            _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
            _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
        }
    )
)


class InvalidTransition(RuntimeError):
    """A move the state table forbids: a coordinator bug."""


def check_transition(current: TransactionState, target: TransactionState) -> None:
    """Raise ``InvalidTransition`` unless ``target`` may be entered from ``current``."""
    if current not in VALID_PREVIOUS_STATES[target]:
        raise InvalidTransition(f"{current.kafka_name} cannot move to {target.kafka_name}")


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch (32767) for fencing: a producer at 32766 needs a new id."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


def partition_for(transactional_id: str, partitions: int = DEFAULT_TXN_PARTITIONS) -> int:
    """The ``__transaction_state`` partition of ``transactional_id``: Kafka's
    ``Utils.abs(transactionalId.hashCode) % partitions``, as for groups."""
    return _java_partition_for(transactional_id, partitions)


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id, as the coordinator holds it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    last_update_timestamp_ms: int
    start_timestamp_ms: int = -1
    """When the first partition was added; -1 when no transaction is open."""
    partitions: frozenset[TopicPartition] = frozenset()
    last_producer_id: int = NO_PRODUCER_ID
    """The producer id before the last rotation (epoch exhaustion); Kafka's lastProducerId,
    stored as ``PreviousProducerId`` in value version 1."""
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    """The epoch before the last InitProducerId bump, so that a KIP-360 retry of a bump the
    producer never heard about gets the same answer. In memory only, as in Kafka."""
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False
    """A fencing write failed after the epoch was bumped in memory: the next fence reuses
    that epoch instead of bumping again (the bumped epoch was never given to anyone)."""
    markers_pending: frozenset[TopicPartition] = field(default=frozenset())
    """While a Prepare* transaction's markers are being written: partitions still without
    an acknowledged marker."""

    @property
    def pending_transition(self) -> bool:
        return self.pending_state is not None

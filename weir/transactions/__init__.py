"""Transaction coordinator: Kafka's KIP-98 transaction state machine, pure logic.

Theory of operation
-------------------
Nothing in this package performs I/O, reads a clock or imports asyncio, exactly like the
group coordinator (``weir.coordinator``). The broker's asyncio layer owns, per
``__transaction_state`` partition it leads, one ``TransactionShard`` (rebuilt with
``TransactionShard.load`` when it becomes leader), and feeds it:

* Requests: ``init_producer_id`` / ``add_partitions`` / ``add_offsets`` / ``end_txn`` take
  ``now_ms`` and return an ``Outcome``: the reply, or ``Pending(ticket)`` answered later by a
  ``Reply`` effect, plus effects. ``describe`` and ``list_transactions`` answer at once.
* Writes: a ``WriteTxn`` effect asks for a record (``records.encode``) to be appended acks=all;
  report it with ``persisted(token, error=..., now_ms=...)``. A state change counts only
  then; until then the id has a pending state.
* Markers: a ``SendMarkers`` effect asks for COMMIT/ABORT markers on the transaction's
  partitions; report per-partition errors with ``markers_written``. When every partition has
  its marker the shard writes CompleteCommit/CompleteAbort.
* Time: every ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` call
  ``abort_timed_out(now_ms)``; every ``transaction.remove.expired.transaction.cleanup.interval.ms``
  call ``expire_transactional_ids(now_ms)``. Both return effects.

Modules: ``state`` (the states, their transition table, ``TransactionMetadata``,
``partition_for``), ``records`` (``__transaction_state`` formats, ``replay``), ``coordinator``
(``TransactionShard``, the operations), ``results`` (the values), ``config``.
"""

from weir.transactions.config import TransactionConfig
from weir.transactions.coordinator import TransactionShard, error_for_version
from weir.transactions.records import (
    TRANSACTION_STATE_TOPIC,
    RecordFormatError,
    TransactionLogValue,
    TransactionRecord,
    UnknownRecord,
    decode,
    encode,
    encode_key,
    encode_value,
    replay,
)
from weir.transactions.results import (
    Effect,
    InitProducerIdResult,
    Outcome,
    Pending,
    Reply,
    SendMarkers,
    TransactionDescription,
    TransactionListing,
    WriteTxn,
)
from weir.transactions.state import (
    VALID_PREVIOUS_STATES,
    InvalidTransition,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    check_transition,
    is_epoch_exhausted,
    partition_for,
)

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "VALID_PREVIOUS_STATES",
    "Effect",
    "InitProducerIdResult",
    "InvalidTransition",
    "Outcome",
    "Pending",
    "RecordFormatError",
    "Reply",
    "SendMarkers",
    "TopicPartition",
    "TransactionConfig",
    "TransactionDescription",
    "TransactionListing",
    "TransactionLogValue",
    "TransactionMetadata",
    "TransactionRecord",
    "TransactionShard",
    "TransactionState",
    "UnknownRecord",
    "WriteTxn",
    "check_transition",
    "decode",
    "encode",
    "encode_key",
    "encode_value",
    "error_for_version",
    "is_epoch_exhausted",
    "partition_for",
    "replay",
]

"""The transaction coordinator's operations over one ``__transaction_state`` partition.

Theory of operation
-------------------
``TransactionShard`` is Kafka's ``TransactionCoordinator`` plus the per-partition cache of
``TransactionStateManager``, without threads, locks, logs or clocks: every call takes
``now_ms`` and returns values (``results``). New producer ids come from an injected
allocator (the broker's producer-id block manager).

**Write before it counts.** Every state change is *prepared*: the target state is computed,
the id gets a ``pending_state`` and a ``WriteTxn`` effect asks for its record. Only
``persisted(token, error=none)`` - the record is replicated - makes the change real;
a failed write drops the pending state and answers the mapped error. While a state is
pending, other requests for the id answer CONCURRENT_TRANSACTIONS (clients retry).

**The operations** (transactions version 1: EndTxn v0-v4, Kafka 2.5+ semantics):

* ``init_producer_id``: a new id gets a producer id from the allocator and epoch 0; an
  existing one in Empty / CompleteCommit / CompleteAbort gets its epoch bumped (KIP-98), or a
  new producer id at epoch 0 once the epoch is exhausted (32766: the last value is kept for
  fencing). With KIP-360's producer id/epoch in the request, a retry whose bump already
  happened gets the same epoch again and a stale producer gets PRODUCER_FENCED. An Ongoing
  transaction belongs to a zombie: the epoch is bumped *in memory at once* (the zombie's next
  request is fenced), the transaction goes to PrepareAbort with the bumped epoch, its ABORT
  markers are written, and the caller hears CONCURRENT_TRANSACTIONS - its retry finds
  CompleteAbort and bumps the epoch once more. If that fencing write fails the in-memory
  epoch stays, and the next fence reuses it instead of bumping again
  (``has_failed_epoch_fence``).
* ``add_partitions`` / ``add_offsets`` (the group's ``__consumer_offsets`` partition):
  Empty/Complete* → Ongoing with the start timestamp ``now_ms``; partitions already in an
  Ongoing transaction answer at once.
* ``end_txn``: Ongoing → PrepareCommit/PrepareAbort. Once that record is replicated the
  client hears NONE and ``SendMarkers`` asks for the markers; ``markers_written`` removes
  acknowledged partitions and, when none is left, writes CompleteCommit/CompleteAbort. A
  retried EndTxn answers NONE when already complete, CONCURRENT_TRANSACTIONS while still
  preparing, INVALID_TXN_STATE for the opposite outcome or with no transaction.
* ``abort_timed_out``: Ongoing transactions older than their ``transaction.timeout.ms`` are
  fenced (epoch bump) and aborted exactly like a zombie.
* ``expire_transactional_ids``: ids resting in Empty/Complete* longer than
  ``transactional.id.expiration.ms`` are tombstoned and forgotten.
* ``load``: a new coordinator replays the partition; transactions left in PrepareCommit or
  PrepareAbort resend their markers (``SendMarkers`` in the load result) and complete.

Error precedence follows Kafka's: unknown id or other producer id → INVALID_PRODUCER_ID_MAPPING,
other epoch → PRODUCER_FENCED, pending write → CONCURRENT_TRANSACTIONS, then the state.
``error_for_version`` turns PRODUCER_FENCED into INVALID_PRODUCER_EPOCH for request versions
that predate it (KIP-588), as Kafka's request handlers do.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from weir.coordinator.rebalance import append_error_to_response_error
from weir.coordinator.records import CONSUMER_OFFSETS_TOPIC, DEFAULT_OFFSETS_PARTITIONS
from weir.coordinator.records import partition_for as group_partition_for
from weir.transactions.config import TransactionConfig
from weir.transactions.records import TransactionLogValue, TransactionRecord, replay
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
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    InvalidTransition,
    TopicPartition,
    TransactionMetadata,
    TransactionState,
    check_transition,
    is_epoch_exhausted,
)

__all__ = ["TransactionShard", "error_for_version"]

_E = ErrorCode
_S = TransactionState
_PREPARE = frozenset({_S.PREPARE_COMMIT, _S.PREPARE_ABORT})
_RESTING = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})

# API key -> the request version from which clients understand PRODUCER_FENCED (KIP-588,
# Kafka 2.7): InitProducerId (22) v4, AddPartitionsToTxn (24), AddOffsetsToTxn (25) and
# EndTxn (26) v2.
_PRODUCER_FENCED_SINCE = {22: 4, 24: 2, 25: 2, 26: 2}
# Marker errors after which Kafka stops sending this transaction's markers: the producer or
# this coordinator has been fenced, and the shard is about to be unloaded.
_MARKERS_FENCED = frozenset({_E.invalid_producer_epoch, _E.transaction_coordinator_fenced})
# The partition's log cannot hold markers: Kafka drops it from the transaction.
_MARKERS_UNSUPPORTED = frozenset({_E.unsupported_for_message_format})


def error_for_version(error: ErrorCode, *, api_key: int, version: int) -> ErrorCode:
    """The error a client of ``api_key`` at ``version`` understands: PRODUCER_FENCED becomes
    INVALID_PRODUCER_EPOCH below InitProducerId v4 and AddPartitionsToTxn / AddOffsetsToTxn /
    EndTxn v2, as Kafka's request handlers answer."""
    if error is _E.producer_fenced and version < _PRODUCER_FENCED_SINCE.get(api_key, 0):
        return _E.invalid_producer_epoch
    return error


class _Kind(enum.Enum):
    INIT = "init"  # InitProducerId: a new epoch or producer id (→ Empty)
    ADD = "add"  # AddPartitionsToTxn / AddOffsetsToTxn (→ Ongoing)
    END = "end"  # EndTxn from the client (→ Prepare*)
    FENCE = "fence"  # InitProducerId found a zombie's Ongoing transaction (→ PrepareAbort)
    TIMEOUT = "timeout"  # transaction.timeout.ms passed (→ PrepareAbort)
    COMPLETE = "complete"  # every marker written (→ Complete*)
    EXPIRE = "expire"  # transactional.id.expiration.ms passed (tombstone)


@dataclass(frozen=True, slots=True)
class _Write:
    transactional_id: str
    kind: _Kind
    target: TransactionLogValue | None
    ticket: int | None
    last_producer_epoch: int


class TransactionShard:
    """The transactional ids of one ``__transaction_state`` partition, and their operations."""

    def __init__(
        self,
        *,
        coordinator_epoch: int,
        allocate_producer_id: Callable[[], int],
        config: TransactionConfig | None = None,
        transactions: Iterable[TransactionMetadata] = (),
    ) -> None:
        self.coordinator_epoch = coordinator_epoch
        """The partition's leader epoch: every marker carries it, so a deposed coordinator's
        late markers are refused by partition leaders."""
        self.config = config or TransactionConfig()
        self._allocate = allocate_producer_id
        self._txns: dict[str, TransactionMetadata] = {t.transactional_id: t for t in transactions}
        self._writes: dict[int, _Write] = {}
        self._tokens = itertools.count(1)

    # -- loading ------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        records: Iterable[tuple[bytes, bytes | None]],
        *,
        coordinator_epoch: int,
        allocate_producer_id: Callable[[], int],
        now_ms: int,
        config: TransactionConfig | None = None,
    ) -> tuple[TransactionShard, tuple[Effect, ...]]:
        """Rebuild a partition from its records; the effects finish every transaction left
        in PrepareCommit / PrepareAbort (its markers are sent again, then Complete* written)."""
        metadata = [
            TransactionMetadata(
                transactional_id=tid,
                producer_id=value.producer_id,
                producer_epoch=value.producer_epoch,
                timeout_ms=value.timeout_ms,
                state=value.state,
                last_update_timestamp_ms=value.last_update_timestamp_ms,
                start_timestamp_ms=value.start_timestamp_ms,
                partitions=value.partitions,
                last_producer_id=value.previous_producer_id,
            )
            for tid, value in replay(records).items()
        ]
        shard = cls(
            coordinator_epoch=coordinator_epoch,
            allocate_producer_id=allocate_producer_id,
            config=config,
            transactions=metadata,
        )
        effects: list[Effect] = []
        for meta in metadata:
            if meta.state in _PREPARE:
                effects.extend(shard._start_markers(meta, now_ms))
        return shard, tuple(effects)

    # -- lookups ------------------------------------------------------------------------

    def get(self, transactional_id: str) -> TransactionMetadata | None:
        return self._txns.get(transactional_id)

    def __len__(self) -> int:
        return len(self._txns)

    def transactional_ids(self) -> list[str]:
        return sorted(self._txns)

    def describe(self, transactional_id: str) -> TransactionDescription:
        """DescribeTransactions for one id."""
        if not transactional_id:
            return TransactionDescription(transactional_id, _E.invalid_request)
        meta = self._txns.get(transactional_id)
        if meta is None or meta.state is _S.DEAD:
            return TransactionDescription(transactional_id, _E.transactional_id_not_found)
        return TransactionDescription(
            transactional_id,
            _E.none,
            state=meta.state.kafka_name,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            timeout_ms=meta.timeout_ms,
            start_timestamp_ms=meta.start_timestamp_ms,
            partitions=tuple(sorted(meta.partitions)),
        )

    def list_transactions(
        self,
        *,
        states: Collection[str] = (),
        producer_ids: Collection[int] = (),
        min_duration_ms: int = -1,
        now_ms: int = 0,
    ) -> tuple[TransactionListing, ...]:
        """ListTransactions: empty filters match everything; ``min_duration_ms`` >= 0 keeps
        transactions started at least that long ago (KIP-994)."""
        found = []
        for tid in sorted(self._txns):
            meta = self._txns[tid]
            if meta.state is _S.DEAD:
                continue
            if states and meta.state.kafka_name not in states:
                continue
            if producer_ids and meta.producer_id not in producer_ids:
                continue
            if min_duration_ms >= 0 and (
                meta.start_timestamp_ms < 0 or now_ms - meta.start_timestamp_ms < min_duration_ms
            ):
                continue
            found.append(TransactionListing(tid, meta.producer_id, meta.state.kafka_name))
        return tuple(found)

    # -- InitProducerId -------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        *,
        timeout_ms: int,
        now_ms: int,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> Outcome[InitProducerIdResult]:
        """InitProducerId for a transactional producer (v3+ may carry its current id/epoch)."""
        if not transactional_id:
            return Outcome(InitProducerIdResult(_E.invalid_request))
        if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
            return Outcome(InitProducerIdResult(_E.invalid_request))
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return Outcome(InitProducerIdResult(_E.invalid_transaction_timeout))
        meta = self._txns.get(transactional_id)
        if meta is None:
            meta = TransactionMetadata(
                transactional_id=transactional_id,
                producer_id=self._allocate(),
                producer_epoch=NO_PRODUCER_EPOCH,
                timeout_ms=timeout_ms,
                state=_S.EMPTY,
                last_update_timestamp_ms=now_ms,
            )
            self._txns[transactional_id] = meta
        expected = None if producer_id == NO_PRODUCER_ID else (producer_id, producer_epoch)
        if meta.pending_transition:
            return Outcome(InitProducerIdResult(_E.concurrent_transactions))
        if expected is not None and not _may_resume(meta, *expected):
            return Outcome(InitProducerIdResult(_E.producer_fenced))
        if meta.state in _PREPARE:
            return Outcome(InitProducerIdResult(_E.concurrent_transactions))
        if meta.state is _S.ONGOING:
            return self._fence_and_abort(meta, now_ms, _Kind.FENCE)
        if meta.state not in _RESTING:
            raise InvalidTransition(f"{transactional_id} found in {meta.state.kafka_name}")
        bumped = _bump(meta, timeout_ms, None if expected is None else expected[1], now_ms)
        if bumped is None:
            return Outcome(InitProducerIdResult(_E.producer_fenced))
        target, last_epoch = bumped
        if target.producer_id == NO_PRODUCER_ID:  # epoch exhausted: rotate the producer id
            target = dataclasses.replace(target, producer_id=self._allocate())
        return self._prepare(meta, _Kind.INIT, target, last_epoch, reply=True)

    # -- AddPartitionsToTxn / AddOffsetsToTxn ---------------------------------------------

    def add_partitions(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Outcome[ErrorCode]:
        """AddPartitionsToTxn: one error for every partition of the request."""
        if not transactional_id:
            return Outcome(_E.invalid_request)
        wanted = frozenset(partitions)
        meta = self._txns.get(transactional_id)
        error = self._check_producer(meta, producer_id, producer_epoch)
        if error is not _E.none or meta is None:
            return Outcome(error)
        if meta.pending_transition or meta.state in _PREPARE:
            return Outcome(_E.concurrent_transactions)
        if meta.state is _S.ONGOING and wanted <= meta.partitions:
            return Outcome(_E.none)
        start = now_ms if meta.state in _RESTING else meta.start_timestamp_ms
        target = _value_of(meta, _S.ONGOING, now_ms, meta.partitions | wanted, start)
        return self._prepare(meta, _Kind.ADD, target, meta.last_producer_epoch, reply=True)

    def add_offsets(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        group_id: str,
        now_ms: int,
        offsets_partitions: int = DEFAULT_OFFSETS_PARTITIONS,
    ) -> Outcome[ErrorCode]:
        """AddOffsetsToTxn: adds the group's ``__consumer_offsets`` partition."""
        partition = (CONSUMER_OFFSETS_TOPIC, group_partition_for(group_id, offsets_partitions))
        return self.add_partitions(
            transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=(partition,),
            now_ms=now_ms,
        )

    # -- EndTxn -----------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
    ) -> Outcome[ErrorCode]:
        """EndTxn: commit or abort the producer's transaction."""
        if not transactional_id:
            return Outcome(_E.invalid_request)
        meta = self._txns.get(transactional_id)
        error = self._check_producer(meta, producer_id, producer_epoch)
        if error is not _E.none or meta is None:
            return Outcome(error)
        if meta.pending_transition:
            return Outcome(_E.concurrent_transactions)
        state = meta.state
        if state is _S.ONGOING:
            target_state = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            target = _value_of(meta, target_state, now_ms)
            return self._prepare(meta, _Kind.END, target, meta.last_producer_epoch, reply=True)
        if state is (_S.COMPLETE_COMMIT if commit else _S.COMPLETE_ABORT):
            return Outcome(_E.none)  # a retry of an EndTxn that succeeded
        if state is (_S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT):
            return Outcome(_E.concurrent_transactions)  # a retry while markers are written
        if state in (*_PREPARE, *_RESTING):
            return Outcome(_E.invalid_txn_state)  # the other outcome, or no transaction
        raise InvalidTransition(f"{transactional_id} found in {state.kafka_name}")

    # -- time -------------------------------------------------------------------------------

    def abort_timed_out(self, now_ms: int) -> tuple[Effect, ...]:
        """Fence and abort every Ongoing transaction older than its timeout (Kafka's
        ``abortTimedOutTransactions``, run every
        ``transaction.abort.timed.out.transaction.cleanup.interval.ms``)."""
        effects: list[Effect] = []
        for meta in list(self._txns.values()):
            if (
                not meta.pending_transition
                and meta.state is _S.ONGOING
                and meta.start_timestamp_ms + meta.timeout_ms < now_ms
            ):
                effects.extend(self._fence_and_abort(meta, now_ms, _Kind.TIMEOUT).effects)
        return tuple(effects)

    def expire_transactional_ids(self, now_ms: int) -> tuple[Effect, ...]:
        """Tombstones for ids idle longer than ``transactional.id.expiration.ms``."""
        effects: list[Effect] = []
        cutoff = now_ms - self.config.id_expiration_ms
        for meta in list(self._txns.values()):
            if (
                not meta.pending_transition
                and meta.state.expiration_allowed
                and meta.last_update_timestamp_ms <= cutoff
            ):
                check_transition(meta.state, _S.DEAD)
                meta.pending_state = _S.DEAD
                write = _Write(meta.transactional_id, _Kind.EXPIRE, None, None, NO_PRODUCER_EPOCH)
                effects.append(self._write(write))
        return tuple(effects)

    # -- writes and markers come back -------------------------------------------------------

    def persisted(self, token: int, *, error: ErrorCode, now_ms: int) -> tuple[Effect, ...]:
        """A ``WriteTxn`` was acknowledged (``error`` none) or failed."""
        write = self._writes.pop(token, None)
        if write is None:
            return ()
        meta = self._txns.get(write.transactional_id)
        if meta is None:
            return ()
        if write.kind is _Kind.EXPIRE:
            return self._expired(meta, error)
        if write.kind is _Kind.COMPLETE:
            return self._completed(meta, write, error)
        if error is not _E.none:
            return self._write_failed(meta, write, error)
        assert write.target is not None
        self._apply(meta, write.target, write.last_producer_epoch)
        if write.kind is _Kind.INIT:
            response = InitProducerIdResult(_E.none, meta.producer_id, meta.producer_epoch)
            return _reply(write.ticket, response)
        if write.kind is _Kind.ADD:
            return _reply(write.ticket, _E.none)
        # A Prepare* record is in: the client's EndTxn succeeded (a fencing InitProducerId
        # is told to retry), and the markers go out.
        answer = _E.concurrent_transactions if write.kind is _Kind.FENCE else _E.none
        return _reply(write.ticket, _response(write.kind, answer)) + self._start_markers(
            meta, now_ms
        )

    def markers_written(
        self,
        transactional_id: str,
        results: Mapping[TopicPartition, ErrorCode],
        *,
        now_ms: int,
        deleted: Collection[TopicPartition] = (),
    ) -> tuple[Effect, ...]:
        """The outcome of a ``SendMarkers``: an error per partition. ``deleted`` names
        partitions whose topic no longer exists (they need no marker)."""
        meta = self._txns.get(transactional_id)
        if meta is None or meta.state not in _PREPARE or not meta.markers_pending:
            return ()
        if any(results.get(tp) in _MARKERS_FENCED for tp in meta.markers_pending):
            # As Kafka: stop; the epoch or the coordinator moved on, and the transaction is
            # finished by whoever did (the shard is about to be unloaded).
            return ()
        done = {
            tp
            for tp, err in results.items()
            if err is _E.none or err in _MARKERS_UNSUPPORTED or tp in deleted
        }
        meta.markers_pending = meta.markers_pending - done - frozenset(deleted)
        if meta.markers_pending:
            return (self._markers(meta, meta.markers_pending, retry=True),)
        return self._finish(meta, now_ms)

    # -- internals --------------------------------------------------------------------------

    def _check_producer(
        self, meta: TransactionMetadata | None, producer_id: int, producer_epoch: int
    ) -> ErrorCode:
        if meta is None or meta.producer_id != producer_id:
            return _E.invalid_producer_id_mapping
        if meta.producer_epoch != producer_epoch:
            return _E.producer_fenced
        return _E.none

    def _fence_and_abort(
        self, meta: TransactionMetadata, now_ms: int, kind: _Kind
    ) -> Outcome[InitProducerIdResult]:
        """Kafka's prepareFenceProducerEpoch followed by an abort that is not the client's:
        the bumped epoch takes effect in memory at once (the zombie is fenced now)."""
        check_transition(meta.state, _S.PREPARE_EPOCH_FENCE)
        if not (meta.has_failed_epoch_fence or meta.producer_epoch == MAX_PRODUCER_EPOCH):
            meta.producer_epoch += 1
        meta.last_producer_epoch = NO_PRODUCER_EPOCH
        target = _value_of(meta, _S.PREPARE_ABORT, now_ms)
        return self._prepare(meta, kind, target, NO_PRODUCER_EPOCH, reply=kind is _Kind.FENCE)

    def _prepare(
        self,
        meta: TransactionMetadata,
        kind: _Kind,
        target: TransactionLogValue,
        last_producer_epoch: int,
        *,
        reply: bool,
    ) -> Outcome[Any]:
        check_transition(meta.state, target.state)
        meta.pending_state = target.state
        token = next(self._tokens)
        write = _Write(
            meta.transactional_id, kind, target, token if reply else None, last_producer_epoch
        )
        effect = self._write(write, token)
        return Outcome(Pending(token) if reply else _E.none, (effect,))

    def _write(self, write: _Write, token: int | None = None, *, retry: bool = False) -> WriteTxn:
        token = next(self._tokens) if token is None else token
        self._writes[token] = write
        return WriteTxn(token, TransactionRecord(write.transactional_id, write.target), retry)

    def _apply(
        self, meta: TransactionMetadata, value: TransactionLogValue, last_epoch: int
    ) -> None:
        meta.producer_id = value.producer_id
        meta.producer_epoch = value.producer_epoch
        meta.timeout_ms = value.timeout_ms
        meta.state = value.state
        meta.partitions = value.partitions
        meta.start_timestamp_ms = value.start_timestamp_ms
        meta.last_update_timestamp_ms = value.last_update_timestamp_ms
        meta.last_producer_id = value.previous_producer_id
        meta.last_producer_epoch = last_epoch
        meta.pending_state = None

    def _write_failed(
        self, meta: TransactionMetadata, write: _Write, error: ErrorCode
    ) -> tuple[Effect, ...]:
        meta.pending_state = None
        if write.kind in (_Kind.FENCE, _Kind.TIMEOUT):
            meta.has_failed_epoch_fence = True
        return _reply(write.ticket, _response(write.kind, append_error_to_response_error(error)))

    def _start_markers(self, meta: TransactionMetadata, now_ms: int) -> tuple[Effect, ...]:
        """Prepare* is durable: Complete* becomes pending while the markers are written."""
        target = _S.COMPLETE_COMMIT if meta.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        check_transition(meta.state, target)
        meta.pending_state = target
        meta.markers_pending = meta.partitions
        if not meta.partitions:
            return self._finish(meta, now_ms)
        return (self._markers(meta, meta.partitions, retry=False),)

    def _markers(
        self, meta: TransactionMetadata, partitions: frozenset[TopicPartition], *, retry: bool
    ) -> SendMarkers:
        return SendMarkers(
            transactional_id=meta.transactional_id,
            producer_id=meta.producer_id,
            producer_epoch=meta.producer_epoch,
            commit=meta.state is _S.PREPARE_COMMIT,
            coordinator_epoch=self.coordinator_epoch,
            partitions=partitions,
            retry=retry,
        )

    def _finish(self, meta: TransactionMetadata, now_ms: int) -> tuple[Effect, ...]:
        """Every marker is written: record Complete* (the pending state is already set)."""
        assert meta.pending_state is not None
        target = _value_of(meta, meta.pending_state, now_ms, frozenset())
        write = _Write(
            meta.transactional_id, _Kind.COMPLETE, target, None, meta.last_producer_epoch
        )
        return (self._write(write),)

    def _completed(
        self, meta: TransactionMetadata, write: _Write, error: ErrorCode
    ) -> tuple[Effect, ...]:
        assert write.target is not None
        if error is _E.none:
            meta.has_failed_epoch_fence = False
            meta.markers_pending = frozenset()
            self._apply(meta, write.target, write.last_producer_epoch)
            return ()
        if append_error_to_response_error(error) is _E.coordinator_not_available:
            return (self._write(write, retry=True),)  # not replicated yet: try again
        # NOT_COORDINATOR and the like: leadership moved; the new coordinator loads the
        # Prepare* record and finishes the transaction.
        return ()

    def _expired(self, meta: TransactionMetadata, error: ErrorCode) -> tuple[Effect, ...]:
        if meta.pending_state is not _S.DEAD:
            return ()
        if error is _E.none:
            del self._txns[meta.transactional_id]
        else:
            meta.pending_state = None
        return ()


def _response(kind: _Kind, error: ErrorCode) -> InitProducerIdResult | ErrorCode:
    """An error answer in the shape of the request that wrote: InitProducerId (which may
    have written a fence) or the others."""
    if kind in (_Kind.INIT, _Kind.FENCE):
        return InitProducerIdResult(error)
    return error


def _reply(ticket: int | None, response: InitProducerIdResult | ErrorCode) -> tuple[Effect, ...]:
    return () if ticket is None else (Reply(ticket, response),)


def _value_of(
    meta: TransactionMetadata,
    state: TransactionState,
    now_ms: int,
    partitions: frozenset[TopicPartition] | None = None,
    start_timestamp_ms: int | None = None,
) -> TransactionLogValue:
    """The metadata's record with ``state`` and the given changes."""
    return TransactionLogValue(
        producer_id=meta.producer_id,
        producer_epoch=meta.producer_epoch,
        timeout_ms=meta.timeout_ms,
        state=state,
        partitions=meta.partitions if partitions is None else partitions,
        last_update_timestamp_ms=now_ms,
        start_timestamp_ms=(
            meta.start_timestamp_ms if start_timestamp_ms is None else start_timestamp_ms
        ),
        previous_producer_id=meta.last_producer_id,
    )


def _may_resume(meta: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """KIP-360: may a producer that names (producer_id, producer_epoch) get a new epoch?
    Yes if the id was just created (epoch -1: it recovers from UNKNOWN_PRODUCER_ID), if it
    names the current producer id (the epoch is checked by the bump), or if it names the
    previous one with an exhausted epoch (a retry of the rotation it never heard about)."""
    return (
        meta.producer_epoch == NO_PRODUCER_EPOCH
        or producer_id == meta.producer_id
        or (producer_id == meta.last_producer_id and is_epoch_exhausted(producer_epoch))
    )


def _bump(
    meta: TransactionMetadata, timeout_ms: int, expected_epoch: int | None, now_ms: int
) -> tuple[TransactionLogValue, int] | None:
    """The Empty record InitProducerId writes for a resting id, with the in-memory last epoch;
    None when the producer is fenced. A rotation to a new producer id (the epoch is
    exhausted) comes back with producer id -1 for the caller to allocate."""

    def empty(producer_id: int, epoch: int, previous_producer_id: int) -> TransactionLogValue:
        return TransactionLogValue(
            producer_id=producer_id,
            producer_epoch=epoch,
            timeout_ms=timeout_ms,
            state=_S.EMPTY,
            partitions=frozenset(),
            last_update_timestamp_ms=now_ms,
            start_timestamp_ms=-1,
            previous_producer_id=previous_producer_id,
        )

    epoch = meta.producer_epoch
    if expected_epoch is None:
        if is_epoch_exhausted(epoch):
            return empty(NO_PRODUCER_ID, 0, meta.producer_id), NO_PRODUCER_EPOCH
        return empty(meta.producer_id, epoch + 1, meta.last_producer_id), NO_PRODUCER_EPOCH
    if epoch == NO_PRODUCER_EPOCH or expected_epoch == epoch:
        # The producer carries on after an error and nobody else has initialised since.
        if is_epoch_exhausted(epoch):
            return empty(NO_PRODUCER_ID, 0, meta.producer_id), epoch
        return empty(meta.producer_id, epoch + 1, meta.last_producer_id), epoch
    if expected_epoch == meta.last_producer_epoch:
        # A retry of a bump that succeeded: the same epoch again, with no new bump. (Kafka
        # refuses this retry once the bump exhausted the epoch; answering it is safe too.)
        return empty(meta.producer_id, epoch, meta.last_producer_id), meta.last_producer_epoch
    return None

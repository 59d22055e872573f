"""A fake clock and a driver that plays the asyncio layer's part for one ``TransactionShard``.

The driver keeps every ``Reply`` by ticket and, unless told otherwise, acknowledges each
``WriteTxn`` at once (appending its encoded record to ``log``, like a log append that is
replicated immediately) and each ``SendMarkers`` with no error on every partition. With
``auto_persist`` / ``auto_markers`` off, the effects queue up for the test to answer.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from kio.schema.errors import ErrorCode

from weir.transactions import (
    Effect,
    InitProducerIdResult,
    Outcome,
    Pending,
    Reply,
    SendMarkers,
    TopicPartition,
    TransactionConfig,
    TransactionMetadata,
    TransactionShard,
    WriteTxn,
    encode,
)

START_MS = 1_700_000_000_000
TIMEOUT_MS = 60_000
COORDINATOR_EPOCH = 7
FIRST_PRODUCER_ID = 1000


class Driver:
    """Drives one shard with a fake clock."""

    def __init__(
        self,
        *,
        config: TransactionConfig | None = None,
        auto_persist: bool = True,
        auto_markers: bool = True,
        shard: TransactionShard | None = None,
        start_ms: int = START_MS,
    ) -> None:
        self.now = start_ms
        self.ids = itertools.count(FIRST_PRODUCER_ID)
        self.shard = shard or TransactionShard(
            coordinator_epoch=COORDINATOR_EPOCH,
            allocate_producer_id=lambda: next(self.ids),
            config=config,
        )
        self.auto_persist = auto_persist
        self.auto_markers = auto_markers
        self.replies: dict[int, InitProducerIdResult | ErrorCode] = {}
        self.writes: list[WriteTxn] = []
        """Writes waiting for an answer (``auto_persist`` off)."""
        self.markers: list[SendMarkers] = []
        """Marker requests waiting for an answer (``auto_markers`` off)."""
        self.sent_markers: list[SendMarkers] = []
        self.written: list[WriteTxn] = []
        """Every write asked for, in order."""
        self.log: list[tuple[bytes, bytes | None]] = []
        """Encoded records of the acknowledged writes: the partition's contents."""

    # -- effects --------------------------------------------------------------------------
    def run(self, effects: Iterable[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Reply):
                self.replies[effect.ticket] = effect.response
            elif isinstance(effect, WriteTxn):
                self.written.append(effect)
                if self.auto_persist:
                    self.persist(effect)
                else:
                    self.writes.append(effect)
            elif isinstance(effect, SendMarkers):
                self.sent_markers.append(effect)
                if self.auto_markers:
                    self.run(
                        self.shard.markers_written(
                            effect.transactional_id,
                            dict.fromkeys(effect.partitions, ErrorCode.none),
                            now_ms=self.now,
                        )
                    )
                else:
                    self.markers.append(effect)

    def persist(self, write: WriteTxn, error: ErrorCode = ErrorCode.none) -> None:
        if error is ErrorCode.none:
            self.log.append(encode(write.record, value_version=self.shard.config.value_version))
        self.run(self.shard.persisted(write.token, error=error, now_ms=self.now))

    def ack_write(self, error: ErrorCode = ErrorCode.none) -> WriteTxn:
        """Answer the oldest queued write."""
        write = self.writes.pop(0)
        self.persist(write, error)
        return write

    def ack_markers(
        self, errors: dict[TopicPartition, ErrorCode] | None = None, **kwargs: object
    ) -> SendMarkers:
        """Answer the oldest queued marker request: no error unless ``errors`` says so."""
        send = self.markers.pop(0)
        results = dict.fromkeys(send.partitions, ErrorCode.none) | (errors or {})
        self.run(
            self.shard.markers_written(
                send.transactional_id,
                results,
                now_ms=self.now,
                **kwargs,  # type: ignore[arg-type]
            )
        )
        return send

    def answer(self, outcome: Outcome[object]) -> object:
        """Run an outcome's effects; its reply, or ``Pending`` if still unanswered."""
        self.run(outcome.effects)
        if isinstance(outcome.reply, Pending):
            return self.replies.pop(outcome.reply.ticket, outcome.reply)
        return outcome.reply

    # -- requests -------------------------------------------------------------------------
    def init(
        self,
        tid: str = "txn",
        *,
        timeout_ms: int = TIMEOUT_MS,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> object:
        return self.answer(
            self.shard.init_producer_id(
                tid,
                timeout_ms=timeout_ms,
                now_ms=self.now,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
            )
        )

    def add(self, tid: str, producer: InitProducerIdResult, *partitions: TopicPartition) -> object:
        return self.answer(
            self.shard.add_partitions(
                tid,
                producer_id=producer.producer_id,
                producer_epoch=producer.producer_epoch,
                partitions=partitions,
                now_ms=self.now,
            )
        )

    def end(self, tid: str, producer: InitProducerIdResult, *, commit: bool) -> object:
        return self.answer(
            self.shard.end_txn(
                tid,
                producer_id=producer.producer_id,
                producer_epoch=producer.producer_epoch,
                commit=commit,
                now_ms=self.now,
            )
        )

    def producer(self, tid: str = "txn", **kwargs: int) -> InitProducerIdResult:
        """InitProducerId that must succeed."""
        result = self.init(tid, **kwargs)
        assert isinstance(result, InitProducerIdResult), result
        assert result.error is ErrorCode.none, result
        return result

    def meta(self, tid: str = "txn") -> TransactionMetadata:
        meta = self.shard.get(tid)
        assert meta is not None
        return meta

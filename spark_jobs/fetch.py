"""Executor-side reading: one ``OffsetRange`` → Arrow record batches in the Kafka source schema.

Theory of operation
-------------------
Each Spark task opens its own confluent-kafka ``Consumer``, *assigns* (never subscribes) the
one topic-partition at the range's start offset, and reads until it has seen the range's end.
Nothing is committed: the group id only satisfies the client (Spark's source does the same).
Because it is an ordinary Kafka client, an executor on any host that can reach the brokers can
read; nothing depends on the broker's files.

When to stop: offsets in a range are positions, and compaction leaves holes, so the reader
cannot count records. It stops at the first record at or beyond ``end`` (dropped), after the
record at ``end - 1``, or at a partition-EOF event whose offset (the high watermark) is at least
``end``. ``consume`` is asked for at most ``end - next`` records so a dense range never waits
for a timeout at its tail; a sparse one is cut short by the EOF event instead. A partition that
makes no progress for ``kafkaConsumer.pollTimeoutMs`` fails the task with the range in the
message. Offsets below the log start (deleted by retention) fail the task when
``failOnDataLoss`` is true, as in Spark; otherwise reading resumes at the earliest offset.

Rows leave as ``pyarrow.RecordBatch`` (Spark's Python data source API accepts them and skips a
per-row conversion), in exactly the schema Spark derives for the source's ``StructType``.
Timestamps become microseconds in UTC; ``timestampType`` uses the Java client's ids
(0 = CreateTime, 1 = LogAppendTime, -1 = none).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pyarrow as pa
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from spark_jobs.offsets import OffsetRange, client_config
from spark_jobs.options import SourceOptions

BATCH_RECORDS = 10_000  # records per Arrow batch (and per consume() call)
_POLL_S = 1.0
_TIMESTAMP_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}


class DataLossError(RuntimeError):
    """Records the query asked for are gone (deleted, or the log was truncated)."""


def consumer_config(options: SourceOptions) -> dict[str, object]:
    config = client_config(options)
    config.update(
        {
            "group.id": options.group_id or f"{options.group_id_prefix}-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            # "error" surfaces OFFSET_OUT_OF_RANGE to us instead of silently skipping data.
            "auto.offset.reset": "error" if options.fail_on_data_loss else "earliest",
        }
    )
    for name, value in options.kafka.items():  # the user's kafka.* settings win
        config[name] = value
    return config


def read_range(
    options: SourceOptions, span: OffsetRange, arrow_schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``span`` as Arrow batches in ``arrow_schema``."""
    if span.size == 0:
        return
    consumer = Consumer(consumer_config(options))
    try:
        consumer.assign([TopicPartition(span.topic, span.partition, span.start)])
        yield from _drain(consumer, options, span, arrow_schema)
    finally:
        consumer.close()


def _drain(
    consumer: Consumer, options: SourceOptions, span: OffsetRange, arrow_schema: pa.Schema
) -> Iterator[pa.RecordBatch]:
    builder = _BatchBuilder(span, arrow_schema, options.include_headers)
    next_offset = span.start
    stalled_since = time.monotonic()
    timeout_s = options.poll_timeout_ms / 1000.0
    while next_offset < span.end:
        messages = consumer.consume(
            num_messages=max(1, min(BATCH_RECORDS, span.end - next_offset)), timeout=_POLL_S
        )
        progressed = False
        done = False
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if message.offset() >= span.end:
                        done = True  # the log ends at or after the range: holes were compacted
                        break
                    continue  # HW below the range end (e.g. a leader change): wait for it
                if error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    raise DataLossError(
                        f"offsets {span.start}..{span.end} of {span.topic}-{span.partition} "
                        f"are no longer available ({error.str()}); some data may have been "
                        "lost. Set failOnDataLoss=false to read what is left."
                    )
                if error.retriable() or not error.fatal():
                    continue  # transient (a broker restarting): the client retries
                raise KafkaException(error)
            offset = message.offset()
            if offset >= span.end:
                done = True
                break
            builder.add(message)
            next_offset = offset + 1
            progressed = True
            if builder.full:
                yield builder.flush()
        if done:
            break
        if progressed:
            stalled_since = time.monotonic()
        elif time.monotonic() - stalled_since > timeout_s:
            raise TimeoutError(
                f"no records from {span.topic}-{span.partition} at offset {next_offset} "
                f"(range {span.start}..{span.end}) for {timeout_s:.0f}s "
                "(option kafkaConsumer.pollTimeoutMs)"
            )
    if builder.count:
        yield builder.flush()


class _BatchBuilder:
    """Column lists for one Arrow batch; ``flush`` turns them into a ``RecordBatch``."""

    def __init__(self, span: OffsetRange, arrow_schema: pa.Schema, headers: bool) -> None:
        self.span = span
        self.schema = arrow_schema
        self.with_headers = headers
        self._reset()

    def _reset(self) -> None:
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.offsets: list[int] = []
        self.stamps: list[int | None] = []
        self.stamp_types: list[int] = []
        self.headers: list[list[dict[str, object]]] = []

    @property
    def count(self) -> int:
        return len(self.offsets)

    @property
    def full(self) -> bool:
        return len(self.offsets) >= BATCH_RECORDS

    def add(self, message: object) -> None:
        self.keys.append(message.key())  # type: ignore[attr-defined]
        self.values.append(message.value())  # type: ignore[attr-defined]
        self.offsets.append(message.offset())  # type: ignore[attr-defined]
        kind, stamp = message.timestamp()  # type: ignore[attr-defined]
        self.stamps.append(stamp * 1000 if kind in _TIMESTAMP_TYPE else None)
        self.stamp_types.append(_TIMESTAMP_TYPE.get(kind, -1))
        if self.with_headers:
            pairs = message.headers() or []  # type: ignore[attr-defined]
            self.headers.append([{"key": k, "value": v} for k, v in pairs])

    def flush(self) -> pa.RecordBatch:
        n = len(self.offsets)
        types = self.schema.types
        columns = [
            pa.array(self.keys, types[0]),
            pa.array(self.values, types[1]),
            pa.array([self.span.topic] * n, types[2]),
            pa.array([self.span.partition] * n, types[3]),
            pa.array(self.offsets, types[4]),
            pa.array(self.stamps, pa.int64()).cast(types[5]),
            pa.array(self.stamp_types, types[6]),
        ]
        if self.with_headers:
            columns.append(pa.array(self.headers, types[7]))
        batch = pa.RecordBatch.from_arrays(columns, schema=self.schema)
        self._reset()
        return batch

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

import bisect
import itertools
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

BATCH_RECORDS = 10_000  # records per consume() call, and so at most per Arrow batch
_POLL_S = 1.0
_TIMESTAMP_TYPE = {TIMESTAMP_CREATE_TIME: 0, TIMESTAMP_LOG_APPEND_TIME: 1}
_MS = pa.timestamp("ms", tz="UTC")


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
            # Spark's Kafka source reads read_uncommitted unless told otherwise; librdkafka's
            # own default (read_committed) would stop a reader at an open transaction.
            "isolation.level": "read_uncommitted",
            # "error" surfaces OFFSET_OUT_OF_RANGE to us instead of silently skipping data.
            "auto.offset.reset": "error" if options.fail_on_data_loss else "earliest",
            # One partition per consumer: let each fetch bring back a lot of it (librdkafka's
            # default is 1 MB per partition per fetch, a round trip per MB).
            "max.partition.fetch.bytes": 16 * 1024 * 1024,
            "fetch.max.bytes": 64 * 1024 * 1024,
            "receive.message.max.bytes": 65 * 1024 * 1024,
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
    next_offset = span.start
    stalled_since = time.monotonic()
    timeout_s = options.poll_timeout_ms / 1000.0
    while next_offset < span.end:
        messages = consumer.consume(
            num_messages=max(1, min(BATCH_RECORDS, span.end - next_offset)), timeout=_POLL_S
        )
        # Whole-list passes (comprehensions) instead of per-record Python calls: this loop is
        # the source's hot path.
        records = [m for m in messages if m.error() is None]
        done = False
        if len(records) != len(messages):
            done = _check_events(messages, span)
        offsets = [m.offset() for m in records]
        if offsets and offsets[-1] >= span.end:
            cut = bisect.bisect_left(offsets, span.end)
            records, offsets, done = records[:cut], offsets[:cut], True
        if records:
            yield _to_batch(records, offsets, span, arrow_schema, options.include_headers)
            next_offset = offsets[-1] + 1
            stalled_since = time.monotonic()
        elif not done and time.monotonic() - stalled_since > timeout_s:
            raise TimeoutError(
                f"no records from {span.topic}-{span.partition} at offset {next_offset} "
                f"(range {span.start}..{span.end}) for {timeout_s:.0f}s "
                "(option kafkaConsumer.pollTimeoutMs)"
            )
        if done:
            break


def _check_events(messages: list, span: OffsetRange) -> bool:
    """Handle the error events of a consume() call; True when the range is complete."""
    for message in messages:
        error = message.error()
        if error is None:
            continue
        if error.code() == KafkaError._PARTITION_EOF:
            if message.offset() >= span.end:
                return True  # the log ends at or after the range: any holes were compacted
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
    return False


def _to_batch(
    records: list,
    offsets: list[int],
    span: OffsetRange,
    schema: pa.Schema,
    with_headers: bool,
) -> pa.RecordBatch:
    n = len(records)
    types = schema.types
    stamps = [m.timestamp() for m in records]
    kinds = {kind for kind, _ in stamps}
    if kinds <= _TIMESTAMP_TYPE.keys() and len(kinds) == 1:
        # the usual case: one timestamp type for the whole batch
        (kind,) = kinds
        times = pa.array([t for _, t in stamps], _MS).cast(types[5])
        kind_column = pa.array(itertools.repeat(_TIMESTAMP_TYPE[kind], n), types[6], size=n)
    else:
        times = pa.array([t if k in _TIMESTAMP_TYPE else None for k, t in stamps], _MS).cast(
            types[5]
        )
        kind_column = pa.array([_TIMESTAMP_TYPE.get(k, -1) for k, _ in stamps], types[6])
    columns = [
        pa.array([m.key() for m in records], types[0]),
        pa.array([m.value() for m in records], types[1]),
        pa.array(itertools.repeat(span.topic, n), types[2], size=n),
        pa.array(itertools.repeat(span.partition, n), types[3], size=n),
        pa.array(offsets, types[4]),
        times,
        kind_column,
    ]
    if with_headers:
        columns.append(
            pa.array(
                [[{"key": k, "value": v} for k, v in (m.headers() or ())] for m in records],
                types[7],
            )
        )
    return pa.RecordBatch.from_arrays(columns, schema=schema)

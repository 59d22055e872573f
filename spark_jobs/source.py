"""The ``weir`` PySpark data source: Spark's Kafka source, batch and streaming, in Python.

Theory of operation
-------------------
``spark.read.format("weir")`` / ``spark.readStream.format("weir")`` accept the options of
Spark's Kafka source (see ``spark_jobs.options``) and return its schema: ``key`` binary,
``value`` binary, ``topic`` string, ``partition`` int, ``offset`` long, ``timestamp``
timestamp, ``timestampType`` int, plus ``headers`` array<struct<key:string,value:binary>> only
with ``includeHeaders=true``.

Spark runs a Python data source in three places, and each piece here lives in one of them:

* ``WeirDataSource.schema`` — when the DataFrame is defined (driver). It checks the options
  every query needs, so a missing ``kafka.bootstrap.servers`` fails at ``load()``.
* ``WeirBatchReader.partitions`` / ``WeirStreamReader`` offset methods — planning, in a Python
  worker beside the driver: the cluster is asked for partitions and offsets
  (``spark_jobs.offsets``) and the work is cut into ``OffsetRange`` partitions.
* ``read`` — one Spark task per range, on executors: ``spark_jobs.fetch.read_range`` reads it
  with a Kafka consumer and yields Arrow batches.

Streaming offsets are ``{"topic": {"partition": next_offset}}``; Spark stores them in the
query's checkpoint, so a restarted query resumes where it stopped. Partitions (and, with
``subscribePattern``, topics) that appear while a query runs are read from their earliest
offset, as Spark documents. ``maxOffsetsPerTrigger`` caps a micro-batch, split across
partitions in proportion to their backlog; ``Trigger.AvailableNow`` reads up to the offsets
that were latest when the query started, then stops.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from spark_jobs import offsets as plan
from spark_jobs.fetch import read_range
from spark_jobs.offsets import OffsetRange, Offsets
from spark_jobs.options import SourceOptionError, SourceOptions

BASE_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
HEADERS_SCHEMA = StructType(
    [
        *BASE_SCHEMA.fields,
        StructField(
            "headers",
            ArrayType(
                StructType([StructField("key", StringType()), StructField("value", BinaryType())])
            ),
        ),
    ]
)


def _arrow_schema(schema: StructType) -> pa.Schema:
    # The exact Arrow schema Spark checks our batches against (timestamps in UTC).
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


class RangePartition(InputPartition):
    """One Spark partition: an ``OffsetRange`` (picklable; shipped to an executor)."""

    def __init__(self, span: OffsetRange) -> None:
        super().__init__(span)
        self.span = span

    def __repr__(self) -> str:
        s = self.span
        return f"RangePartition({s.topic}-{s.partition} [{s.start}, {s.end}))"


class WeirDataSource(DataSource):
    """``format("weir")``: Kafka-protocol topics as a DataFrame (batch and streaming)."""

    @classmethod
    def name(cls) -> str:
        return "weir"

    def schema(self) -> StructType:
        # Options both query kinds share are checked here so load() fails early, like Spark.
        SourceOptions.parse(_common(self.options), streaming=True)
        include = str(self.options.get("includeHeaders", "false")).strip().lower() == "true"
        return HEADERS_SCHEMA if include else BASE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return WeirBatchReader(SourceOptions.parse(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return WeirStreamReader(SourceOptions.parse(self.options, streaming=True), schema)


def _common(options: Any) -> dict[str, str]:
    """The options that mean the same in batch and streaming queries."""
    per_query = ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")
    return {k: v for k, v in dict(options).items() if k.lower() not in per_query}


class WeirBatchReader(DataSourceReader):
    """A batch query: ranges resolved once at planning, read by one task each."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        admin = plan.admin_client(self.options)
        ranges = plan.plan_batch(self.options, admin)
        pieces = plan.split_ranges(
            ranges,
            min_partitions=self.options.min_partitions,
            max_records=self.options.max_records_per_partition,
        )
        # Spark needs at least one partition; an empty one reads nothing.
        return [RangePartition(p) for p in pieces] or [RangePartition(OffsetRange("", 0, 0, 0))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        yield from read_range(self.options, partition.span, _arrow_schema(self.schema))


class WeirStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming query: offsets per micro-batch, checkpointed by Spark."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._admin: Any = None
        self._target: Offsets | None = None  # Trigger.AvailableNow's stopping point

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_admin"] = None  # a live client never travels
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def admin(self) -> Any:
        if self._admin is None:
            self._admin = plan.admin_client(self.options)
        return self._admin

    def initialOffset(self) -> dict:
        tps = plan.discover(self.options, self.admin)
        option = {"timestamp": "startingTimestamp", "timestamps": "startingOffsetsByTimestamp"}
        start = plan.resolve(
            self.options.starting,
            tps,
            self.admin,
            option=option.get(self.options.starting.kind, "startingOffsets"),
            is_start=True,
            strategy=self.options.timestamp_strategy,
        )
        return plan.to_json_offsets(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps = plan.discover(self.options, self.admin)
        self._target = plan.latest(self.admin, tps)

    def reportLatestOffset(self) -> dict | None:
        tps = plan.discover(self.options, self.admin)
        return plan.to_json_offsets(plan.latest(self.admin, tps))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = plan.from_json_offsets(start)
        if self._target is not None:
            newest = dict(self._target)
        else:
            newest = plan.latest(self.admin, plan.discover(self.options, self.admin))
        # A partition new since `start` is read from its earliest offset.
        fresh = [tp for tp in newest if tp not in begin]
        begin.update(plan.earliest(self.admin, fresh))
        end = {tp: max(newest[tp], begin[tp]) for tp in newest}
        for tp, offset in begin.items():
            end.setdefault(tp, offset)  # a partition gone from metadata keeps its position
        if isinstance(limit, ReadMaxRows):
            end = _cap(begin, end, limit.max_rows)
        return plan.to_json_offsets(end)

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin = plan.from_json_offsets(start)
        finish = plan.from_json_offsets(end)
        fresh = [tp for tp in finish if tp not in begin]
        begin.update(plan.earliest(self.admin, fresh))
        ranges = [
            OffsetRange(t, p, begin[(t, p)], finish[(t, p)])
            for (t, p) in sorted(finish)
            if finish[(t, p)] > begin[(t, p)]
        ]
        pieces = plan.split_ranges(
            ranges,
            min_partitions=self.options.min_partitions,
            max_records=self.options.max_records_per_partition,
        )
        return [RangePartition(p) for p in pieces]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, RangePartition)
        yield from read_range(self.options, partition.span, _arrow_schema(self.schema))

    def commit(self, end: dict) -> None:
        """Nothing to do: offsets live in Spark's checkpoint, never in Kafka."""

    def stop(self) -> None:
        self._admin = None


def _cap(begin: Offsets, end: Offsets, max_rows: int) -> Offsets:
    """``maxOffsetsPerTrigger``: share ``max_rows`` across partitions by backlog."""
    backlog = {tp: end[tp] - begin.get(tp, end[tp]) for tp in end}
    total = sum(backlog.values())
    if total <= max_rows:
        return end
    capped = dict(end)
    for tp, size in backlog.items():
        if size > 0:
            # floor keeps the sum within the limit; at least one offset so nothing starves
            capped[tp] = begin[tp] + max(1, math.floor(size * max_rows / total))
    return capped


__all__ = [
    "BASE_SCHEMA",
    "HEADERS_SCHEMA",
    "RangePartition",
    "SourceOptionError",
    "WeirBatchReader",
    "WeirDataSource",
    "WeirStreamReader",
]

"""Driver-side planning: which topic-partitions, which offsets, how many Spark partitions.

Theory of operation
-------------------
Planning talks to the cluster only through the Kafka protocol (confluent-kafka's
``AdminClient``): Metadata to find the partitions a subscription covers, ListOffsets to turn
"earliest", "latest" and timestamps into offsets. Nothing here reads records.

A plan is a list of ``OffsetRange`` — ``[start, end)`` of one topic-partition. Ranges are then
cut into Spark partitions (``split_ranges``): a range larger than ``maxRecordsPerPartition``
offsets is cut into near-equal pieces, and when ``minPartitions`` asks for more Spark
partitions than there are topic-partitions, every range is cut in proportion to its share of
the total, as Spark's Kafka source does. Offsets are positions, not record counts: on a
compacted topic a range may hold fewer records than ``end - start``; the reader copes.

Streaming offsets travel through Spark's checkpoint as JSON, ``{"topic": {"0": 42}}`` — the
same shape as Spark's Kafka source's offsets — converted here with ``to_json_offsets`` /
``from_json_offsets``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from spark_jobs.options import EARLIEST, LATEST, Position, SourceOptionError, SourceOptions

TP = tuple[str, int]
Offsets = dict[TP, int]
JsonOffsets = dict[str, dict[str, int]]

_REQUEST_TIMEOUT_S = 30.0


class OffsetLookupError(RuntimeError):
    """The cluster could not answer where a partition starts or ends."""


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition: one Spark partition's work."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def client_config(options: SourceOptions) -> dict[str, object]:
    """librdkafka settings shared by the planner and the readers (``kafka.*`` pass-through)."""
    config: dict[str, object] = {"bootstrap.servers": options.bootstrap_servers}
    config.update(options.kafka)
    return config


def admin_client(options: SourceOptions) -> AdminClient:
    return AdminClient(client_config(options))


def discover(options: SourceOptions, admin: AdminClient) -> list[TP]:
    """The topic-partitions the subscription covers now, sorted."""
    if options.subscription == "assign":
        metadata = admin.list_topics(timeout=_REQUEST_TIMEOUT_S)
        found: list[TP] = []
        for topic, partitions in options.assign.items():
            known = metadata.topics.get(topic)
            for partition in partitions:
                if known is None or known.error is not None or partition not in known.partitions:
                    raise SourceOptionError(
                        f"Option 'assign': partition {topic}-{partition} does not exist"
                    )
                found.append((topic, partition))
        return sorted(found)
    if options.subscription == "subscribe":
        metadata = admin.list_topics(timeout=_REQUEST_TIMEOUT_S)
        names: Iterable[str] = [t for t in options.topics if t in metadata.topics]
    else:
        metadata = admin.list_topics(timeout=_REQUEST_TIMEOUT_S)
        pattern = re.compile(options.pattern or "")
        names = [t for t in metadata.topics if pattern.fullmatch(t)]
    found = []
    for name in names:
        topic = metadata.topics[name]
        if topic.error is not None:
            continue  # e.g. being created or deleted: picked up by a later plan
        found.extend((name, p) for p in topic.partitions)
    return sorted(found)


def list_offsets(admin: AdminClient, requests: Mapping[TP, OffsetSpec]) -> dict[TP, int]:
    """One ListOffsets round (the client groups partitions by leader); -1 means no match."""
    if not requests:
        return {}
    last_error: Exception | None = None
    # Leaders move (elections, restarts): retry a few times like fetchOffset.numRetries.
    for attempt in range(4):
        try:
            futures = admin.list_offsets(
                {TopicPartition(t, p): spec for (t, p), spec in requests.items()},
                request_timeout=_REQUEST_TIMEOUT_S,
            )
            return {(tp.topic, tp.partition): f.result().offset for tp, f in futures.items()}
        except KafkaException as exc:
            last_error = exc
            time.sleep(0.2 * (attempt + 1))
    raise OffsetLookupError(f"ListOffsets failed: {last_error}") from last_error


def earliest(admin: AdminClient, tps: Iterable[TP]) -> Offsets:
    return list_offsets(admin, {tp: OffsetSpec.earliest() for tp in tps})


def latest(admin: AdminClient, tps: Iterable[TP]) -> Offsets:
    return list_offsets(admin, {tp: OffsetSpec.latest() for tp in tps})


def resolve(
    position: Position,
    tps: list[TP],
    admin: AdminClient,
    *,
    option: str,
    is_start: bool,
    strategy: str = "error",
) -> Offsets:
    """Turn a starting or ending ``Position`` into concrete offsets for ``tps``."""
    if position.kind == "earliest":
        return earliest(admin, tps)
    if position.kind == "latest":
        return latest(admin, tps)
    if position.kind == "offsets":
        wanted = {(t, p) for t, per in position.offsets.items() for p in per}
        if wanted != set(tps):
            missing = sorted(set(tps) - wanted)
            extra = sorted(wanted - set(tps))
            raise SourceOptionError(
                f"If '{option}' contains specific offsets, you must specify all "
                f"TopicPartitions. Missing: {_names(missing)}; not subscribed: {_names(extra)}"
            )
        offsets = {tp: position.offsets[tp[0]][tp[1]] for tp in tps}
        lows = earliest(admin, [tp for tp, o in offsets.items() if o == EARLIEST])
        highs = latest(admin, [tp for tp, o in offsets.items() if o == LATEST])
        return {tp: lows.get(tp, highs.get(tp, o)) for tp, o in offsets.items()}
    # by timestamp: the first offset whose timestamp is >= the one asked for
    if position.kind == "timestamp":
        stamps = {tp: int(position.timestamp or 0) for tp in tps}
    else:
        stamps = {}
        for tp in tps:
            per = position.offsets.get(tp[0], {})
            if tp[1] not in per:
                raise SourceOptionError(
                    f"Option '{option}' has no timestamp for partition {tp[0]}-{tp[1]}"
                )
            stamps[tp] = per[tp[1]]
    found = list_offsets(admin, {tp: OffsetSpec.for_timestamp(ts) for tp, ts in stamps.items()})
    unmatched = [tp for tp, offset in found.items() if offset < 0]
    if unmatched and is_start and strategy == "error":
        raise OffsetLookupError(
            f"No offset matched the timestamp of option '{option}' for partitions "
            f"{_names(sorted(unmatched))} (set startingOffsetsByTimestampStrategy=latest to "
            "start these at the latest offset instead)"
        )
    highs = latest(admin, unmatched)
    return {tp: (offset if offset >= 0 else highs[tp]) for tp, offset in found.items()}


def plan_batch(options: SourceOptions, admin: AdminClient) -> list[OffsetRange]:
    """The ``[start, end)`` range of every subscribed partition for a batch query."""
    tps = discover(options, admin)
    start = resolve(
        options.starting,
        tps,
        admin,
        option=_start_option(options),
        is_start=True,
        strategy=options.timestamp_strategy,
    )
    end = resolve(options.ending, tps, admin, option=_end_option(options), is_start=False)
    ranges = []
    for tp in tps:
        if end[tp] < start[tp]:
            raise SourceOptionError(
                f"Ending offset {end[tp]} of {tp[0]}-{tp[1]} is before its starting offset "
                f"{start[tp]}"
            )
        ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
    return ranges


def split_ranges(
    ranges: Iterable[OffsetRange], *, min_partitions: int | None, max_records: int
) -> list[OffsetRange]:
    """Cut ranges into Spark partitions (empty ranges are dropped: nothing to read)."""
    nonempty = [r for r in ranges if r.size > 0]
    total = sum(r.size for r in nonempty)
    pieces: list[OffsetRange] = []
    for r in nonempty:
        parts = math.ceil(r.size / max_records)
        if min_partitions and min_partitions > len(nonempty):
            parts = max(parts, math.ceil(r.size * min_partitions / total))
        parts = min(parts, r.size)
        for i in range(parts):
            lo = r.start + r.size * i // parts
            hi = r.start + r.size * (i + 1) // parts
            pieces.append(OffsetRange(r.topic, r.partition, lo, hi))
    return pieces


def to_json_offsets(offsets: Mapping[TP, int]) -> JsonOffsets:
    result: JsonOffsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        result.setdefault(topic, {})[str(partition)] = int(offset)
    return result


def from_json_offsets(data: Mapping[str, Mapping[str, int]]) -> Offsets:
    return {(t, int(p)): int(o) for t, per in data.items() for p, o in per.items()}


def _names(tps: Iterable[TP]) -> str:
    return ", ".join(f"{t}-{p}" for t, p in tps) or "none"


def _start_option(options: SourceOptions) -> str:
    return {
        "timestamp": "startingTimestamp",
        "timestamps": "startingOffsetsByTimestamp",
    }.get(options.starting.kind, "startingOffsets")


def _end_option(options: SourceOptions) -> str:
    return {
        "timestamp": "endingTimestamp",
        "timestamps": "endingOffsetsByTimestamp",
    }.get(options.ending.kind, "endingOffsets")

"""Replaying dead letters to their original topic (or another), and purging what was replayed.

Theory of operation
-------------------
A replay is asked for as a :class:`ReplayRequest`: selected records (partition and offset),
offset ranges, or everything the DLQ holds now (``all``, turned into ranges up to the high
watermarks of the moment it was asked, so it is bounded), filters for ranges (original
topic, exception text, key/value text: the browser's filters), an optional target topic
and ``purge``.

Every replay first *plans* (:func:`plan`): it reads the selection once and works out where
each record goes without producing anything. A record goes to ``target_topic`` when one is
given, otherwise to the original topic its error headers name (:mod:`dlq.headers`); to its
original partition when it goes back to its original topic and that partition exists,
otherwise to the partition the key chooses (murmur2, the Java client's partitioner, so keyed
records land where a Java producer would put them). Records that name no original topic,
targets that do not exist, selected offsets that are not in the topic, and a ``purge`` that
would delete records the replay does not cover are *problems*: a plan with problems is
refused, whole. The dry run is the plan.

A real replay is a job (:mod:`controlplane.jobs`, kind ``dlq-replay``) run by a Celery worker:
it plans again (the DLQ may have changed since it was asked), then reads the selection a
second time and produces every record with an idempotent producer (``enable.idempotence``,
``acks=all``), so broker retries neither duplicate nor reorder what it writes; it counts the
delivery reports, and only when every record was acknowledged does it purge. Replayed records
keep their key, value and headers, minus the failure's headers, plus ``weir.replay.count``
and ``weir.replay.source`` (:func:`dlq.headers.replay_headers`); their timestamp is the time
of the replay (the original record's may be older than the target's retention).

*Purge* is Kafka's DeleteRecords on the DLQ's partitions: everything before an offset goes.
After a replay it deletes, per partition, up to the end of what was replayed, and only when
the replay covered every record from the log start to there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Message, Producer, TopicPartition

from controlplane.cluster import gateway
from controlplane.errors import BadRequest, KafkaUnavailable
from dlq import selectors
from dlq.headers import error_context, origin, replay_headers
from topics import messages
from topics import selectors as topic_selectors

__all__ = [
    "MAX_SELECTED",
    "ReplayPlan",
    "ReplayRequest",
    "ReplayResult",
    "plan",
    "purge",
    "replay",
]

MAX_SELECTED = 10_000  # records one request may pick by offset
SAMPLE = 20
MAX_PROBLEMS = 20
# A replay's reader gives up when no record arrives for this long (a leader lost mid-read).
IDLE_TIMEOUT_S = 30.0
Progress = Callable[[float, str], None]


def _no_progress(fraction: float, message: str = "") -> None:
    return None


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    """What to replay, checked against the DLQ (see :meth:`resolve`)."""

    topic: str
    # partition -> (start, end): the offsets to read; ``selected`` narrows them to picked ones.
    ranges: dict[int, tuple[int, int]]
    selected: dict[int, frozenset[int]] | None = None
    where: selectors.RecordFilter = field(default_factory=selectors.RecordFilter)
    target_topic: str | None = None
    purge: bool = False

    @classmethod
    def resolve(
        cls,
        *,
        topic: str,
        records: list[dict[str, int]] | None = None,
        ranges: list[dict[str, int]] | None = None,
        everything: bool = False,
        original_topic: str | None = None,
        exception: str | None = None,
        text: str | None = None,
        target_topic: str | None = None,
        purge: bool = False,
    ) -> ReplayRequest:
        """A request from the API's body: exactly one of ``records``, ``ranges`` and
        ``everything``; partitions and offsets checked against the DLQ's bounds now."""
        found = selectors.dlq_get(name=topic)
        given = sum(bool(x) for x in (records, ranges, everything))
        if given != 1:
            raise BadRequest("give exactly one of records, ranges and all")
        if records and (original_topic or exception or text):
            raise BadRequest("original_topic, exception and q filter ranges and all, not records")
        if target_topic is not None:
            topic_selectors.topic_get(name=target_topic)
            if target_topic == topic:
                raise BadRequest(f"target_topic {target_topic!r} is the DLQ itself")

        def bounds(partition: int) -> messages.PartitionBounds:
            selectors.check_partition(found, partition)
            return messages.partition_bounds(topic=topic, partition=partition)

        spans: dict[int, tuple[int, int]] = {}
        selected: dict[int, frozenset[int]] | None = None
        if everything:
            for partition in sorted(found.partitions):
                b = bounds(partition)
                if b.high_watermark > b.log_start_offset:
                    spans[partition] = (b.log_start_offset, b.high_watermark)
        elif ranges:
            for item in ranges:
                partition, start, end = item["partition"], item["start_offset"], item["end_offset"]
                b = bounds(partition)
                if partition in spans:
                    raise BadRequest(f"partition {partition} is given twice in ranges")
                if start >= end:
                    raise BadRequest(f"range {start}..{end} of partition {partition} is empty")
                if start < b.log_start_offset or end > b.high_watermark:
                    raise BadRequest(
                        f"range {start}..{end} (end exclusive) is out of range: {b.describe()}"
                    )
                spans[partition] = (start, end)
        else:
            assert records is not None
            if len(records) > MAX_SELECTED:
                raise BadRequest(
                    f"{len(records)} records selected; select at most {MAX_SELECTED} "
                    "or replay a range"
                )
            picked: dict[int, set[int]] = {}
            for item in records:
                picked.setdefault(item["partition"], set()).add(item["offset"])
            for partition, offsets in picked.items():
                b = bounds(partition)
                outside = sorted(
                    o for o in offsets if not b.log_start_offset <= o < b.high_watermark
                )
                if outside:
                    raise BadRequest(f"offset {outside[0]} is out of range: {b.describe()}")
                spans[partition] = (min(offsets), max(offsets) + 1)
            selected = {p: frozenset(o) for p, o in picked.items()}
        if not spans:
            raise BadRequest(f"dead letter queue {topic!r} holds no records to replay")
        if purge:
            # A purge deletes from the log start: the read must begin there to prove every
            # record before the purge point was replayed.
            for partition, (_, end) in list(spans.items()):
                spans[partition] = (bounds(partition).log_start_offset, end)
        return cls(
            topic=topic,
            ranges=spans,
            selected=selected,
            where=selectors.RecordFilter(
                original_topic=original_topic, exception=exception, text=text
            ),
            target_topic=target_topic,
            purge=purge,
        )

    def to_params(self) -> dict[str, Any]:
        """The request as a job's JSON params (the resolved ranges, not ``all``)."""
        return {
            "topic": self.topic,
            "ranges": {str(p): list(r) for p, r in self.ranges.items()},
            "selected": (
                None
                if self.selected is None
                else {str(p): sorted(o) for p, o in self.selected.items()}
            ),
            "original_topic": self.where.original_topic,
            "exception": self.where.exception,
            "q": self.where.text,
            "target_topic": self.target_topic,
            "purge": self.purge,
        }

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> ReplayRequest:
        selected = params.get("selected")
        return cls(
            topic=params["topic"],
            ranges={int(p): (int(r[0]), int(r[1])) for p, r in params["ranges"].items()},
            selected=(
                None if selected is None else {int(p): frozenset(o) for p, o in selected.items()}
            ),
            where=selectors.RecordFilter(
                original_topic=params.get("original_topic"),
                exception=params.get("exception"),
                text=params.get("q"),
            ),
            target_topic=params.get("target_topic"),
            purge=bool(params.get("purge")),
        )

    def offsets(self) -> int:
        return sum(end - start for start, end in self.ranges.values())


@dataclass(slots=True)
class ReplayPlan:
    """Where a request's records go (the dry run's answer)."""

    scanned: int = 0
    matched: int = 0
    skipped: int = 0
    targets: dict[tuple[str, int | None], int] = field(default_factory=dict)
    sample: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    purge: dict[int, int] | None = None  # partition -> before offset

    def problem(self, text: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)

    def as_dict(self) -> dict[str, Any]:
        problems = list(self.problems)
        if self.problem_count > len(problems):
            problems.append(f"... and {self.problem_count - len(problems)} more problems")
        return {
            "scanned": self.scanned,
            "matched": self.matched,
            "skipped": self.skipped,
            "targets": [
                {"topic": t, "partition": p, "records": n}
                for (t, p), n in sorted(self.targets.items(), key=lambda i: (i[0][0], i[0][1] or 0))
            ],
            "sample": self.sample,
            "problems": problems,
            "purge": (
                None
                if self.purge is None
                else [{"partition": p, "before_offset": o} for p, o in sorted(self.purge.items())]
            ),
        }


Origin = tuple[str | None, int | None]  # (original topic, original partition)


def _chosen(where: selectors.RecordFilter, message: Message, found: Origin) -> bool:
    """A range's filters: only the exception filter needs the whole error context."""
    if where.exception:
        return where.matches(message, error_context(message.headers()))
    if where.original_topic and found[0] != where.original_topic:
        return False
    return where.matches_text(message)


def _walk(
    request: ReplayRequest, progress: Progress, *, share: float, base: float = 0.0
) -> Iterator[tuple[int, Message, Origin, bool]]:
    """Every record of the request's ranges as ``(partition, message, origin, chosen)``,
    partition by partition in offset order, one reader per partition; ``progress`` moves
    over ``share`` of the bar every 1,000 offsets."""
    total = max(1, request.offsets())
    done = 0
    for partition, (start, end) in sorted(request.ranges.items()):
        picked = request.selected.get(partition) if request.selected is not None else None
        reader = messages.RangeReader(
            topic=request.topic,
            partition=partition,
            start=start,
            end=end,
            idle_timeout_s=IDLE_TIMEOUT_S,
        )
        reported = position = start
        for message in reader:
            found = origin(message.headers())
            offset = message.offset()
            if picked is not None:
                chosen = offset in picked
            else:
                chosen = _chosen(request.where, message, found)
            yield partition, message, found, chosen
            position = offset + 1
            if position - reported >= 1000:
                done += position - reported
                reported = position
                progress(base + share * done / total, f"read {done} of {total} offsets")
        if not reader.complete:
            raise KafkaUnavailable(
                f"reading {request.topic}-{partition} stopped at offset {position}: "
                f"no record arrived for {IDLE_TIMEOUT_S:.0f} s"
            )
        done += end - reported
        progress(base + share * done / total, f"read {done} of {total} offsets")


def _destination(
    request: ReplayRequest, found: Origin, partitions: dict[str, int]
) -> tuple[str | None, int | None]:
    """(target topic, target partition or None for "by key") of one record."""
    if request.target_topic is not None:
        return request.target_topic, None
    name, same = found
    if name is None:
        return None, None
    count = partitions.get(name)
    if count is not None and same is not None and 0 <= same < count:
        return name, same
    return name, None


def _partition_counts() -> dict[str, int]:
    return {t.name: len(t.partitions) for t in topic_selectors.topic_list()}


def plan(
    request: ReplayRequest, progress: Progress = _no_progress, share: float = 1.0
) -> ReplayPlan:
    """Read the request's records once and work out where each goes; produce nothing."""
    result = ReplayPlan()
    partitions = _partition_counts()
    picked_found: dict[int, set[int]] = {}  # of a selection: the picked offsets read
    not_replayed: dict[int, int] = {}  # partition -> first offset read but not replayed
    for partition, message, found, chosen in _walk(request, progress, share=share):
        result.scanned += 1
        offset = message.offset()
        if chosen and request.selected is not None:
            picked_found.setdefault(partition, set()).add(offset)
        if not chosen:
            result.skipped += 1
            not_replayed.setdefault(partition, offset)
            continue
        topic, target_partition = _destination(request, found, partitions)
        if topic is None:
            result.problem(
                f"offset {offset} of partition {partition} names no original topic in its "
                "headers; give target_topic"
            )
            continue
        if topic not in partitions:
            result.problem(
                f"offset {offset} of partition {partition} goes to topic {topic!r}, "
                "which does not exist"
            )
            continue
        result.matched += 1
        where = (topic, target_partition)
        result.targets[where] = result.targets.get(where, 0) + 1
        if len(result.sample) < SAMPLE:
            result.sample.append(
                {
                    "partition": partition,
                    "offset": offset,
                    "target_topic": topic,
                    "target_partition": target_partition,
                }
            )
    if request.selected is not None:
        for partition, offsets in sorted(request.selected.items()):
            missing = sorted(offsets - picked_found.get(partition, set()))
            if missing:
                result.problem(
                    f"offset {missing[0]} of partition {partition} holds no record "
                    "(compacted away, a transaction marker, or deleted since it was listed)"
                )
    if request.purge:
        result.purge = {}
        for partition, (_, end) in sorted(request.ranges.items()):
            if partition in not_replayed:
                result.problem(
                    f"purge would delete offset {not_replayed[partition]} of partition "
                    f"{partition}, which this replay does not cover; replay everything "
                    "before the purge point, or purge without a filter"
                )
            result.purge[partition] = end
    if result.matched == 0 and not result.problem_count:
        result.problem("no record matches: nothing to replay")
    return result


@dataclass(slots=True)
class ReplayResult:
    plan: ReplayPlan
    replayed: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    purged: list[dict[str, int]] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "replayed": self.replayed,
            "failed": self.failed,
            "skipped": self.plan.skipped,
            "targets": self.plan.as_dict()["targets"],
            "purged": self.purged,
        }


class _Deliveries:
    """Counts the producer's delivery reports (called on the thread that polls)."""

    def __init__(self) -> None:
        self.acknowledged = 0
        self.failed = 0
        self.first_error: str | None = None
        self._lock = threading.Lock()

    def __call__(self, error: Any, message: Message) -> None:
        with self._lock:
            if error is None:
                self.acknowledged += 1
                return
            self.failed += 1
            if self.first_error is None:
                self.first_error = (
                    f"{message.topic()}-{message.partition()}: {error.str()} "
                    f"(record from {dict(message.headers() or []).get('weir.replay.source')!r})"
                )


def _producer() -> Producer:
    return Producer(
        gateway().client_config(
            **{
                "client.id": "weir-dlq-replay",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "partitioner": "murmur2_random",
                "message.timeout.ms": 120_000,
            }
        )
    )


def replay(request: ReplayRequest, progress: Progress = _no_progress) -> ReplayResult:
    """Plan, then produce every planned record; purge when asked and all were acknowledged."""
    progress(0.0, "planning")
    checked = plan(request, progress, share=0.1)
    result = ReplayResult(plan=checked)
    if checked.problem_count:
        result.errors = checked.as_dict()["problems"]
        return result
    partitions = _partition_counts()
    producer = _producer()
    deliveries = _Deliveries()
    produced = 0
    total = max(1, checked.matched)
    try:
        for partition, message, found, chosen in _walk(request, _no_progress, share=0.0):
            if not chosen:
                continue
            topic, target_partition = _destination(request, found, partitions)
            if topic is None or topic not in partitions:
                deliveries.failed += 1  # the DLQ changed since the plan; counted, not sent
                continue
            extra = {} if target_partition is None else {"partition": target_partition}
            headers = replay_headers(
                message.headers(), source=f"{request.topic}/{partition}/{message.offset()}"
            )
            while True:
                try:
                    producer.produce(
                        topic,
                        key=message.key(),
                        value=message.value(),
                        headers=headers,
                        on_delivery=deliveries,
                        **extra,
                    )
                    break
                except BufferError:
                    producer.poll(0.1)  # the local queue is full: let deliveries drain it
            produced += 1
            producer.poll(0)
            if produced % 1000 == 0:
                progress(0.1 + 0.85 * produced / total, f"produced {produced} of {total}")
        progress(0.95, f"waiting for {len(producer)} acknowledgements")
        deadline = time.monotonic() + 180
        while len(producer) and time.monotonic() < deadline:
            producer.flush(1.0)
    finally:
        unsent = len(producer)
    result.replayed = deliveries.acknowledged
    result.failed = deliveries.failed + unsent
    if result.failed or result.replayed != checked.matched:
        result.errors.append(
            f"{result.replayed} of {checked.matched} records acknowledged, {result.failed} "
            f"failed{': ' + deliveries.first_error if deliveries.first_error else ''}; "
            "nothing was purged"
        )
        return result
    if request.purge and checked.purge:
        progress(0.98, "purging the replayed records")
        result.purged = purge(topic=request.topic, before=checked.purge)
    progress(1.0, f"{result.replayed} records replayed")
    return result


def purge(*, topic: str, before: dict[int, int]) -> list[dict[str, int]]:
    """DeleteRecords on the DLQ: per partition, every record before the given offset.
    Returns each partition's new log start (``low_watermark``)."""
    found = selectors.dlq_get(name=topic)
    if not before:
        raise BadRequest("give the partitions to purge")
    wanted = []
    for partition, offset in sorted(before.items()):
        selectors.check_partition(found, partition)
        bounds = messages.partition_bounds(topic=topic, partition=partition)
        if not bounds.log_start_offset <= offset <= bounds.high_watermark:
            raise BadRequest(
                f"before_offset {offset} of partition {partition} is out of range: "
                f"{bounds.describe()} (before_offset may be at most {bounds.high_watermark})"
            )
        wanted.append(TopicPartition(topic, partition, offset))
    futures = gateway().admin().delete_records(wanted, request_timeout=30, operation_timeout=30)
    done = []
    for tp, future in futures.items():
        try:
            deleted = future.result()
        except KafkaException as exc:
            raise KafkaUnavailable(
                f"deleting records of {topic}-{tp.partition}: {exc.args[0].str()}"
            ) from None
        done.append({"partition": tp.partition, "low_watermark": deleted.low_watermark})
    return sorted(done, key=lambda d: d["partition"])

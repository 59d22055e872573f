"""Reads for dead letter queues: which topics are DLQs, and their records with error context.

Theory of operation
-------------------
A topic is a dead letter queue when its name matches ``WEIR_DLQ_TOPIC_PATTERN`` (a regular
expression matched against the whole name; the default catches the usual ``dlq``, ``dlt``
and ``dead-letter`` spellings, Spring's ``<topic>-dlt`` / ``<topic>.DLT`` among them) or when
its newest record carries Kafka Connect's or Spring's dead-letter headers (:mod:`dlq.headers`).

Looking at headers means reading records, so it is done incrementally: the newest record of
each partition is read only when that partition's high watermark moved since the last look
(the leaders publish their high watermarks to Redis every second, so noticing costs no Kafka
request), and what was found is kept in one Redis hash per cluster,
``weir:<cluster>:dlq:headers`` (topic → ``{"found", "convention", "checked"}``), shared by
every web process and the monitor. The list API looks with a short time budget, the
monitor's periodic task with a longer one, so a cluster of thousands of topics is covered a
slice at a time and a found DLQ stays found.

Records are browsed as :mod:`topics.messages` reads them (an assigned consumer that joins no
group and commits nothing), forward from a position, with the error context parsed and the
browser's filters (original topic, exception text, key/value text) applied while scanning.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from confluent_kafka import KafkaError, Message, TopicPartition
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from controlplane.cluster import gateway
from controlplane.errors import BadRequest, NotFound
from dlq.headers import ErrorContext, error_context, has_error_headers
from topics import messages, selectors
from weir.metadata.image import TopicImage

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "MAX_SCAN",
    "DlqTopic",
    "RecordFilter",
    "RecordPage",
    "check_partition",
    "detect_header_topics",
    "dlq_get",
    "dlq_list",
    "record_list",
    "topic_pattern",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
# A page stops after scanning this many records even if fewer matched (``next`` resumes).
MAX_SCAN = 20_000
# How long a list call may spend reading newest records to find header DLQs; the monitor's
# periodic task gives itself longer (dlq.periodic).
LIST_DETECT_BUDGET_S = 1.0
_READ_WAIT_S = 0.2


@lru_cache(maxsize=8)
def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ImproperlyConfigured(
            f"WEIR_DLQ_TOPIC_PATTERN {pattern!r} is not a regular expression: {exc}"
        ) from None


def topic_pattern() -> re.Pattern[str]:
    """``WEIR_DLQ_TOPIC_PATTERN`` compiled (ImproperlyConfigured naming it when invalid)."""
    return _compiled(settings.WEIR_DLQ_TOPIC_PATTERN)


@dataclass(frozen=True, slots=True)
class DlqTopic:
    name: str
    partitions: int
    records: int
    detected_by: str  # "pattern" or "headers"

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "partitions": self.partitions,
            "records": self.records,
            "detected_by": self.detected_by,
        }


def _detection_key() -> str:
    return gateway().keys.key("dlq:headers")


def _signature(topic: TopicImage, states: dict[tuple[str, int], Any]) -> str | None:
    """The topic's high watermarks as one string, or None when a partition's state is
    unknown (its leader has not published yet) or every partition is empty."""
    marks = []
    for p in sorted(topic.partitions):
        state = states.get((topic.name, p))
        if state is None:
            return None
        marks.append(f"{state.log_start_offset}-{state.high_watermark}")
    if all(s.split("-")[0] == s.split("-")[1] for s in marks):
        return None
    return ",".join(marks)


def _newest_records(
    partitions: Iterable[tuple[str, int, int]], *, deadline: float
) -> tuple[dict[tuple[str, int], Message], set[tuple[str, int]]]:
    """The record at ``high watermark - 1`` of each ``(topic, partition, hw)``, as many as
    arrive before ``deadline``, and the partitions looked at in time (a compacted-away record
    or a transaction marker there is looked at and yields none)."""
    wanted = {(t, p): hw - 1 for t, p, hw in partitions if hw > 0}
    if not wanted:
        return {}, set()
    consumer = messages.consumer(eof=True)
    found: dict[tuple[str, int], Message] = {}
    done: set[tuple[str, int]] = set()
    try:
        consumer.assign([TopicPartition(t, p, offset) for (t, p), offset in wanted.items()])
        while len(done) < len(wanted) and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=500, timeout=_READ_WAIT_S):
                error = message.error()
                where = (message.topic(), message.partition())
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        done.add(where)
                    continue
                if where not in found:
                    found[where] = message
                    done.add(where)
    finally:
        consumer.close()
    return found, done


def detect_header_topics(*, budget_s: float, topics: list[TopicImage] | None = None) -> set[str]:
    """Topics whose newest record carries dead-letter headers (see the module docstring):
    reads the partitions that changed since the last look, within ``budget_s``, and returns
    every topic found so far (this look's and earlier ones')."""
    gw = gateway()
    topics = topics if topics is not None else selectors.topic_list()
    key = _detection_key()
    known = {name: json.loads(raw) for name, raw in gw.redis.hgetall(key).items()}
    existing = {t.name for t in topics}
    gone = [name for name in known if name not in existing]
    if gone:
        gw.redis.hdel(key, *gone)
    states, _ = gw.partition_states()
    pattern = topic_pattern()
    stale: dict[str, str] = {}
    for topic in topics:
        if selectors.topic_is_internal(topic.name) or pattern.fullmatch(topic.name):
            continue
        if known.get(topic.name, {}).get("found"):
            continue  # once a DLQ, always one (until deleted)
        signature = _signature(topic, states)
        if signature is not None and known.get(topic.name, {}).get("checked") != signature:
            stale[topic.name] = signature
    deadline = time.monotonic() + budget_s
    by_name = {t.name: t for t in topics}
    updates: dict[str, str] = {}
    names = sorted(stale)
    # A slice at a time, so the budget ends with whole topics looked at and recorded.
    for start in range(0, len(names), 100):
        if time.monotonic() >= deadline:
            break
        chunk = names[start : start + 100]
        wanted = [
            (name, p, states[(name, p)].high_watermark)
            for name in chunk
            for p in by_name[name].partitions
            if states[(name, p)].high_watermark > states[(name, p)].log_start_offset
        ]
        newest, done = _newest_records(wanted, deadline=deadline)
        for name in chunk:
            found = any(has_error_headers(m.headers()) for (t, _), m in newest.items() if t == name)
            looked = sum(1 for t, _ in done if t == name)
            partitions_read = sum(1 for t, _, _ in wanted if t == name)
            if found or looked == partitions_read:
                updates[name] = json.dumps({"found": found, "checked": stale[name]})
                known[name] = {"found": found}
    if updates:
        gw.redis.hset(key, mapping=updates)
    return {name for name, entry in known.items() if entry.get("found")}


def dlq_list(*, detect_budget_s: float = LIST_DETECT_BUDGET_S) -> list[DlqTopic]:
    """Every DLQ topic, by name, with its partition and record counts."""
    topics = [t for t in selectors.topic_list() if not selectors.topic_is_internal(t.name)]
    by_headers = detect_header_topics(budget_s=detect_budget_s, topics=topics)
    pattern = topic_pattern()
    states, _ = gateway().partition_states()
    found = []
    for topic in topics:
        if pattern.fullmatch(topic.name):
            detected_by = "pattern"
        elif topic.name in by_headers:
            detected_by = "headers"
        else:
            continue
        records = 0
        for p in topic.partitions:
            state = states.get((topic.name, p))
            if state is not None:
                records += max(0, state.high_watermark - state.log_start_offset)
        found.append(
            DlqTopic(
                name=topic.name,
                partitions=len(topic.partitions),
                records=records,
                detected_by=detected_by,
            )
        )
    return found


def dlq_get(*, name: str) -> TopicImage:
    """The topic ``name`` when it is a DLQ; 404 when it does not exist or is no DLQ."""
    topic = selectors.topic_get(name=name)
    if topic_pattern().fullmatch(name):
        return topic
    known = gateway().redis.hget(_detection_key(), name)
    if known is not None and json.loads(known).get("found"):
        return topic
    if name in detect_header_topics(budget_s=LIST_DETECT_BUDGET_S, topics=[topic]):
        return topic
    raise NotFound(
        f"topic {name!r} is not a dead letter queue: its name does not match "
        f"WEIR_DLQ_TOPIC_PATTERN ({settings.WEIR_DLQ_TOPIC_PATTERN}) and its newest records "
        "carry no Kafka Connect or Spring dead-letter headers"
    )


# -- records -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RecordFilter:
    """The browser's and a range replay's filters; empty fields do not filter."""

    original_topic: str | None = None
    exception: str | None = None
    text: str | None = None  # substring of the key or value (ASCII case ignored)

    def matches(self, message: Message, context: ErrorContext) -> bool:
        if not context.matches(original_topic=self.original_topic, exception=self.exception):
            return False
        return self.matches_text(message)

    def matches_text(self, message: Message) -> bool:
        if self.text:
            needle = self.text.encode("utf-8").lower()
            key, value = message.key() or b"", message.value() or b""
            return needle in key.lower() or needle in value.lower()
        return True


@dataclass(frozen=True, slots=True)
class RecordPage:
    topic: str
    partition: int
    partitions: int
    log_start_offset: int
    high_watermark: int
    start: int
    next: int | None
    scanned: int
    records: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "partitions": self.partitions,
            "log_start_offset": self.log_start_offset,
            "high_watermark": self.high_watermark,
            "start": self.start,
            "next": self.next,
            "scanned": self.scanned,
            "records": self.records,
        }


def record_list(
    *,
    topic: str,
    partition: int = 0,
    start: int | None = None,
    limit: int = DEFAULT_LIMIT,
    where: RecordFilter | None = None,
) -> RecordPage:
    """Up to ``limit`` records of one DLQ partition from ``start`` (default: its log start)
    that pass ``where``, each with its error context; ``next`` continues the scan."""
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit {limit} must be between 1 and {MAX_LIMIT}")
    found = dlq_get(name=topic)
    bounds = messages.partition_bounds(topic=topic, partition=partition)
    low, high = bounds.log_start_offset, bounds.high_watermark
    start = low if start is None else start
    if not low <= start <= high:
        raise BadRequest(f"start {start} is out of range: {bounds.describe()}")
    where = where or RecordFilter()
    records: list[dict[str, Any]] = []

    def keep(message: Message) -> bool:
        context = error_context(message.headers())
        if where.matches(message, context):
            records.append({**messages.record(message), "error": context.as_dict()})
        return len(records) < limit

    end = min(high, start + MAX_SCAN)
    reached = messages.scan(topic=topic, partition=partition, start=start, end=end, visit=keep)
    return RecordPage(
        topic=topic,
        partition=partition,
        partitions=len(found.partitions),
        log_start_offset=low,
        high_watermark=high,
        start=start,
        next=None if reached >= high else reached,
        scanned=reached - start,
        records=records,
    )


def check_partition(topic: TopicImage, partition: int) -> None:
    """400 naming the topic's partitions when ``partition`` is not one of them."""
    if partition not in topic.partitions:
        raise BadRequest(
            f"topic {topic.name!r} has no partition {partition} "
            f"(partitions 0 to {len(topic.partitions) - 1})"
        )

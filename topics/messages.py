"""Reading records for people: browse a partition, search it, tail it.

Theory of operation
-------------------
The dashboard and ``/api/topics/<t>/partitions/<p>/messages/`` read records the way a
consumer does, but never as a member of a group: a confluent-kafka ``Consumer`` is
``assign()``-ed to the one partition at a computed offset, with auto-commit off, so reading
leaves no trace (no group joins, no committed offsets). librdkafka does the fetching,
decompression and control-record skipping; this module only decides *which* offsets to read.

Every read is bounded before a consumer exists: the partition's log start offset and high
watermark come from its leader (ListOffsets through the gateway's shared connections, exact
right after a produce), a timestamp becomes an offset the same way (ListOffsets by time, what
``offsets_for_times`` does), and the requested position is checked against them so bad input
is a 400 naming the valid range, not a read that waits for records that will never come.
The consumer then reads ``[start, end)``; end-of-partition (``enable.partition.eof``) stops it
early when compaction or transactions left gaps.

* :func:`message_list` — up to ``MAX_LIMIT`` records from the end, the beginning, an offset or
  a timestamp, oldest first or newest first (newest first reads ``[anchor - limit, anchor)``
  and reverses it, so it costs the same as oldest first).
* :func:`message_search` — one chunk of a bounded key/value substring scan; the browser drives
  the chunks (each one a request the user started) and shows the progress.
* :class:`PartitionTail` — a long-lived assigned consumer for a live socket: it starts at the
  high watermark and returns whatever arrived since the last poll.

Records are rendered for display by :func:`render_bytes`: a record in Confluent's framing is
decoded through the schema registry (named by its schema id and subjects), a JSON object or
array is pretty-printed, other UTF-8 text is shown as text, anything else as hex and base64. Large
fields are cut (``SHOWN_BYTES`` of text, ``SHOWN_BINARY_BYTES`` of binary; the full size is
reported) so one huge record cannot make a page of 500 unreadable. Scans visit records as
they come (:func:`scan`) instead of collecting them, so a search chunk over large records
holds one fetch at a time.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from controlplane.cluster import gateway
from controlplane.errors import BadRequest, KafkaUnavailable
from controlplane.validation import iso_datetime_ms
from schemaregistry.serde import decode_framed
from topics import selectors

__all__ = [
    "DEFAULT_CHUNK",
    "DEFAULT_LIMIT",
    "MAX_CHUNK",
    "MAX_LIMIT",
    "MAX_SEARCH_RANGE",
    "MessagePage",
    "PartitionBounds",
    "PartitionTail",
    "RangeReader",
    "SearchChunk",
    "consumer",
    "message_list",
    "message_search",
    "parse_timestamp",
    "partition_bounds",
    "record",
    "render_bytes",
    "scan",
]

DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_SEARCH_RANGE = 100_000
DEFAULT_CHUNK = 5_000
MAX_CHUNK = 20_000
# A chunk stops after this many matches (its ``next`` resumes right after the last one), so
# a query matching everything still answers with a bounded body.
MAX_MATCHES_PER_CHUNK = 100
# What a record shows of a large key or value: text up to 32 KiB, binary (as hex and base64,
# three and 1.3 bytes per byte) up to 4 KiB, so 500 records stay a page, not a download.
SHOWN_BYTES = 32 * 1024
SHOWN_BINARY_BYTES = 4 * 1024
# A read that has seen no record for this long returns what it has.
READ_TIMEOUT_S = 10.0
TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}

Field = Literal["key", "value"]


# -- rendering ---------------------------------------------------------------------------------
def _is_text(text: str) -> bool:
    """UTF-8 that reads as text: no control characters besides tab and line breaks."""
    return not any((ord(c) < 32 and c not in "\t\n\r") or ord(c) == 127 for c in text)


def _utf8(data: bytes, *, cut: bool) -> str | None:
    """``data`` as UTF-8, or None; a ``cut`` may have split the last character (≤ 3 bytes)."""
    for dropped in range(4 if cut else 1):
        try:
            return data[: len(data) - dropped].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return None


def render_bytes(data: bytes | None, *, schema_aware: bool = True) -> dict[str, Any] | None:
    """``data`` for display: ``{"format": json|text|binary, "size", "truncated", ...}``.

    ``json`` and ``text`` carry ``text`` (JSON pretty-printed); ``binary`` carries ``hex`` and
    ``base64``. A record in Confluent's framing (magic byte 0, schema id) whose schema the
    registry holds is decoded with it: ``json`` plus ``schema`` (``{"id", "type",
    "subjects"}``); ``schema_aware=False`` (header values) skips that. None stays None (a null
    key or value is not an empty one).
    """
    if data is None:
        return None
    size = len(data)
    framed = decode_framed(data) if schema_aware else None
    if framed is not None:
        schema, value = framed
        pretty = json.dumps(value, indent=2, ensure_ascii=False, default=str)
        cut = len(pretty) > SHOWN_BYTES
        return {
            "size": size,
            "truncated": cut,
            "text": pretty[:SHOWN_BYTES] if cut else pretty,
            "hex": None,
            "base64": None,
            "format": "json",
            "schema": schema,
        }
    truncated = size > SHOWN_BYTES
    text = _utf8(data[:SHOWN_BYTES] if truncated else data, cut=truncated)
    base = {"size": size, "truncated": truncated, "text": None, "hex": None, "base64": None}
    if text is not None and _is_text(text):
        if not truncated and text.lstrip()[:1] in ("{", "["):
            try:
                parsed = json.loads(text)
            except ValueError:
                pass
            else:
                pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
                return {**base, "format": "json", "text": pretty}
        return {**base, "format": "text", "text": text}
    shown = data[:SHOWN_BINARY_BYTES]
    return {
        **base,
        "format": "binary",
        "truncated": size > SHOWN_BINARY_BYTES,
        "hex": shown.hex(" "),
        "base64": base64.b64encode(shown).decode("ascii"),
    }


def record(message: Message) -> dict[str, Any]:
    kind, stamp = message.timestamp()
    key = message.key()
    value = message.value()
    headers = message.headers() or []
    return {
        "offset": message.offset(),
        "timestamp": stamp if kind in TIMESTAMP_TYPES else None,
        "timestamp_type": TIMESTAMP_TYPES.get(kind),
        "key": render_bytes(key),
        "value": render_bytes(value),
        "headers": [
            {"key": name, "value": render_bytes(data, schema_aware=False)} for name, data in headers
        ],
        "size": len(key or b"") + len(value or b""),
    }


# -- offsets -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PartitionBounds:
    """What a reader can see of one partition: ``[log_start_offset, high_watermark)``."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int

    def describe(self) -> str:
        if self.high_watermark <= self.log_start_offset:
            return (
                f"partition {self.partition} of topic {self.topic!r} is empty "
                f"(next offset {self.high_watermark})"
            )
        return (
            f"partition {self.partition} of topic {self.topic!r} holds offsets "
            f"{self.log_start_offset} to {self.high_watermark - 1}"
        )


def partition_bounds(*, topic: str, partition: int) -> PartitionBounds:
    """Log start and high watermark of an existing partition (404 for unknown ones)."""
    found = selectors.topic_get(name=topic)
    selectors.partition_get(topic=found, partition=partition)
    offsets = selectors.partition_offsets(topic=topic, partition=partition)
    return PartitionBounds(
        topic=topic,
        partition=partition,
        log_start_offset=offsets.beginning_offset,
        high_watermark=offsets.end_offset,
    )


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds from ISO-8601 (UTC unless zoned) or a number of milliseconds."""
    raw = text.strip()
    found = int(raw) if raw.lstrip("-").isdigit() else iso_datetime_ms(raw)
    if found is None:
        raise BadRequest(
            f"timestamp {text!r} is neither an ISO-8601 datetime "
            "(2026-11-23T10:00:00Z) nor epoch milliseconds"
        )
    if found < 0:
        raise BadRequest(f"timestamp {text!r} is before 1970")
    return found


def offset_for_timestamp(*, bounds: PartitionBounds, timestamp_ms: int) -> int:
    """The first offset whose record has a timestamp ≥ ``timestamp_ms``; the HW when none."""
    found = selectors.partition_offset_at(
        topic=bounds.topic, partition=bounds.partition, timestamp=timestamp_ms
    )
    return bounds.high_watermark if found < 0 else max(found, bounds.log_start_offset)


# -- reading -----------------------------------------------------------------------------------
def consumer(*, eof: bool = True) -> Consumer:
    # A group id is mandatory for librdkafka consumers; with assign() and no commits the
    # group is never joined nor written. ``eof`` tells a bounded read it reached the end.
    return Consumer(
        gateway().client_config(
            **{
                "client.id": "weir-ui-reader",
                "group.id": "weir-ui-reader",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": eof,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 100,
            }
        )
    )


class RangeReader:
    """The records of ``[start, end)`` of one partition in offset order, from one assigned
    consumer: iterate it. Iteration stops at ``end``, at the end of the partition
    (compaction and transaction markers leave gaps; ``complete`` is then True), or when no
    record came for ``idle_timeout_s`` (``complete`` stays False). Records are not kept: a
    long read holds one fetch's worth at a time, however many records it yields.
    """

    def __init__(
        self,
        *,
        topic: str,
        partition: int,
        start: int,
        end: int,
        idle_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end
        self.idle_timeout_s = idle_timeout_s
        self.complete = start >= end

    def __iter__(self) -> Iterator[Message]:
        if self.complete:
            return
        reader = consumer()
        try:
            reader.assign([TopicPartition(self.topic, self.partition, self.start)])
            deadline = time.monotonic() + self.idle_timeout_s
            reached = self.start
            while time.monotonic() < deadline:
                want = min(self.end - reached + 1, 1000)
                batch = reader.consume(num_messages=want, timeout=0.2)
                if batch:
                    deadline = time.monotonic() + self.idle_timeout_s
                for message in batch:
                    error = message.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            self.complete = True
                            return
                        if error.retriable():
                            continue
                        raise KafkaUnavailable(
                            f"reading {self.topic}-{self.partition}: {error.str()}"
                        )
                    offset = message.offset()
                    if offset >= self.end:
                        self.complete = True
                        return
                    if offset < self.start:
                        continue
                    reached = offset + 1
                    if reached >= self.end:
                        self.complete = True
                    yield message
                    if self.complete:
                        return
        finally:
            reader.close()


def scan(
    *,
    topic: str,
    partition: int,
    start: int,
    end: int,
    visit: Callable[[Message], bool],
    idle_timeout_s: float = READ_TIMEOUT_S,
) -> int:
    """Call ``visit`` with each record of ``[start, end)`` in offset order until it says stop.

    Returns the offset the scan covered up to: ``end`` when it got there (or to the end of
    the partition), else the offset after the last record visited (``visit`` returned
    False, or no record came for ``idle_timeout_s``).
    """
    reader = RangeReader(
        topic=topic, partition=partition, start=start, end=end, idle_timeout_s=idle_timeout_s
    )
    reached = start
    records = iter(reader)
    try:
        for message in records:
            reached = message.offset() + 1
            if not visit(message) and reached < end:
                return reached
    finally:
        records.close()  # type: ignore[attr-defined]
    return end if reader.complete else reached


@dataclass(frozen=True, slots=True)
class MessagePage:
    """Records of ``[start, end)`` of one partition, in the order asked for."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    start: int
    end: int
    order: str
    records: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The API's JSON: the fields, by name (MessagePageSerializer)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _window(
    *,
    bounds: PartitionBounds,
    anchor: int,
    newest_first: bool,
    limit: int,
    inclusive: bool,
) -> tuple[int, int]:
    """``[start, end)`` of ``limit`` offsets from ``anchor``, forwards or backwards."""
    low, high = bounds.log_start_offset, bounds.high_watermark
    if newest_first:
        end = min(high, anchor + 1 if inclusive else anchor)
        return max(low, end - limit), end
    return anchor, min(high, anchor + limit)


def message_list(
    *,
    topic: str,
    partition: int,
    offset: int | None = None,
    timestamp_ms: int | None = None,
    from_beginning: bool = False,
    newest_first: bool = True,
    limit: int = DEFAULT_LIMIT,
) -> MessagePage:
    """Up to ``limit`` records from one position (default: the end of the partition).

    ``offset``: oldest first reads from it; newest first reads it and the ones before it.
    ``timestamp_ms``: oldest first reads from the first record at or after that time; newest
    first reads the records before it. ``from_beginning``: the first records. Otherwise the
    last ``limit`` records.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit {limit} must be between 1 and {MAX_LIMIT}")
    if sum(x is not None for x in (offset, timestamp_ms)) + from_beginning > 1:
        raise BadRequest("give at most one of offset, timestamp and from=beginning")
    bounds = partition_bounds(topic=topic, partition=partition)
    low, high = bounds.log_start_offset, bounds.high_watermark
    if offset is not None:
        if not low <= offset <= high:
            raise BadRequest(f"offset {offset} is out of range: {bounds.describe()}")
        start, end = _window(
            bounds=bounds, anchor=offset, newest_first=newest_first, limit=limit, inclusive=True
        )
    elif timestamp_ms is not None:
        anchor = offset_for_timestamp(bounds=bounds, timestamp_ms=timestamp_ms)
        start, end = _window(
            bounds=bounds, anchor=anchor, newest_first=newest_first, limit=limit, inclusive=False
        )
    elif from_beginning:
        start, end = low, min(high, low + limit)
    else:
        start, end = max(low, high - limit), high
    records: list[dict[str, Any]] = []

    def keep(message: Message) -> bool:
        records.append(record(message))
        return True

    scan(topic=topic, partition=partition, start=start, end=end, visit=keep)
    if newest_first:
        records.reverse()
    return MessagePage(
        topic=topic,
        partition=partition,
        log_start_offset=low,
        high_watermark=high,
        start=start,
        end=end,
        order="newest" if newest_first else "oldest",
        records=records,
    )


# -- search ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SearchChunk:
    """One scanned chunk: the matches in ``[start, next)``; ``next`` None when done."""

    topic: str
    partition: int
    query: str
    field: str
    start: int
    end: int
    scanned_to: int
    done: bool
    matches: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "query": self.query,
            "field": self.field,
            "start": self.start,
            "end": self.end,
            "scanned": self.scanned_to - self.start,
            "next": None if self.done else self.scanned_to,
            "done": self.done,
            "matches": self.matches,
        }


def message_search(
    *,
    topic: str,
    partition: int,
    query: str,
    field: Field = "value",
    start: int | None = None,
    end: int | None = None,
    chunk: int = DEFAULT_CHUNK,
) -> SearchChunk:
    """Scan up to ``chunk`` records of ``[start, end)`` for ``query`` in the key or value.

    The match is a substring test on the raw bytes, ignoring ASCII case. ``end`` defaults to
    the high watermark and ``start`` to ``MAX_SEARCH_RANGE`` before it; a range wider than
    that is refused, so a search is always bounded.
    """
    if not query:
        raise BadRequest("q: give the text to search for")
    if field not in ("key", "value"):
        raise BadRequest(f"field {field!r} must be key or value")
    if not 1 <= chunk <= MAX_CHUNK:
        raise BadRequest(f"chunk {chunk} must be between 1 and {MAX_CHUNK}")
    bounds = partition_bounds(topic=topic, partition=partition)
    low, high = bounds.log_start_offset, bounds.high_watermark
    end = high if end is None else end
    start = max(low, end - MAX_SEARCH_RANGE) if start is None else start
    if end > high:
        raise BadRequest(f"end {end} is past the high watermark: {bounds.describe()}")
    if start < low:
        raise BadRequest(f"start {start} is below the log start offset: {bounds.describe()}")
    if start > end:
        raise BadRequest(f"start {start} is after end {end}")
    if end - start > MAX_SEARCH_RANGE:
        raise BadRequest(
            f"the range {start}..{end} spans {end - start} offsets; "
            f"search at most {MAX_SEARCH_RANGE} at a time"
        )
    needle = query.encode("utf-8").lower()
    matches: list[dict[str, Any]] = []

    def match(message: Message) -> bool:
        data = message.key() if field == "key" else message.value()
        if data is not None and needle in data.lower():
            matches.append(record(message))
        return len(matches) < MAX_MATCHES_PER_CHUNK

    stop = min(end, start + chunk)
    scanned_to = scan(topic=topic, partition=partition, start=start, end=stop, visit=match)
    return SearchChunk(
        topic=topic,
        partition=partition,
        query=query,
        field=field,
        start=start,
        end=end,
        scanned_to=scanned_to,
        done=scanned_to >= end,
        matches=matches,
    )


# -- tail --------------------------------------------------------------------------------------
class PartitionTail:
    """Records appended to one partition after the tail opened, for a live socket.

    Holds one assigned consumer; :meth:`poll` and :meth:`close` may be called from different
    threads (the socket's worker threads), never at the same time (a lock orders them).
    """

    def __init__(self, *, topic: str, partition: int) -> None:
        bounds = partition_bounds(topic=topic, partition=partition)
        self.topic = topic
        self.partition = partition
        self.position = bounds.high_watermark
        self._lock = threading.Lock()
        self._consumer: Consumer | None = consumer(eof=False)
        self._consumer.assign([TopicPartition(topic, partition, self.position)])

    def poll(self, *, max_records: int = 200, timeout: float = 0.5) -> list[dict[str, Any]]:
        """What arrived since the last call (waits up to ``timeout`` for the first record)."""
        with self._lock:
            if self._consumer is None:
                return []
            found: list[dict[str, Any]] = []
            wait = timeout
            while len(found) < max_records:
                message = self._consumer.poll(wait)
                wait = 0
                if message is None:
                    break
                error = message.error()
                if error is not None:
                    if error.retriable():
                        continue
                    raise KafkaUnavailable(f"tailing {self.topic}-{self.partition}: {error.str()}")
                found.append(record(message))
                self.position = message.offset() + 1
            return found

    def close(self) -> None:
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None

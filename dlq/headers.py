"""The error context a dead-lettered record carries in its headers, in the conventions in use.

Pure functions over a record's ``[(name, bytes | None), ...]`` headers; nothing here talks to
a cluster. Two writers of dead letters are recognised, by the header names they use:

* **Kafka Connect** (``errors.deadletterqueue.context.headers.enable=true``): every header is
  ``__connect.errors.<field>`` with a UTF-8 string value, numbers included (Connect writes
  ``String.valueOf(partition)``): ``topic``, ``partition``, ``offset``, ``connector.name``,
  ``task.id``, ``stage``, ``class.name``, ``exception.class.name``, ``exception.message``,
  ``exception.stacktrace``.
* **Spring for Apache Kafka** (``DeadLetterPublishingRecoverer``): ``kafka_dlt-original-topic``
  (string), ``kafka_dlt-original-partition`` (a 4-byte big-endian int),
  ``kafka_dlt-original-offset`` (8-byte long), ``kafka_dlt-original-consumer-group``,
  ``kafka_dlt-exception-fqcn``, ``kafka_dlt-exception-message``,
  ``kafka_dlt-exception-stacktrace``; attempts in ``retry_topic-attempts`` or
  ``kafka_deliveryAttempt`` (4-byte ints).

Weir's own replay adds ``weir.replay.count`` (how many times Weir replayed the record, a
decimal string) and ``weir.replay.source`` (``<dlq topic>/<partition>/<offset>``). Writers
that copy a record's headers into the dead letter (Connect and Spring both do) carry the
count along, so a record that fails again after a replay shows one more attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

__all__ = [
    "CONNECT_PREFIX",
    "ERROR_HEADER_PREFIXES",
    "REPLAY_COUNT",
    "REPLAY_SOURCE",
    "ErrorContext",
    "Headers",
    "error_context",
    "has_error_headers",
    "origin",
    "replay_headers",
]

Headers = Sequence[tuple[str, bytes | None]]

CONNECT_PREFIX = "__connect.errors."
SPRING_PREFIX = "kafka_dlt-"
SPRING_ATTEMPTS = ("retry_topic-attempts", "kafka_deliveryAttempt")
REPLAY_COUNT = "weir.replay.count"
REPLAY_SOURCE = "weir.replay.source"
_TOPIC_HEADERS = frozenset({CONNECT_PREFIX + "topic", SPRING_PREFIX + "original-topic"})
_CONNECT_PARTITION = CONNECT_PREFIX + "partition"
_SPRING_PARTITION = SPRING_PREFIX + "original-partition"
# Headers that describe a failure rather than the record: dropped when the record goes back.
ERROR_HEADER_PREFIXES = (CONNECT_PREFIX, SPRING_PREFIX, *SPRING_ATTEMPTS)


@dataclass(frozen=True, slots=True)
class ErrorContext:
    """Why and where a record failed, as far as its headers say (None: not said)."""

    convention: str | None = None  # "connect", "spring" or None
    original_topic: str | None = None
    original_partition: int | None = None
    original_offset: int | None = None
    exception_class: str | None = None
    exception_message: str | None = None
    stacktrace: str | None = None
    connector: str | None = None
    task: str | None = None
    stage: str | None = None
    consumer_group: str | None = None
    attempts: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def matches(self, *, original_topic: str | None, exception: str | None) -> bool:
        """The filters of the browser and of a range replay: exact original topic, and a
        case-insensitive substring of the exception class or message."""
        if original_topic and self.original_topic != original_topic:
            return False
        if exception:
            needle = exception.lower()
            haystack = f"{self.exception_class or ''}\n{self.exception_message or ''}".lower()
            if needle not in haystack:
                return False
        return True


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


def _decimal(value: bytes | None) -> int | None:
    text = _text(value)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def _big_endian(value: bytes | None) -> int | None:
    """Spring writes ints and longs as 4 or 8 big-endian bytes; anything else as a number in
    text (older versions, other writers copying the convention)."""
    if value is not None and len(value) in (4, 8) and not value.strip().isdigit():
        return int.from_bytes(value, "big", signed=True)
    return _decimal(value)


def origin(headers: Headers | None) -> tuple[str | None, int | None]:
    """(original topic, original partition) alone: what a replay needs of every record,
    without decoding the rest of the context (stack traces are long)."""
    topic = partition = None
    for name, value in headers or ():
        if name in _TOPIC_HEADERS:
            topic = _text(value)
        elif name == _CONNECT_PARTITION:
            partition = _decimal(value)
        elif name == _SPRING_PARTITION:
            partition = _big_endian(value)
    return topic, partition


def has_error_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> bool:
    """Whether a record carries Kafka Connect's or Spring's dead-letter headers."""
    return any(name.startswith((CONNECT_PREFIX, SPRING_PREFIX)) for name, _ in headers or ())


def error_context(headers: Headers | None) -> ErrorContext:
    """The error context of a record from its headers (the last value of a repeated name
    wins, as Kafka's ``Headers.lastHeader``)."""
    found = {name: value for name, value in headers or ()}
    replays = _decimal(found.get(REPLAY_COUNT))
    connect = {
        name.removeprefix(CONNECT_PREFIX): value
        for name, value in found.items()
        if name.startswith(CONNECT_PREFIX)
    }
    spring = {
        name.removeprefix(SPRING_PREFIX): value
        for name, value in found.items()
        if name.startswith(SPRING_PREFIX)
    }
    attempts = next(
        (n for n in (_big_endian(found.get(h)) for h in SPRING_ATTEMPTS) if n is not None), None
    )
    if attempts is None and replays is not None:
        attempts = replays + 1  # the first failure, then one per replay that failed again
    if connect:
        return ErrorContext(
            convention="connect",
            original_topic=_text(connect.get("topic")),
            original_partition=_decimal(connect.get("partition")),
            original_offset=_decimal(connect.get("offset")),
            exception_class=_text(connect.get("exception.class.name")),
            exception_message=_text(connect.get("exception.message")),
            stacktrace=_text(connect.get("exception.stacktrace")),
            connector=_text(connect.get("connector.name")),
            task=_text(connect.get("task.id")),
            stage=_text(connect.get("stage")),
            attempts=attempts,
        )
    if spring:
        return ErrorContext(
            convention="spring",
            original_topic=_text(spring.get("original-topic")),
            original_partition=_big_endian(spring.get("original-partition")),
            original_offset=_big_endian(spring.get("original-offset")),
            exception_class=_text(spring.get("exception-fqcn")),
            exception_message=_text(spring.get("exception-message")),
            stacktrace=_text(spring.get("exception-stacktrace")),
            consumer_group=_text(spring.get("original-consumer-group")),
            attempts=attempts,
        )
    return ErrorContext(attempts=attempts)


def replay_headers(
    headers: Headers | None, *, source: str, keep_error_headers: bool = False
) -> list[tuple[str, bytes | None]]:
    """The headers a replayed record carries: its own, without the failure's (unless
    ``keep_error_headers``), with Weir's replay count raised by one and its source named."""
    count = (_decimal(dict(headers or ()).get(REPLAY_COUNT)) or 0) + 1
    kept = [
        (name, value)
        for name, value in headers or ()
        if name not in (REPLAY_COUNT, REPLAY_SOURCE)
        and (keep_error_headers or not name.startswith(ERROR_HEADER_PREFIXES))
    ]
    return [*kept, (REPLAY_COUNT, str(count).encode()), (REPLAY_SOURCE, source.encode())]

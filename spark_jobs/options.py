"""Options of the ``weir`` data source: Spark's Kafka source options, parsed and checked once.

Theory of operation
-------------------
Spark hands a data source its options as a case-insensitive string map. ``SourceOptions.parse``
turns that map into one frozen value, the only place where option names are spelled, so the
planner (``spark_jobs.offsets``), the readers (``spark_jobs.fetch``) and the error messages
agree. Names, meanings and defaults follow Spark's Structured Streaming + Kafka integration
guide, so a job written for ``format("kafka")`` runs unchanged with ``format("weir")``:

* exactly one of ``subscribe`` (comma list), ``subscribePattern`` (regex, matched with
  ``re.fullmatch`` like Java's ``Pattern.matcher().matches()``) or ``assign``
  (``{"topic": [0, 1]}``);
* ``kafka.bootstrap.servers`` (required) and any other ``kafka.*`` option, passed to the
  confluent-kafka clients with the prefix removed (librdkafka and the Java client share most
  property names);
* where to start: ``startingTimestamp`` > ``startingOffsetsByTimestamp`` > ``startingOffsets``
  (the first one set wins, as in Spark); where a batch ends: ``endingTimestamp`` >
  ``endingOffsetsByTimestamp`` > ``endingOffsets``;
* ``includeHeaders``, ``minPartitions``, ``maxOffsetsPerTrigger``, ``failOnDataLoss``,
  ``kafkaConsumer.pollTimeoutMs``, ``groupIdPrefix``, ``startingOffsetsByTimestampStrategy``;
  plus ``maxRecordsPerPartition`` (split a topic-partition range into Spark partitions of at
  most this many offsets; default 100,000 so one big partition never becomes one huge task).

Offsets in JSON use Spark's sentinels: -2 is earliest, -1 is latest. Errors are ``ValueError``
subclasses whose message names the option, worded like Spark's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

EARLIEST = -2
LATEST = -1
DEFAULT_MAX_RECORDS_PER_PARTITION = 100_000
DEFAULT_POLL_TIMEOUT_MS = 120_000

# Consumer settings Spark refuses because the source manages them itself.
_UNSUPPORTED_KAFKA = {
    "auto.offset.reset": "Set the source option 'startingOffsets' instead.",
    "key.deserializer": "Keys are always returned as bytes (binary).",
    "value.deserializer": "Values are always returned as bytes (binary).",
    "enable.auto.commit": "The source never commits offsets to Kafka.",
    "interceptor.classes": "Interceptors are not supported.",
}

Subscription = Literal["subscribe", "subscribePattern", "assign"]
# A position request for one partition: an offset (>= 0, or EARLIEST/LATEST) or a timestamp.
OffsetSpecMap = dict[str, dict[int, int]]
# Case-insensitive option lookup: name -> value or None.
Getter = Callable[[str], str | None]


class SourceOptionError(ValueError):
    """A ``weir`` source option is missing, conflicting or malformed."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where reading starts or ends: a keyword, per-partition offsets, or timestamps.

    ``kind`` is ``"earliest"``, ``"latest"``, ``"offsets"`` (``offsets`` holds
    ``{topic: {partition: offset}}`` with -2/-1 sentinels), ``"timestamp"`` (``timestamp`` for
    every partition) or ``"timestamps"`` (``offsets`` holds per-partition timestamps).
    """

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    offsets: OffsetSpecMap = field(default_factory=dict)
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Everything the source needs, checked; picklable (it travels to executors)."""

    bootstrap_servers: str
    subscription: Subscription
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: dict[str, tuple[int, ...]] = field(default_factory=dict)
    starting: Position = field(default_factory=lambda: Position("earliest"))
    ending: Position = field(default_factory=lambda: Position("latest"))
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int = DEFAULT_MAX_RECORDS_PER_PARTITION
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    group_id: str | None = None
    group_id_prefix: str = "spark-kafka-source"
    timestamp_strategy: Literal["error", "latest"] = "error"
    kafka: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        """Check ``options`` the way Spark's Kafka source does; raise ``SourceOptionError``."""
        # Spark's option map is case-insensitive; keep user spelling for kafka.* values.
        lowered = {k.lower(): (k, v) for k, v in options.items()}

        def get(name: str) -> str | None:
            item = lowered.get(name.lower())
            return None if item is None else item[1]

        bootstrap = get("kafka.bootstrap.servers")
        if not bootstrap:
            raise SourceOptionError(
                "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
            )
        kafka: dict[str, str] = {}
        for lower, (_, value) in lowered.items():
            if not lower.startswith("kafka."):
                continue
            name = lower.removeprefix("kafka.")
            if name in _UNSUPPORTED_KAFKA:
                raise SourceOptionError(
                    f"Kafka option 'kafka.{name}' is not supported. {_UNSUPPORTED_KAFKA[name]}"
                )
            if name == "isolation.level" and value != "read_uncommitted":
                # Planning to the LSO (ListOffsets read_committed) is not there yet: a
                # read_committed reader would stop short of the offsets planned for it.
                raise SourceOptionError(
                    f"Kafka option 'kafka.isolation.level' = {value!r} is not supported yet; "
                    "the source reads read_uncommitted (Spark's default)"
                )
            if name not in ("bootstrap.servers", "group.id"):
                kafka[name] = value

        given = [name for name in ("subscribe", "subscribePattern", "assign") if get(name)]
        if not given:
            raise SourceOptionError(
                "One of the following options must be specified for Kafka source: "
                "subscribe, subscribePattern, assign. See the docs for more details."
            )
        if len(given) > 1:
            raise SourceOptionError(
                f"Only one of the following options can be specified for Kafka source: "
                f"subscribe, subscribePattern, assign; got {', '.join(given)}. "
                "See the docs for more details."
            )
        subscription: Subscription = given[0]  # type: ignore[assignment]
        topics: tuple[str, ...] = ()
        pattern: str | None = None
        assign: dict[str, tuple[int, ...]] = {}
        if subscription == "subscribe":
            topics = tuple(t.strip() for t in (get("subscribe") or "").split(",") if t.strip())
            if not topics:
                raise SourceOptionError(
                    f"No topics to subscribe to as specified topics are: {topics}"
                )
        elif subscription == "subscribePattern":
            pattern = (get("subscribePattern") or "").strip()
            if not pattern:
                raise SourceOptionError(
                    "Pattern to subscribe is empty as specified value for option "
                    "'subscribePattern' is ''"
                )
            try:
                re.compile(pattern)
            except re.error as exc:
                raise SourceOptionError(
                    f"Option 'subscribePattern' is not a valid regex: {exc}"
                ) from exc
        else:
            assign = _parse_assign(get("assign") or "")

        starting = _parse_start(get, streaming=streaming)
        ending = _parse_end(get, streaming=streaming)
        strategy = (get("startingOffsetsByTimestampStrategy") or "error").lower()
        if strategy not in ("error", "latest"):
            raise SourceOptionError(
                "Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                f"got {strategy!r}"
            )
        return cls(
            bootstrap_servers=bootstrap,
            subscription=subscription,
            topics=topics,
            pattern=pattern,
            assign=assign,
            starting=starting,
            ending=ending,
            include_headers=_parse_bool(get, "includeHeaders", False),
            min_partitions=_parse_int(get, "minPartitions", None, minimum=1),
            max_records_per_partition=_parse_int(
                get, "maxRecordsPerPartition", DEFAULT_MAX_RECORDS_PER_PARTITION, minimum=1
            )
            or DEFAULT_MAX_RECORDS_PER_PARTITION,
            max_offsets_per_trigger=_parse_int(get, "maxOffsetsPerTrigger", None, minimum=1),
            fail_on_data_loss=_parse_bool(get, "failOnDataLoss", True),
            poll_timeout_ms=_parse_int(
                get, "kafkaConsumer.pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS, minimum=1
            )
            or DEFAULT_POLL_TIMEOUT_MS,
            group_id=get("kafka.group.id"),
            group_id_prefix=get("groupIdPrefix") or "spark-kafka-source",
            timestamp_strategy=strategy,  # type: ignore[arg-type]
            kafka=kafka,
        )


def _parse_bool(get: Getter, name: str, default: bool) -> bool:
    value = get(name)
    if value is None:
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise SourceOptionError(f"Option '{name}' must be 'true' or 'false', got {value!r}")
    return text == "true"


def _parse_int(get: Getter, name: str, default: int | None, *, minimum: int) -> int | None:
    value = get(name)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise SourceOptionError(f"Option '{name}' must be an integer, got {value!r}") from None
    if number < minimum:
        raise SourceOptionError(f"Option '{name}' must be >= {minimum}, got {number}")
    return number


def _load_json(name: str, text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceOptionError(f"Option '{name}' is not valid JSON: {text!r} ({exc})") from None


def _parse_assign(text: str) -> dict[str, tuple[int, ...]]:
    data = _load_json("assign", text)
    if not isinstance(data, dict) or not data:
        raise SourceOptionError(
            f"Option 'assign' expects a JSON object like {{\"topicA\":[0,1]}}, got {text!r}"
        )
    assign: dict[str, tuple[int, ...]] = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and p >= 0 for p in partitions
        ):
            raise SourceOptionError(
                f"Option 'assign': partitions of topic {topic!r} must be a list of "
                f"non-negative integers, got {partitions!r}"
            )
        assign[str(topic)] = tuple(sorted(set(partitions)))
    return assign


def _parse_partition_map(name: str, text: str) -> OffsetSpecMap:
    """``{"t": {"0": 23, "1": -2}}`` → ``{"t": {0: 23, 1: -2}}``."""
    data = _load_json(name, text)
    if not isinstance(data, dict):
        raise SourceOptionError(
            f'Option \'{name}\' expects a JSON object like {{"topicA":{{"0":23,"1":-1}}}}, '
            f"got {text!r}"
        )
    result: OffsetSpecMap = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise SourceOptionError(
                f"Option '{name}': topic {topic!r} needs an object of partition -> offset"
            )
        per: dict[int, int] = {}
        for partition, value in partitions.items():
            try:
                index = int(partition)
            except ValueError:
                raise SourceOptionError(
                    f"Option '{name}': partition {partition!r} of topic {topic!r} is not a number"
                ) from None
            if not isinstance(value, int) or isinstance(value, bool):
                raise SourceOptionError(
                    f"Option '{name}': offset of {topic}-{partition} must be an integer"
                )
            per[index] = value
        result[str(topic)] = per
    return result


def _by_time(get: Getter, bound: str) -> Position | None:
    """A bound given by time, Spark's first two choices for ``bound`` ("starting", "ending"):
    ``<bound>Timestamp`` (every partition) wins over ``<bound>OffsetsByTimestamp`` (each
    partition its own); None when neither is set (then ``<bound>Offsets`` decides)."""
    stamp = get(f"{bound}Timestamp")
    if stamp is not None:
        return Position("timestamp", timestamp=_timestamp(f"{bound}Timestamp", stamp))
    name = f"{bound}OffsetsByTimestamp"
    by_time = get(name)
    if by_time is not None:
        return Position("timestamps", _parse_partition_map(name, by_time))
    return None


def _refuse_offset(offsets: OffsetSpecMap, special: int, message: str) -> None:
    """A SourceOptionError when a partition's offset is ``special`` (``message`` is formatted
    with ``tp``, the partition as topic-partition)."""
    for topic, per in offsets.items():
        for partition, offset in per.items():
            if offset == special:
                raise SourceOptionError(message.format(tp=f"{topic}-{partition}"))


def _parse_start(get: Getter, *, streaming: bool) -> Position:
    position = _by_time(get, "starting")
    if position is not None:
        return position
    text = get("startingOffsets")
    if text is None:
        return Position("latest" if streaming else "earliest")
    keyword = text.strip().lower()
    if keyword == "earliest":
        return Position("earliest")
    if keyword == "latest":
        if not streaming:
            raise SourceOptionError(
                "starting offset can't be latest for batch queries on Kafka: "
                "option 'startingOffsets' is 'latest'"
            )
        return Position("latest")
    offsets = _parse_partition_map("startingOffsets", text)
    if not streaming:
        _refuse_offset(
            offsets,
            LATEST,
            "starting offset for {tp} can't be latest (-1) for batch queries on Kafka "
            "(option 'startingOffsets')",
        )
    return Position("offsets", offsets)


def _parse_end(get: Getter, *, streaming: bool) -> Position:
    names = ("endingTimestamp", "endingOffsetsByTimestamp", "endingOffsets")
    if streaming:
        for name in names:
            if get(name) is not None:
                raise SourceOptionError(f"Option '{name}' is not supported in streaming queries")
        return Position("latest")
    position = _by_time(get, "ending")
    if position is not None:
        return position
    text = get("endingOffsets")
    if text is None or text.strip().lower() == "latest":
        return Position("latest")
    if text.strip().lower() == "earliest":
        raise SourceOptionError(
            "ending offset can't be earliest for batch queries on Kafka: "
            "option 'endingOffsets' is 'earliest'"
        )
    offsets = _parse_partition_map("endingOffsets", text)
    _refuse_offset(
        offsets,
        EARLIEST,
        "ending offset for {tp} can't be earliest (-2) for batch queries on Kafka "
        "(option 'endingOffsets')",
    )
    return Position("offsets", offsets)


def _timestamp(name: str, text: str) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise SourceOptionError(
            f"Option '{name}' must be a timestamp in milliseconds, got {text!r}"
        ) from None
    if value < 0:
        raise SourceOptionError(f"Option '{name}' must be >= 0, got {value}")
    return value

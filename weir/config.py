"""Kafka's broker and topic configs: names, types, defaults, validation, docs and describe.

Theory of operation
-------------------
Every config is a ``ConfigDef`` with Kafka's own name, type, default, validator and
documentation string (taken from Apache Kafka's ``ServerLogConfigs``, ``TopicConfig``,
``ReplicationConfigs``, ... so ``kafka-configs --describe`` output reads the same).

A broker config value is resolved per key, highest precedence first, as
``DynamicBrokerConfig`` does:

1. DYNAMIC_BROKER_CONFIG          per-broker override kept in Redis (``configs:broker:<id>``)
2. DYNAMIC_DEFAULT_BROKER_CONFIG  cluster-wide override kept in Redis (``configs:broker:``)
3. STATIC_BROKER_CONFIG           ``runbroker --config key=value``
4. DEFAULT_CONFIG                 the default below

Some settings have several names (``log.retention.ms`` > ``log.retention.minutes`` >
``log.retention.hours``; ``log.roll.ms`` > ``log.roll.hours``): the first name that has a value
at any level wins, converted to milliseconds (``BrokerConfig.log_retention_ms`` ...).

A topic config falls back to its *broker synonyms* (``retention.ms`` <- ``log.retention.ms``,
``log.retention.minutes``, ``log.retention.hours``; ``max.message.bytes`` <-
``message.max.bytes``; ...), so a topic without an override follows the broker's effective
value, as Kafka's ``LogConfig.fromProps(kafkaConfig.extractLogConfigMap, overrides)`` does.
``effective_topic_config`` returns the typed values the log and the request handlers use.

``describe_topic_config`` / ``describe_broker_config`` build DescribeConfigs entries with the
same sources, synonyms (in Kafka's order: by source, then by synonym precedence) and
read-only flags as ``ConfigHelper.scala``. Validation errors use Kafka's wording, e.g.
``Invalid value abc for configuration retention.ms: Not a number of type LONG``.

Values that reach a running broker from Redis are validated when written; if one is bad
anyway it is ignored with a warning (Kafka does the same) rather than crashing the broker.
"""

from __future__ import annotations

import difflib
import logging
import math
import re
import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, fields, replace
from decimal import Decimal
from enum import IntEnum
from types import MappingProxyType
from typing import Any

from kio.schema.errors import ErrorCode

__all__ = [
    "BROKER_CONFIGS",
    "TOPIC_CONFIGS",
    "BrokerConfig",
    "ConfigDef",
    "ConfigEntry",
    "ConfigSource",
    "ConfigSynonym",
    "ConfigType",
    "InvalidConfigError",
    "Support",
    "Synonym",
    "TopicConfig",
    "check_broker_constraints",
    "describe_broker_config",
    "describe_topic_config",
    "effective_topic_config",
    "parse_broker_overrides",
    "validate_broker_dynamic_configs",
    "validate_topic_configs",
]

log = logging.getLogger("weir.config")

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
DOUBLE_MAX = sys.float_info.max
MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000


class ConfigType(IntEnum):
    """DescribeConfigs ``config_type`` codes (``DescribeConfigsResponse.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(IntEnum):
    """DescribeConfigs ``config_source`` codes (``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


class InvalidConfigError(ValueError):
    """A config name or value Kafka would reject.

    ``error_code`` is INVALID_CONFIG (40) for topic configs; broker-resource alterations use
    INVALID_REQUEST (42), as Kafka's ``ConfigAdminManager`` does.
    """

    def __init__(
        self, name: str, message: str, *, error_code: ErrorCode = ErrorCode.invalid_config
    ) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.error_code = error_code


# -- validators ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Problem:
    """Why a value is invalid; ``shown`` is the offending value when not the whole value."""

    message: str
    shown: Any = None


# A validator gets the config name and the parsed value; it returns None when it is fine.
Validator = Callable[[str, Any], "Problem | None"]


@dataclass(frozen=True, slots=True)
class Range:
    """``ConfigDef.Range``: a number at least ``minimum`` and, when given, at most ``maximum``."""

    minimum: int | float
    maximum: int | float | None = None

    def __call__(self, name: str, value: Any) -> Problem | None:
        if value is None:
            return None
        if value < self.minimum:
            return Problem(f"Value must be at least {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            return Problem(f"Value must be no more than {self.maximum}")
        return None

    @classmethod
    def at_least(cls, minimum: int | float) -> Range:
        """``ConfigDef.Range.atLeast``."""
        return cls(minimum)

    @classmethod
    def between(cls, minimum: int | float, maximum: int | float) -> Range:
        """``ConfigDef.Range.between``."""
        return cls(minimum, maximum)

    def __str__(self) -> str:
        if self.maximum is None:
            return f"[{self.minimum},...]"
        return f"[{self.minimum},...,{self.maximum}]"


@dataclass(frozen=True, slots=True)
class _Choices:
    """A validator over a fixed set of strings (Kafka prints them as ``[a, b]``)."""

    choices: tuple[str, ...]

    def problem(self, item: str | None = None) -> Problem:
        return Problem(f"String must be one of: {', '.join(self.choices)}", item)

    def __str__(self) -> str:
        return f"[{', '.join(self.choices)}]"


@dataclass(frozen=True, slots=True)
class OneOf(_Choices):
    """``ConfigDef.ValidString.in`` (case-sensitive, as in Kafka)."""

    def __call__(self, name: str, value: Any) -> Problem | None:
        if value is not None and value not in self.choices:
            return self.problem()
        return None


@dataclass(frozen=True, slots=True)
class EachOneOf(_Choices):
    """``ConfigDef.ValidList.in``: every list element must be one of ``choices``."""

    def __call__(self, name: str, value: Any) -> Problem | None:
        for item in value or ():
            if item not in self.choices:  # Kafka names the offending element
                return self.problem(item)
        return None


_REPLICA_ENTRY = re.compile(r"([0-9]+:[0-9]+)?\Z")


def _throttled_replicas(name: str, value: Any) -> Problem | None:
    """``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs."""
    items = [str(v).strip() for v in value or ()]
    if all(_REPLICA_ENTRY.match(i) for i in items) or "".join(items) == "*":
        return None
    return Problem(
        f"{name} must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


_IP_OVERRIDE = re.compile(r"\s*[^,\s](?:[^,]*[^,\s])?\s*:\s*[0-9]+\s*")


def _ip_overrides(name: str, value: Any) -> Problem | None:
    """``max.connections.per.ip.overrides``: ``host:count,host:count`` (Kafka's
    ``parseCsvMap``, split at each entry's last colon, so IPv6 addresses keep theirs)."""
    if not value:
        return None
    for entry in str(value).split(","):
        if not _IP_OVERRIDE.fullmatch(entry) or int(entry.rpartition(":")[2]) > INT_MAX:
            return Problem(
                f"Error parsing configuration property '{name}': expected host:count, "
                f"got '{entry.strip()}'"
            )
    return None


_VERSION = re.compile(r"[0-9]+(\.[0-9]+){1,3}(-IV[0-9]+)?\Z")


def _metadata_version(name: str, value: Any) -> Problem | None:
    """A loose ``MetadataVersionValidator``: ``0.10.0``, ``2.8``, ``3.0-IV1`` ..."""
    if value is None or _VERSION.match(value):
        return None
    return Problem(f"Version `{value}` is not a valid version")


# -- definitions -----------------------------------------------------------------------------
class Support:
    """How honest a config is (docs/configuration.md lists every one).

    IMPLEMENTED: read by the broker with Kafka's semantics and default.
    REFUSED: Weir cannot do what Kafka does with it; setting it is an error naming it as
    unsupported (INVALID_CONFIG on the wire, a ``--config`` error at start), its default is
    still described.
    NO_EFFECT: Kafka 3.x ignores it too (Weir behaves as a 3.x broker), or what it tunes never
    happens in Weir, so it is accepted.
    There is no fourth state: a config Weir accepts does what Kafka's does or is refused
    (tests/weir/test_config_support.py walks both tables).
    """

    IMPLEMENTED = "implemented"
    REFUSED = "refused"
    NO_EFFECT = "no effect"


@dataclass(frozen=True, slots=True)
class Synonym:
    """A broker config a topic config falls back to; ``factor`` converts its unit to ms."""

    name: str
    factor: int = 1


@dataclass(frozen=True, slots=True)
class ConfigDef:
    """One config: Kafka's name, type, default, validator and documentation.

    ``read_only``: cannot be altered dynamically (broker configs; topic configs never are).
    ``synonyms``: for topic configs, the broker configs the default comes from, first wins.
    ``dynamic_only``: a broker config that exists only as a dynamic override
    (``leader.replication.throttled.rate``), described only when set.
    """

    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    doc: str
    read_only: bool = True
    synonyms: tuple[Synonym, ...] = ()
    dynamic_only: bool = False
    # What Weir does with it (``Support``) and, unless implemented, why (see the tables at
    # the end of the definitions).
    support: str = Support.IMPLEMENTED
    support_note: str = ""

    def __post_init__(self) -> None:
        # A LIST value is a tuple everywhere (``parse`` returns one, ``to_string`` joins one):
        # a default written as a string would be joined one character at a time by
        # DescribeConfigs (``P,L,A,I,N,...``), so a string default is parsed here.
        if self.type is ConfigType.LIST and isinstance(self.default, str):
            object.__setattr__(self, "default", _parse_type(self.name, self.default, self.type))

    @property
    def sensitive(self) -> bool:
        """Kafka's ``Type.isSensitive()``: passwords are never shown."""
        return self.type is ConfigType.PASSWORD

    def parse(self, raw: str | None) -> Any:
        """Parse a string value into the typed value, or raise InvalidConfigError."""
        if raw is None:
            return None
        value = _parse_type(self.name, raw, self.type)
        problem = self.validator(self.name, value) if self.validator is not None else None
        if problem is not None:
            shown = problem.shown if problem.shown is not None else _java_show(value)
            raise InvalidConfigError(
                self.name, f"Invalid value {shown} for configuration {self.name}: {problem.message}"
            )
        return value

    def to_string(self, value: Any) -> str | None:
        """Kafka's ``ConfigDef.convertToString``."""
        return _to_string(value, self.type)


def _parse_type(name: str, raw: str, type_: ConfigType) -> Any:
    text = raw.strip()

    def bad(message: str) -> InvalidConfigError:
        return InvalidConfigError(name, f"Invalid value {raw} for configuration {name}: {message}")

    if type_ is ConfigType.BOOLEAN:
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        raise bad("Expected value to be either true or false")
    if type_ in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS):
        return text
    if type_ in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        bits = {ConfigType.INT: 32, ConfigType.SHORT: 16, ConfigType.LONG: 64}[type_]
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise bad(f"Not a number of type {type_.name}")
        number = int(text)
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise bad(f"Not a number of type {type_.name}")
        return number
    if type_ is ConfigType.DOUBLE:
        try:
            if "_" in text:
                raise ValueError(text)
            number = float(text)
        except ValueError:
            raise bad("Not a number of type DOUBLE") from None
        if math.isnan(number):
            raise bad("Not a number of type DOUBLE")
        return number
    if type_ is ConfigType.LIST:
        if not text:
            return ()
        return tuple(re.split(r"\s*,\s*", text))
    raise bad(f"Unsupported type {type_.name}")


def _to_string(value: Any, type_: ConfigType) -> str | None:
    if value is None:
        return None
    if type_ is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if type_ is ConfigType.LIST:
        return ",".join(str(v) for v in value)
    if type_ is ConfigType.DOUBLE:
        return _java_double(float(value))
    return str(value)


def _java_double(value: float) -> str:
    """``Double.toString``: ``0.5``, ``1.0``, ``1.0E-4``, ``1.7976931348623157E308``."""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's shortest repr is plain notation in this range
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def _java_show(value: Any) -> str:
    """How Kafka prints a parsed value in an error message (Java ``toString``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return f"[{', '.join(map(str, value))}]"
    if isinstance(value, float):
        return _java_double(value)
    return str(value)


def _broker(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    validator: Validator | None = None,
    *,
    dynamic: bool = False,
    dynamic_only: bool = False,
) -> ConfigDef:
    return ConfigDef(
        name, type_, default, validator, doc, read_only=not dynamic, dynamic_only=dynamic_only
    )


def _topic(
    name: str,
    type_: ConfigType,
    default: Any,
    doc: str,
    validator: Validator | None = None,
    synonyms: tuple[Synonym, ...] = (),
) -> ConfigDef:
    return ConfigDef(name, type_, default, validator, doc, read_only=False, synonyms=synonyms)


B, S, I, H, L, D, LST, P = (  # noqa: E741 - short aliases keep the tables readable
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.PASSWORD,
)
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")

_MAX_MESSAGE_BYTES_DOC = (
    "The largest record batch size allowed by Kafka (after compression if compression is "
    "enabled). If this is increased and there are consumers older than 0.10.2, the consumers' "
    "fetch size must also be increased so that they can fetch record batches this large. In the "
    "latest message format version, records are always grouped into batches for efficiency. In "
    "previous message format versions, uncompressed records are not grouped into batches and "
    "this limit only applies to a single record in that case."
)
_MIN_ISR_DOC = (
    'When a producer sets acks to "all" (or "-1"), this configuration specifies the minimum '
    "number of replicas that must acknowledge a write for the write to be considered "
    "successful. If this minimum cannot be met, then the producer will raise an exception "
    "(either NotEnoughReplicas or NotEnoughReplicasAfterAppend).<br>When used together, "
    "<code>min.insync.replicas</code> and <code>acks</code> allow you to enforce greater "
    "durability guarantees. A typical scenario would be to create a topic with a replication "
    "factor of 3, set <code>min.insync.replicas</code> to 2, and produce with <code>acks</code> "
    'of "all". This will ensure that the producer raises an exception if a majority of '
    "replicas do not receive a write."
)
_COMPRESSION_DOC = (
    "Specify the final compression type for a given topic. This configuration accepts the "
    "standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts "
    "'uncompressed' which is equivalent to no compression; and 'producer' which means retain "
    "the original compression codec set by the producer."
)
_UNCLEAN_DOC = (
    "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last "
    "resort, even though doing so may result in data loss."
)
_TS_BEFORE_DOC = (
    "This configuration sets the allowable timestamp difference between the broker's timestamp "
    "and the message timestamp. The message timestamp can be earlier than or equal to the "
    "broker's timestamp, with the maximum allowable difference determined by the value set in "
    "this configuration. If {p}message.timestamp.type=CreateTime, the message will be rejected "
    "if the difference in timestamps exceeds this specified threshold. This configuration is "
    "ignored if {p}message.timestamp.type=LogAppendTime."
)
_TS_AFTER_DOC = (
    "This configuration sets the allowable timestamp difference between the message timestamp "
    "and the broker's timestamp. The message timestamp can be later than or equal to the "
    "broker's timestamp, with the maximum allowable difference determined by the value set in "
    "this configuration. If {p}message.timestamp.type=CreateTime, the message will be rejected "
    "if the difference in timestamps exceeds this specified threshold. This configuration is "
    "ignored if {p}message.timestamp.type=LogAppendTime."
)
_TS_DIFF_DOC = (
    "[DEPRECATED] The maximum difference allowed between the timestamp when a broker receives "
    "a message and the timestamp specified in the message. If {p}message.timestamp.type="
    "CreateTime, a message will be rejected if the difference in timestamp exceeds this "
    "threshold. This configuration is ignored if {p}message.timestamp.type=LogAppendTime."
)
# The three timestamp limits, topic names (the broker's carry a ``log.`` prefix), in Kafka's
# order.
_TS_LIMITS = (
    ("message.timestamp.difference.max.ms", _TS_DIFF_DOC),
    ("message.timestamp.before.max.ms", _TS_BEFORE_DOC),
    ("message.timestamp.after.max.ms", _TS_AFTER_DOC),
)
_THROTTLE_SIDES = ("leader", "follower")  # each throttle comes as one config per side
_THROTTLED_DOC = (
    "A list of replicas for which log replication should be throttled on the {side} side. The "
    "list should describe a set of replicas in the form [PartitionId]:[BrokerId],"
    "[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle "
    "all replicas for this topic."
)
_THROTTLED_RATE_DOC = (
    "A long representing the upper bound (bytes/sec) on replication traffic for {side}s "
    "enumerated in the property {side}.replication.throttled.replicas (for each topic). This "
    "property can be only set dynamically. It is suggested that the limit be kept above 1MB/s "
    "for accurate behaviour."
)

_BROKER_DEFS: tuple[ConfigDef, ...] = (
    # -- general --------------------------------------------------------------------------
    _broker(
        "broker.id",
        I,
        -1,
        "The broker id for this server. Weir takes it from runbroker --broker-id.",
    ),
    _broker(
        "broker.rack",
        S,
        None,
        "Rack of the broker. This will be used in rack aware replication assignment for "
        "fault tolerance. Examples: <code>RACK1</code>, <code>us-east-1d</code>",
    ),
    _broker(
        "listeners",
        S,
        "PLAINTEXT://:9092",
        "Listener List - Comma-separated list of URIs we will listen on and the listener "
        "names. Weir takes it from runbroker --listen.",
    ),
    _broker(
        "advertised.listeners",
        S,
        None,
        "Listeners to publish for clients to use, if different than the "
        "<code>listeners</code> config property. Weir takes it from runbroker --advertise.",
    ),
    _broker(
        "listener.security.protocol.map",
        S,
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "Map between listener names and security protocols. This must be defined for the "
        "same security protocol to be usable in more than one port or IP.",
    ),
    _broker(
        "sasl.enabled.mechanisms",
        LST,
        ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
        "The list of SASL mechanisms enabled in the Kafka server. Weir supports PLAIN, "
        "SCRAM-SHA-256 and SCRAM-SHA-512 (Kafka's default, GSSAPI, is not supported).",
    ),
    _broker(
        "inter.broker.listener.name",
        S,
        None,
        "Name of listener used for communication between brokers (replica fetches, "
        "requests to the controller). If this is unset, the first listener is used. It must "
        "be one of the broker's listeners.",
    ),
    _broker(
        "sasl.mechanism.inter.broker.protocol",
        S,
        None,
        "SASL mechanism used for inter-broker communication when the inter-broker listener "
        "is SASL_PLAINTEXT or SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Weir has no "
        "default (Kafka's is GSSAPI) and requires it for a SASL inter-broker listener.",
    ),
    _broker(
        "sasl.jaas.config",
        P,
        None,
        "JAAS login context parameters for SASL connections in the format used by JAAS "
        "configuration files, e.g. <code>org.apache.kafka.common.security.scram."
        'ScramLoginModule required username="broker" password="...";</code>. The broker '
        "logs in with it to the inter-broker listener; "
        "<code>listener.name.{listenerName}.{saslMechanism}.sasl.jaas.config</code> wins "
        "over it.",
    ),
    _broker(
        "message.max.bytes",
        I,
        1048588,
        _MAX_MESSAGE_BYTES_DOC + "This can be set per topic with the topic level "
        "<code>max.message.bytes</code> config.",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "num.io.threads",
        I,
        8,
        "The number of threads that the server uses for processing requests, which may "
        "include disk I/O",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker(
        "num.network.threads",
        I,
        3,
        "The number of threads that the server uses for receiving requests from the "
        "network and sending responses to the network.",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker(
        "background.threads",
        I,
        10,
        "The number of threads to use for various background processing tasks",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker(
        "queued.max.requests",
        I,
        500,
        "The number of queued requests allowed for data-plane, before blocking the network threads",
        Range.at_least(1),
    ),
    _broker(
        "delete.topic.enable",
        B,
        True,
        "Enables delete topic. Delete topic through the admin tool will have no effect if "
        "this config is turned off",
    ),
    _broker(
        "compression.type", S, "producer", _COMPRESSION_DOC, OneOf(COMPRESSION_TYPES), dynamic=True
    ),
    _broker("auto.create.topics.enable", B, True, "Enable auto creation of topic on the server."),
    _broker("controlled.shutdown.enable", B, True, "Enable controlled shutdown of the server."),
    _broker(
        "fetch.max.bytes",
        I,
        55 * 1024 * 1024,
        "The maximum number of bytes we will return for a fetch request. Must be at least 1024.",
        Range.at_least(1024),
    ),
    _broker(
        "max.incremental.fetch.session.cache.slots",
        I,
        1000,
        "The maximum number of total incremental fetch sessions that we will maintain.",
        Range.at_least(0),
    ),
    _broker(
        "broker.heartbeat.interval.ms",
        I,
        2000,
        "The length of time in milliseconds between broker heartbeats (renewals of the "
        "broker's registration lease).",
    ),
    _broker(
        "broker.session.timeout.ms",
        I,
        9000,
        "The length of time in milliseconds that a broker lease lasts if no heartbeats are made.",
    ),
    _broker(
        "delegation.token.secret.key",
        P,
        None,
        "Secret key to generate and verify delegation tokens. The same key must be "
        "configured across all the brokers. If the key is not set or set to empty string, "
        "brokers will disable the delegation token support.",
    ),
    # -- socket server --------------------------------------------------------------------
    _broker(
        "socket.send.buffer.bytes",
        I,
        100 * 1024,
        "The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS "
        "default will be used.",
    ),
    _broker(
        "socket.receive.buffer.bytes",
        I,
        100 * 1024,
        "The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS "
        "default will be used.",
    ),
    _broker(
        "socket.request.max.bytes",
        I,
        100 * 1024 * 1024,
        "The maximum number of bytes in a socket request",
        Range.at_least(1),
    ),
    _broker(
        "connections.max.idle.ms",
        L,
        10 * 60 * 1000,
        "Idle connections timeout: the server socket processor threads close the "
        "connections that idle more than this",
    ),
    _broker(
        "quota.window.num",
        I,
        11,
        "The number of samples to retain in memory for client quotas",
        Range.at_least(1),
    ),
    _broker(
        "quota.window.size.seconds",
        I,
        1,
        "The time span of each sample for client quotas",
        Range.at_least(1),
    ),
    _broker(
        "max.connections.per.ip",
        I,
        INT_MAX,
        "The maximum number of connections we allow from each ip address. This can be set to 0 "
        "if there are overrides configured using max.connections.per.ip.overrides property. "
        "New connections from the ip address are dropped if the limit is reached.",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "max.connections.per.ip.overrides",
        S,
        "",
        "A comma-separated list of per-ip or hostname overrides to the default maximum number "
        'of connections. An example value is "hostName:100,127.0.0.1:200"',
        _ip_overrides,
        dynamic=True,
    ),
    _broker(
        "max.connections",
        I,
        INT_MAX,
        "The maximum number of connections we allow in the broker at any time. This limit "
        "is applied in addition to any per-ip limits configured using "
        "max.connections.per.ip.",
        Range.at_least(0),
        dynamic=True,
    ),
    # -- log ------------------------------------------------------------------------------
    _broker(
        "num.partitions", I, 1, "The default number of log partitions per topic", Range.at_least(1)
    ),
    _broker(
        "log.segment.bytes",
        I,
        1024 * 1024 * 1024,
        "The maximum size of a single log file",
        Range.at_least(14),
        dynamic=True,
    ),
    _broker(
        "log.roll.ms",
        L,
        None,
        "The maximum time before a new log segment is rolled out (in milliseconds). If not "
        "set, the value in log.roll.hours is used",
        dynamic=True,
    ),
    _broker(
        "log.roll.hours",
        I,
        168,
        "The maximum time before a new log segment is rolled out (in hours), secondary to "
        "log.roll.ms property",
        Range.at_least(1),
    ),
    _broker(
        "log.roll.jitter.ms",
        L,
        None,
        "The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not "
        "set, the value in log.roll.jitter.hours is used",
        dynamic=True,
    ),
    _broker(
        "log.roll.jitter.hours",
        I,
        0,
        "The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to "
        "log.roll.jitter.ms property",
        Range.at_least(0),
    ),
    _broker(
        "log.retention.ms",
        L,
        None,
        "The number of milliseconds to keep a log file before deleting it (in "
        "milliseconds), If not set, the value in log.retention.minutes is used. If set to "
        "-1, no time limit is applied.",
        dynamic=True,
    ),
    _broker(
        "log.retention.minutes",
        I,
        None,
        "The number of minutes to keep a log file before deleting it (in minutes), "
        "secondary to log.retention.ms property. If not set, the value in "
        "log.retention.hours is used",
    ),
    _broker(
        "log.retention.hours",
        I,
        168,
        "The number of hours to keep a log file before deleting it (in hours), tertiary to "
        "log.retention.ms property",
    ),
    _broker(
        "log.retention.bytes", L, -1, "The maximum size of the log before deleting it", dynamic=True
    ),
    _broker(
        "log.retention.check.interval.ms",
        L,
        5 * 60 * 1000,
        "The frequency in milliseconds that the log cleaner checks whether any log is "
        "eligible for deletion",
        Range.at_least(1),
    ),
    _broker(
        "log.cleanup.policy",
        LST,
        ("delete",),
        "The default cleanup policy for segments beyond the retention window. A comma "
        'separated list of valid policies. Valid policies are: "delete" and "compact"',
        EachOneOf(CLEANUP_POLICIES),
        dynamic=True,
    ),
    _broker(
        "log.index.size.max.bytes",
        I,
        10 * 1024 * 1024,
        "The maximum size in bytes of the offset index",
        # Kafka allows 4, but an index must hold at least two 12-byte time index entries.
        Range.at_least(24),
        dynamic=True,
    ),
    _broker(
        "log.index.interval.bytes",
        I,
        4096,
        "The interval with which we add an entry to the offset index.",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.flush.interval.messages",
        L,
        LONG_MAX,
        "The number of messages accumulated on a log partition before messages are "
        "flushed to disk.",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker(
        "log.segment.delete.delay.ms",
        L,
        60000,
        "The amount of time to wait before deleting a file from the filesystem. If the "
        "value is 0 and there is no file to delete, the system will wait 1 millisecond. "
        "Low value will cause busy waiting",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.flush.scheduler.interval.ms",
        L,
        LONG_MAX,
        "The frequency in ms that the log flusher checks whether any log needs to be "
        "flushed to disk",
    ),
    _broker(
        "log.flush.interval.ms",
        L,
        None,
        "The maximum time in ms that a message in any topic is kept in memory before "
        "flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used",
        dynamic=True,
    ),
    _broker(
        "log.flush.offset.checkpoint.interval.ms",
        I,
        60000,
        "The frequency with which we update the persistent record of the last flush which "
        "acts as the log recovery point.",
        Range.at_least(0),
    ),
    _broker(
        "log.flush.start.offset.checkpoint.interval.ms",
        I,
        60000,
        "The frequency with which we update the persistent record of log start offset",
        Range.at_least(0),
    ),
    _broker(
        "log.preallocate",
        B,
        False,
        "Should pre allocate file when create new segment? If you are using Kafka on "
        "Windows, you probably need to set it to true.",
        dynamic=True,
    ),
    _broker(
        "num.recovery.threads.per.data.dir",
        I,
        1,
        "The number of threads per data directory to be used for log recovery at startup "
        "and flushing at shutdown",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker("min.insync.replicas", I, 1, _MIN_ISR_DOC, Range.at_least(1), dynamic=True),
    _broker(
        "log.message.format.version",
        S,
        "3.0-IV1",
        "Specify the message format version the broker will use to append messages to the "
        "logs. The value should be a valid MetadataVersion.",
        _metadata_version,
    ),
    _broker(
        "log.message.timestamp.type",
        S,
        "CreateTime",
        "Define whether the timestamp in the message is message create time or log append "
        "time. The value should be either <code>CreateTime</code> or "
        "<code>LogAppendTime</code>.",
        OneOf(TIMESTAMP_TYPES),
        dynamic=True,
    ),
    *(
        _broker(f"log.{name}", L, LONG_MAX, doc.format(p="log."), Range.at_least(0), dynamic=True)
        for name, doc in _TS_LIMITS
    ),
    _broker(
        "log.message.downconversion.enable",
        B,
        True,
        "This configuration controls whether down-conversion of message formats is enabled "
        "to satisfy consume requests.",
        dynamic=True,
    ),
    # -- log cleaner ----------------------------------------------------------------------
    _broker(
        "log.cleaner.enable",
        B,
        True,
        "Enable the log cleaner process to run on the server. Should be enabled if using "
        "any topics with a cleanup.policy=compact including the internal offsets topic. If "
        "disabled those topics will not be compacted and continually grow in size.",
    ),
    _broker(
        "log.cleaner.threads",
        I,
        1,
        "The number of background threads to use for log cleaning",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.cleaner.io.max.bytes.per.second",
        D,
        DOUBLE_MAX,
        "The log cleaner will be throttled so that the sum of its read and write i/o will "
        "be less than this value on average",
        dynamic=True,
    ),
    _broker(
        "log.cleaner.dedupe.buffer.size",
        L,
        128 * 1024 * 1024,
        "The total memory used for log deduplication across all cleaner threads",
        dynamic=True,
    ),
    _broker(
        "log.cleaner.io.buffer.size",
        I,
        512 * 1024,
        "The total memory used for log cleaner I/O buffers across all cleaner threads",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.cleaner.io.buffer.load.factor",
        D,
        0.9,
        "Log cleaner dedupe buffer load factor. The percentage full the dedupe buffer can "
        "become. A higher value will allow more log to be cleaned at once but will lead to "
        "more hash collisions",
        dynamic=True,
    ),
    _broker(
        "log.cleaner.backoff.ms",
        L,
        15000,
        "The amount of time to sleep when there are no logs to clean",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.cleaner.min.cleanable.ratio",
        D,
        0.5,
        "The minimum ratio of dirty log to total log for a log to eligible for cleaning. "
        "If the log.cleaner.max.compaction.lag.ms or the log.cleaner.min.compaction.lag.ms "
        "configurations are also specified, then the log compactor considers the log "
        "eligible for compaction as soon as either: (i) the dirty ratio threshold has been "
        "met and the log has had dirty (uncompacted) records for at least the "
        "log.cleaner.min.compaction.lag.ms duration, or (ii) if the log has had dirty "
        "(uncompacted) records for at most the log.cleaner.max.compaction.lag.ms period.",
        Range.between(0, 1),
        dynamic=True,
    ),
    _broker(
        "log.cleaner.delete.retention.ms",
        L,
        24 * 60 * 60 * 1000,
        "The amount of time to retain tombstone message markers for log compacted topics. "
        "This setting also gives a bound on the time in which a consumer must complete a "
        "read if they begin from offset 0 to ensure that they get a valid snapshot of the "
        "final stage (otherwise  tombstones messages may be collected before a consumer "
        "completes their scan).",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.cleaner.min.compaction.lag.ms",
        L,
        0,
        "The minimum time a message will remain uncompacted in the log. Only applicable for "
        "logs that are being compacted.",
        Range.at_least(0),
        dynamic=True,
    ),
    _broker(
        "log.cleaner.max.compaction.lag.ms",
        L,
        LONG_MAX,
        "The maximum time a message will remain ineligible for compaction in the log. Only "
        "applicable for logs that are being compacted.",
        Range.at_least(1),
        dynamic=True,
    ),
    # -- replication ----------------------------------------------------------------------
    _broker(
        "default.replication.factor",
        I,
        1,
        "The replication factor for automatically created topics, and for topics created "
        "with -1 as the replication factor",
    ),
    _broker(
        "replica.lag.time.max.ms",
        L,
        30000,
        "If a follower hasn't sent any fetch requests or hasn't consumed up to the leaders "
        "log end offset for at least this time, the leader will remove the follower from "
        "isr",
    ),
    _broker(
        "replica.socket.timeout.ms",
        I,
        30 * 1000,
        "The socket timeout for network requests. Its value should be at least "
        "replica.fetch.wait.max.ms",
    ),
    _broker(
        "replica.fetch.max.bytes",
        I,
        1024 * 1024,
        "The number of bytes of messages to attempt to fetch for each partition. This is "
        "not an absolute maximum, if the first record batch in the first non-empty "
        "partition of the fetch is larger than this value, the record batch will still be "
        "returned to ensure that progress can be made. The maximum record batch size "
        "accepted by the broker is defined via <code>message.max.bytes</code> (broker "
        "config) or <code>max.message.bytes</code> (topic config).",
        Range.at_least(0),
    ),
    _broker(
        "replica.fetch.wait.max.ms",
        I,
        500,
        "The maximum wait time for each fetcher request issued by follower replicas. This "
        "value should always be less than the replica.lag.time.max.ms at all times to "
        "prevent frequent shrinking of ISR for low throughput topics",
    ),
    _broker(
        "replica.fetch.min.bytes",
        I,
        1,
        "Minimum bytes expected for each fetch response. If not enough bytes, wait up to "
        "<code>replica.fetch.wait.max.ms</code> (broker config).",
    ),
    _broker(
        "replica.fetch.backoff.ms",
        I,
        1000,
        "The amount of time to sleep when fetch partition error occurs.",
        Range.at_least(0),
    ),
    _broker(
        "replica.fetch.response.max.bytes",
        I,
        10 * 1024 * 1024,
        "Maximum bytes expected for the entire fetch response. Records are fetched in "
        "batches, and if the first record batch in the first non-empty partition of the "
        "fetch is larger than this value, the record batch will still be returned to ensure "
        "that progress can be made. As such, this is not an absolute maximum.",
        Range.at_least(0),
    ),
    _broker(
        "num.replica.fetchers",
        I,
        1,
        "Number of fetcher threads used to replicate records from each source broker.",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker(
        "replica.high.watermark.checkpoint.interval.ms",
        L,
        5000,
        "The frequency with which the high watermark is saved out to disk",
    ),
    _broker(
        "auto.leader.rebalance.enable",
        B,
        True,
        "Enables auto leader balancing. A background thread checks the distribution of "
        "partition leaders at regular intervals, configurable by "
        "leader.imbalance.check.interval.seconds. If the leader imbalance exceeds "
        "leader.imbalance.per.broker.percentage, leader rebalance to the preferred leader "
        "for partitions is triggered.",
    ),
    _broker(
        "leader.imbalance.per.broker.percentage",
        I,
        10,
        "The ratio of leader imbalance allowed per broker. The controller would trigger a "
        "leader balance if it goes above this value per broker. The value is specified in "
        "percentage.",
    ),
    _broker(
        "leader.imbalance.check.interval.seconds",
        L,
        300,
        "The frequency with which the partition rebalance check is triggered by the controller",
        Range.at_least(1),
    ),
    _broker("unclean.leader.election.enable", B, False, _UNCLEAN_DOC, dynamic=True),
    *(
        _broker(
            f"{side}.replication.throttled.rate",
            L,
            LONG_MAX,
            _THROTTLED_RATE_DOC.format(side=side),
            Range.at_least(0),
            dynamic=True,
            dynamic_only=True,
        )
        for side in _THROTTLE_SIDES
    ),
    # -- group coordinator ----------------------------------------------------------------
    _broker(
        "group.min.session.timeout.ms",
        I,
        6000,
        "The minimum allowed session timeout for registered consumers. Shorter timeouts "
        "result in quicker failure detection at the cost of more frequent consumer "
        "heartbeating, which can overwhelm broker resources.",
    ),
    _broker(
        "group.max.session.timeout.ms",
        I,
        1800000,
        "The maximum allowed session timeout for registered consumers. Longer timeouts give "
        "consumers more time to process messages in between heartbeats at the cost of a "
        "longer time to detect failures.",
    ),
    _broker(
        "group.initial.rebalance.delay.ms",
        I,
        3000,
        "The amount of time the group coordinator will wait for more consumers to join a "
        "new group before performing the first rebalance. A longer delay means potentially "
        "fewer rebalances, but increases the time until processing begins.",
    ),
    _broker(
        "group.max.size",
        I,
        INT_MAX,
        "The maximum number of consumers that a single consumer group can accommodate.",
        Range.at_least(1),
    ),
    _broker(
        "metadata.max.retention.ms",
        L,
        604800000,
        "The maximum time before the metadata log's history is deleted. Weir's materialized "
        "metadata in Redis always holds the current state, so history older than this is "
        "trimmed from the metadata log by the controller.",
        Range.at_least(1),
    ),
    _broker(
        "offset.metadata.max.bytes",
        I,
        4096,
        "The maximum size for a metadata entry associated with an offset commit.",
    ),
    _broker(
        "offsets.topic.num.partitions",
        I,
        50,
        "The number of partitions for the offset commit topic (should not change after "
        "deployment).",
        Range.at_least(1),
    ),
    _broker(
        "offsets.topic.replication.factor",
        H,
        3,
        "The replication factor for the offsets topic (set higher to ensure availability). "
        "Internal topic creation will fail until the cluster size meets this replication "
        "factor requirement.",
        Range.at_least(1),
    ),
    _broker(
        "offsets.topic.segment.bytes",
        I,
        100 * 1024 * 1024,
        "The offsets topic segment bytes should be kept relatively small in order to "
        "facilitate faster log compaction and cache loads.",
        Range.at_least(1),
    ),
    _broker(
        "offsets.retention.minutes",
        I,
        7 * 24 * 60,
        "For subscribed consumers, committed offset of a specific partition will be "
        "expired and discarded when 1) this retention period has elapsed after the consumer "
        "group loses all its consumers (i.e. becomes empty); 2) this retention period has "
        "elapsed since the last time an offset is committed for the partition and the "
        "group is no longer subscribed to the corresponding topic. For standalone consumers "
        "(using manual assignment), offsets will be expired after this retention period "
        "has elapsed since the time of last commit.",
        Range.at_least(1),
    ),
    _broker(
        "offsets.retention.check.interval.ms",
        L,
        600000,
        "Frequency at which to check for stale offsets",
        Range.at_least(1),
    ),
    _broker(
        "offsets.commit.timeout.ms",
        I,
        5000,
        "Offset commit will be delayed until all replicas for the offsets topic receive the "
        "commit or this timeout is reached. This is similar to the producer request "
        "timeout.",
        Range.at_least(1),
    ),
    # -- transactions and producer state --------------------------------------------------
    _broker(
        "transactional.id.expiration.ms",
        I,
        7 * 24 * 60 * 60 * 1000,
        "The time in ms that the transaction coordinator will wait without receiving any "
        "transaction status updates for the current transaction before expiring its "
        "transactional id. Transactional IDs will not expire while a the transaction is "
        "still ongoing.",
        Range.at_least(1),
    ),
    _broker(
        "transaction.max.timeout.ms",
        I,
        15 * 60 * 1000,
        "The maximum allowed timeout for transactions. If a client's requested transaction "
        "time exceed this, then the broker will return an error in InitProducerIdRequest. "
        "This prevents a client from too large of a timeout, which can stall consumers "
        "reading from topics included in the transaction.",
        Range.at_least(1),
    ),
    _broker(
        "transaction.state.log.num.partitions",
        I,
        50,
        "The number of partitions for the transaction topic (should not change after deployment).",
        Range.at_least(1),
    ),
    _broker(
        "transaction.state.log.replication.factor",
        H,
        3,
        "The replication factor for the transaction topic (set higher to ensure "
        "availability). Internal topic creation will fail until the cluster size meets "
        "this replication factor requirement.",
        Range.at_least(1),
    ),
    _broker(
        "transaction.state.log.min.isr",
        I,
        2,
        "The minimum number of replicas that must acknowledge a write to transaction topic "
        "in order to be considered successful.",
        Range.at_least(1),
    ),
    _broker(
        "transaction.state.log.segment.bytes",
        I,
        100 * 1024 * 1024,
        "The transaction topic segment bytes should be kept relatively small in order to "
        "facilitate faster log compaction and cache loads",
        Range.at_least(1),
    ),
    _broker(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        I,
        10000,
        "The interval at which to rollback transactions that have timed out",
        Range.at_least(1),
    ),
    _broker(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        I,
        3600000,
        "The interval at which to remove transactions that have expired due to "
        "<code>transactional.id.expiration.ms</code> passing",
        Range.at_least(1),
    ),
    _broker(
        "transaction.partition.verification.enable",
        B,
        True,
        "Enable verification that checks that the partition has been added to the "
        "transaction before writing transactional records to the partition",
        dynamic=True,
    ),
    _broker(
        "producer.id.expiration.ms",
        I,
        86400000,
        "The time in ms that a topic partition leader will wait before expiring producer "
        "IDs. Producer IDs will not expire while a transaction associated to them is still "
        "ongoing.",
        Range.at_least(1),
        dynamic=True,
    ),
    _broker(
        "producer.id.expiration.check.interval.ms",
        I,
        600000,
        "The interval at which to remove producer IDs that have expired due to "
        "<code>producer.id.expiration.ms</code> passing.",
        Range.at_least(1),
    ),
    # -- authorizer (weir.security.acl) ----------------------------------------------------
    _broker(
        "authorizer.class.name",
        S,
        "",
        "The fully qualified name of a class that implements "
        "org.apache.kafka.server.authorizer.Authorizer interface, which is used by the broker "
        "for authorization. Weir enables its ACL authorizer for "
        "<code>org.apache.kafka.metadata.authorizer.StandardAuthorizer</code> (or "
        "<code>kafka.security.authorizer.AclAuthorizer</code>); empty disables authorization.",
    ),
    _broker(
        "super.users",
        S,
        None,
        "A semicolon-separated list of principals (<code>User:admin;User:ops</code>) that "
        "are allowed every operation on every resource.",
    ),
    _broker(
        "allow.everyone.if.no.acl.found",
        B,
        False,
        "When true, a resource with no ACLs at all may be accessed by everyone; when false, "
        "only super users may access it.",
    ),
    # -- TLS (weir.security.tls); each may be prefixed listener.name.<listener>. ----------
    _broker(
        "ssl.keystore.location",
        S,
        None,
        "The location of the key store file: the server certificate (and private key) of an "
        "SSL or SASL_SSL listener, also presented as client certificate to other brokers.",
    ),
    _broker(
        "ssl.keystore.type",
        S,
        "PEM",
        "The file format of the key store file: PEM (private key and certificate chain in one "
        "file) or PKCS12. Weir cannot read JKS, Kafka's default, so its default is PEM.",
    ),
    _broker(
        "ssl.keystore.password",
        P,
        None,
        "The store password for the key store file (PKCS12).",
    ),
    _broker(
        "ssl.key.password",
        P,
        None,
        "The password of the private key in the key store file (an encrypted PEM key).",
    ),
    _broker(
        "ssl.truststore.location",
        S,
        None,
        "The location of the trust store file: the CA certificates client certificates "
        "(and, as a client, other brokers' certificates) are checked against.",
    ),
    _broker(
        "ssl.truststore.type",
        S,
        "PEM",
        "The file format of the trust store file: PEM or PKCS12 (JKS is not supported).",
    ),
    _broker(
        "ssl.truststore.password",
        P,
        None,
        "The password for the trust store file (PKCS12).",
    ),
    _broker(
        "ssl.client.auth",
        S,
        "none",
        "Configures kafka broker to request client authentication: <code>required</code> "
        "(a client certificate is required), <code>requested</code> (optional; a client "
        "without one is User:ANONYMOUS) or <code>none</code>.",
        OneOf(("required", "requested", "none")),
    ),
    _broker(
        "ssl.principal.mapping.rules",
        S,
        "DEFAULT",
        "A list of rules for mapping from the distinguished name of a client certificate to "
        "a short name: <code>RULE:pattern/replacement/[LU]</code> entries and "
        "<code>DEFAULT</code> (the DN itself), tried in order, separated by commas.",
    ),
    _broker(
        "ssl.endpoint.identification.algorithm",
        S,
        "https",
        "The endpoint identification algorithm to validate server hostname using server "
        "certificate when this broker connects to another broker's TLS listener: "
        "<code>https</code>, or empty to skip the check.",
    ),
)


def _log(*names: str) -> tuple[Synonym, ...]:
    return tuple(Synonym(n) for n in names)


_TOPIC_DEFS: tuple[ConfigDef, ...] = (
    _topic(
        "segment.bytes",
        I,
        1024 * 1024 * 1024,
        "This configuration controls the segment file size for the log. Retention and "
        "cleaning is always done a file at a time so a larger segment size means fewer files "
        "but less granular control over retention.",
        Range.at_least(14),
        _log("log.segment.bytes"),
    ),
    _topic(
        "segment.ms",
        L,
        7 * 24 * MS_PER_HOUR,
        "This configuration controls the period of time after which Kafka will force the log "
        "to roll even if the segment file isn't full to ensure that retention can delete or "
        "compact old data.",
        Range.at_least(1),
        (Synonym("log.roll.ms"), Synonym("log.roll.hours", MS_PER_HOUR)),
    ),
    _topic(
        "segment.jitter.ms",
        L,
        0,
        "The maximum random jitter subtracted from the scheduled segment roll time to avoid "
        "thundering herds of segment rolling",
        Range.at_least(0),
        (Synonym("log.roll.jitter.ms"), Synonym("log.roll.jitter.hours", MS_PER_HOUR)),
    ),
    _topic(
        "segment.index.bytes",
        I,
        10 * 1024 * 1024,
        "This configuration controls the size of the index that maps offsets to file "
        "positions. We preallocate this index file and shrink it only after log rolls. You "
        "generally should not need to change this setting.",
        # Kafka allows 4, but an index must hold at least two 12-byte time index entries.
        Range.at_least(24),
        _log("log.index.size.max.bytes"),
    ),
    _topic(
        "flush.messages",
        L,
        LONG_MAX,
        "This setting allows specifying an interval at which we will force an fsync of data "
        "written to the log. For example if this was set to 1 we would fsync after every "
        "message; if it were 5 we would fsync after every five messages. In general we "
        "recommend you not set this and use replication for durability and allow the "
        "operating system's background flush capabilities as it is more efficient.",
        Range.at_least(1),
        _log("log.flush.interval.messages"),
    ),
    _topic(
        "flush.ms",
        L,
        LONG_MAX,
        "This setting allows specifying a time interval at which we will force an fsync of "
        "data written to the log. For example if this was set to 1000 we would fsync after "
        "1000 ms had passed. In general we recommend you not set this and use replication "
        "for durability and allow the operating system's background flush capabilities as "
        "it is more efficient.",
        Range.at_least(0),
        _log("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    ),
    _topic(
        "retention.bytes",
        L,
        -1,
        "This configuration controls the maximum size a partition (which consists of log "
        "segments) can grow to before we will discard old log segments to free up space if "
        'we are using the "delete" retention policy. By default there is no size limit only '
        "a time limit. Since this limit is enforced at the partition level, multiply it by "
        "the number of partitions to compute the topic retention in bytes.",
        None,
        _log("log.retention.bytes"),
    ),
    _topic(
        "retention.ms",
        L,
        7 * 24 * MS_PER_HOUR,
        "This configuration controls the maximum time we will retain a log before we will "
        'discard old log segments to free up space if we are using the "delete" retention '
        "policy. This represents an SLA on how soon consumers must read their data. If set "
        "to -1, no time limit is applied.",
        Range.at_least(-1),
        (
            Synonym("log.retention.ms"),
            Synonym("log.retention.minutes", MS_PER_MINUTE),
            Synonym("log.retention.hours", MS_PER_HOUR),
        ),
    ),
    _topic(
        "max.message.bytes",
        I,
        1048588,
        _MAX_MESSAGE_BYTES_DOC,
        Range.at_least(0),
        _log("message.max.bytes"),
    ),
    _topic(
        "index.interval.bytes",
        I,
        4096,
        "This setting controls how frequently Kafka adds an index entry to its offset index. "
        "The default setting ensures that we index a message roughly every 4096 bytes. More "
        "indexing allows reads to jump closer to the exact position in the log but makes "
        "the index larger. You probably don't need to change this.",
        Range.at_least(0),
        _log("log.index.interval.bytes"),
    ),
    _topic(
        "delete.retention.ms",
        L,
        24 * MS_PER_HOUR,
        'The amount of time to retain delete tombstone markers for <a href="#compaction">'
        "log compacted</a> topics. This setting also gives a bound on the time in which a "
        "consumer must complete a read if they begin from offset 0 to ensure that they get a "
        "valid snapshot of the final stage (otherwise delete tombstones may be collected "
        "before they complete their scan).",
        Range.at_least(0),
        _log("log.cleaner.delete.retention.ms"),
    ),
    _topic(
        "min.compaction.lag.ms",
        L,
        0,
        "The minimum time a message will remain uncompacted in the log. Only applicable for "
        "logs that are being compacted.",
        Range.at_least(0),
        _log("log.cleaner.min.compaction.lag.ms"),
    ),
    _topic(
        "max.compaction.lag.ms",
        L,
        LONG_MAX,
        "The maximum time a message will remain ineligible for compaction in the log. Only "
        "applicable for logs that are being compacted.",
        Range.at_least(1),
        _log("log.cleaner.max.compaction.lag.ms"),
    ),
    _topic(
        "file.delete.delay.ms",
        L,
        60000,
        "The time to wait before deleting a file from the filesystem",
        Range.at_least(0),
        _log("log.segment.delete.delay.ms"),
    ),
    _topic(
        "min.cleanable.dirty.ratio",
        D,
        0.5,
        "This configuration controls how frequently the log compactor will attempt to clean "
        'the log (assuming <a href="#compaction">log compaction</a> is enabled). By '
        "default we will avoid cleaning a log where more than 50% of the log has been "
        "compacted. This ratio bounds the maximum space wasted in the log by duplicates (at "
        "50% at most 50% of the log could be duplicates). A higher ratio will mean fewer, "
        "more efficient cleanings but will mean more wasted space in the log. If the "
        "max.compaction.lag.ms or the min.compaction.lag.ms configurations are also "
        "specified, then the log compactor considers the log to be eligible for compaction "
        "as soon as either: (i) the dirty ratio threshold has been met and the log has had "
        "dirty (uncompacted) records for at least the min.compaction.lag.ms duration, or "
        "(ii) if the log has had dirty (uncompacted) records for at most the "
        "max.compaction.lag.ms period.",
        Range.between(0, 1),
        _log("log.cleaner.min.cleanable.ratio"),
    ),
    _topic(
        "cleanup.policy",
        LST,
        ("delete",),
        'This config designates the retention policy to use on log segments. The "delete" '
        "policy (which is the default) will discard old segments when their retention time "
        'or size limit has been reached. The "compact" policy will enable <a '
        'href="#compaction">log compaction</a>, which retains the latest value for each '
        "key. It is also possible to specify both policies in a comma-separated list (e.g. "
        '"delete,compact"). In this case, old segments will be discarded per the retention '
        "time and size configuration, while retained segments will be compacted.",
        EachOneOf(CLEANUP_POLICIES),
        _log("log.cleanup.policy"),
    ),
    _topic(
        "unclean.leader.election.enable",
        B,
        False,
        _UNCLEAN_DOC,
        None,
        _log("unclean.leader.election.enable"),
    ),
    _topic(
        "min.insync.replicas", I, 1, _MIN_ISR_DOC, Range.at_least(1), _log("min.insync.replicas")
    ),
    _topic(
        "compression.type",
        S,
        "producer",
        _COMPRESSION_DOC,
        OneOf(COMPRESSION_TYPES),
        _log("compression.type"),
    ),
    _topic(
        "preallocate",
        B,
        False,
        "True if we should preallocate the file on disk when creating a new log segment.",
        None,
        _log("log.preallocate"),
    ),
    _topic(
        "message.format.version",
        S,
        "3.0-IV1",
        "[DEPRECATED] Specify the message format version the broker will use to append "
        "messages to the logs. The value of this config is always assumed to be `3.0` if "
        "`inter.broker.protocol.version` is 3.0 or higher (the actual config value is "
        "ignored).",
        _metadata_version,
        _log("log.message.format.version"),
    ),
    _topic(
        "message.timestamp.type",
        S,
        "CreateTime",
        "Define whether the timestamp in the message is message create time or log append "
        "time. The value should be either `CreateTime` or `LogAppendTime`",
        OneOf(TIMESTAMP_TYPES),
        _log("log.message.timestamp.type"),
    ),
    *(
        _topic(name, L, LONG_MAX, doc.format(p=""), Range.at_least(0), _log(f"log.{name}"))
        for name, doc in _TS_LIMITS
    ),
    *(
        _topic(
            f"{side}.replication.throttled.replicas",
            LST,
            (),
            _THROTTLED_DOC.format(side=side),
            _throttled_replicas,
        )
        for side in _THROTTLE_SIDES
    ),
    _topic(
        "message.downconversion.enable",
        B,
        True,
        "This configuration controls whether down-conversion of message formats is enabled "
        "to satisfy consume requests. When set to <code>false</code>, broker will not "
        "perform down-conversion for consumers expecting an older message format. The "
        "broker responds with <code>UNSUPPORTED_VERSION</code> error for consume requests "
        "from such older clients. This configuration does not apply to any message format "
        "conversion that might be required for replication to followers.",
        None,
        _log("log.message.downconversion.enable"),
    ),
)


# -- what Weir does with each config ---------------------------------------------------------
_THREADS = "Weir serves a broker from one asyncio event loop; it has no such thread pool"
_TRANSACTIONS = (
    "Weir does not yet verify that a partition was added to a transaction before a "
    "transactional write (KIP-890's verification); it behaves as Kafka with this set to false"
)
_PREALLOCATE = "Weir does not preallocate segment files: they grow as batches are appended"
_CLEANER_MEMORY = (
    "Weir's log cleaner keeps its key map and buffers as Python objects sized by the dirty "
    "data of one partition, not in fixed buffers"
)
_REFUSED_BROKER: Mapping[str, str] = {
    "num.io.threads": _THREADS,
    "num.network.threads": _THREADS,
    "background.threads": _THREADS,
    "delegation.token.secret.key": "Weir has no delegation tokens",
    "transaction.partition.verification.enable": _TRANSACTIONS,
    "log.preallocate": _PREALLOCATE,
    "log.retention.check.interval.ms": (
        "retention runs as the control plane's `retention` job on Celery beat (every 300 s by "
        "default; set its interval in the jobs schedule), not on a broker timer"
    ),
    "log.cleaner.threads": (
        "compaction runs as the control plane's `compaction` job; each broker cleans one "
        "partition at a time, on a worker thread"
    ),
    "log.cleaner.backoff.ms": (
        "the cleaner has no idle loop: it runs when the control plane's `compaction` job does "
        "(every 60 s by default; set its interval in the jobs schedule)"
    ),
    "log.cleaner.dedupe.buffer.size": _CLEANER_MEMORY,
    "log.cleaner.io.buffer.size": _CLEANER_MEMORY,
    "log.cleaner.io.buffer.load.factor": _CLEANER_MEMORY,
    "log.cleaner.io.max.bytes.per.second": "Weir's log cleaner does not throttle its I/O",
}
_REFUSED_TOPIC: Mapping[str, str] = {"preallocate": _PREALLOCATE}
_FORMAT = "Kafka 3.x ignores it (record batches are always format v2); Weir behaves as a 3.x broker"
_DOWNCONVERSION = (
    "Weir serves Fetch v4 and later only, which never need down-conversion (Kafka down-converts "
    "only for Fetch v0-3); older Fetch versions get UNSUPPORTED_VERSION whatever the value"
)
_NO_EFFECT_BROKER: Mapping[str, str] = {
    "log.message.format.version": _FORMAT,
    "log.message.downconversion.enable": _DOWNCONVERSION,
    "max.incremental.fetch.session.cache.slots": (
        "Weir keeps no incremental fetch sessions (KIP-227): every Fetch is answered in full "
        "with session id 0, which clients follow by sending full fetches, as with Kafka when "
        "this cache is full or 0"
    ),
}
_NO_EFFECT_TOPIC: Mapping[str, str] = {
    "message.format.version": _FORMAT,
    "message.downconversion.enable": _DOWNCONVERSION,
}


def _classified(
    defs: tuple[ConfigDef, ...], refused: Mapping[str, str], no_effect: Mapping[str, str]
) -> Mapping[str, ConfigDef]:
    """The table by name, each definition carrying its ``Support`` and note."""
    names = {d.name for d in defs}
    unknown = (set(refused) | set(no_effect)) - names
    assert not unknown, f"classified configs that do not exist: {sorted(unknown)}"
    table: dict[str, ConfigDef] = {}
    for d in defs:
        if d.name in refused:
            d = replace(d, support=Support.REFUSED, support_note=refused[d.name])
        elif d.name in no_effect:
            d = replace(d, support=Support.NO_EFFECT, support_note=no_effect[d.name])
        table[d.name] = d
    return MappingProxyType(table)


BROKER_CONFIGS: Mapping[str, ConfigDef] = _classified(
    _BROKER_DEFS, _REFUSED_BROKER, _NO_EFFECT_BROKER
)
TOPIC_CONFIGS: Mapping[str, ConfigDef] = _classified(_TOPIC_DEFS, _REFUSED_TOPIC, _NO_EFFECT_TOPIC)


def _refused(kind: str, definition: ConfigDef) -> str:
    return (
        f"{definition.name} is not supported by Weir ({definition.support_note}); see "
        f"docs/configuration.md for every {kind} config Weir implements"
    )


def _unsupported(kind: str, definition: ConfigDef) -> str | None:
    """Why Weir refuses this config whatever its value, or None when it accepts it."""
    if definition.support == Support.REFUSED:
        return _refused(kind, definition)
    return None


def _documentation(definition: ConfigDef) -> str:
    """Kafka's documentation, prefixed with what Weir does when that is not Kafka's."""
    if definition.support == Support.IMPLEMENTED:
        return definition.doc
    return f"[Weir: {definition.support}: {definition.support_note}] {definition.doc}"


# Broker configs that are several names for one setting (``DynamicBrokerConfig
# .brokerConfigSynonyms``), in precedence order. Describe lists them as synonyms.
_BROKER_SYNONYM_GROUPS: tuple[tuple[str, ...], ...] = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def _broker_synonyms(name: str) -> tuple[str, ...]:
    if name == "log.flush.interval.ms":  # the scheduler interval is its default
        return ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")
    for group in _BROKER_SYNONYM_GROUPS:
        if name in group:
            return group
    return (name,)


def _unknown_message(kind: str, name: str, known: Iterable[str]) -> str:
    message = f"Unknown {kind} config name: {name}"
    close = difflib.get_close_matches(name, list(known), n=1)
    if close:
        message += f" (did you mean {close[0]}?)"
    return message


# -- broker config ---------------------------------------------------------------------------
_LISTENER_PREFIX = re.compile(r"listener\.name\.([a-z0-9_-]+)\.(.+)")
_JAAS_SUFFIX = re.compile(r"(plain|scram-sha-256|scram-sha-512)\.sasl\.jaas\.config")


def _listener_config(key: str) -> ConfigDef | None:
    """Kafka's per-listener overrides, ``listener.name.<listener lower-case>.<config>``
    (and ``...<mechanism lower-case>.sasl.jaas.config``): validated like the bare config."""
    match = _LISTENER_PREFIX.fullmatch(key)
    if match is None:
        return None
    rest = match.group(2)
    if _JAAS_SUFFIX.fullmatch(rest):
        rest = "sasl.jaas.config"
    definition = BROKER_CONFIGS.get(rest)
    # max.connections per listener is static here (Kafka also alters it per broker).
    if definition is None or not (rest.startswith(("ssl.", "sasl.")) or rest == "max.connections"):
        return None
    return definition


def parse_broker_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """``runbroker --config key=value ...`` → validated ``{key: value}`` (last one wins).

    Errors name the flag and the key: ``--config num.partitions=abc: Invalid value abc for
    configuration num.partitions: Not a number of type INT``.
    """
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidConfigError(key, f"--config expects KEY=VALUE, got {pair!r}")
        definition = BROKER_CONFIGS.get(key) or _listener_config(key)
        if definition is None:
            message = _unknown_message("broker", key, BROKER_CONFIGS)
            topic_def = TOPIC_CONFIGS.get(key)
            if topic_def is not None and topic_def.synonyms:
                message = (
                    f"{key} is a topic config; the broker-wide default is "
                    f"{topic_def.synonyms[0].name}"
                )
            raise InvalidConfigError(key, f"--config {pair}: {message}")
        if definition.dynamic_only:
            raise InvalidConfigError(
                key, f"--config {pair}: {key} can only be set dynamically (kafka-configs --alter)"
            )
        try:
            parsed = definition.parse(value)
        except InvalidConfigError as exc:
            raise InvalidConfigError(key, f"--config {pair}: {exc.message}") from None
        problem = _unsupported("broker", definition)
        if problem is not None:
            raise InvalidConfigError(key, f"--config {pair}: {problem}")
        result[key] = definition.to_string(parsed) or ""
    return result


def validate_broker_dynamic_configs(
    configs: Mapping[str, str | None], *, per_broker: bool = True
) -> dict[str, str]:
    """Validate dynamic broker overrides (AlterConfigs on a BROKER resource).

    Read-only configs are rejected (``Cannot update these configs dynamically: broker.id``),
    as are unknown names and bad values. Errors carry INVALID_REQUEST like Kafka's.
    ``per_broker`` is False for the cluster-wide default (empty resource name).
    """
    del per_broker  # every dynamic Weir broker config may be set at both levels
    code = ErrorCode.invalid_request
    nulls = sorted(k for k, v in configs.items() if v is None)
    if nulls:
        raise InvalidConfigError(
            nulls[0], f"Null value not supported for : {','.join(nulls)}", error_code=code
        )
    unknown = sorted(k for k in configs if k not in BROKER_CONFIGS)
    if unknown:
        raise InvalidConfigError(
            unknown[0], _unknown_message("broker", unknown[0], BROKER_CONFIGS), error_code=code
        )
    refused = sorted(k for k in configs if BROKER_CONFIGS[k].support == Support.REFUSED)
    if refused:
        raise InvalidConfigError(refused[0], _refused("broker", BROKER_CONFIGS[refused[0]]))
    read_only = sorted(k for k in configs if BROKER_CONFIGS[k].read_only)
    if read_only:
        raise InvalidConfigError(
            read_only[0],
            f"Cannot update these configs dynamically: {', '.join(read_only)} (read-only; "
            "set them with runbroker --config at start-up)",
            error_code=code,
        )
    result: dict[str, str] = {}
    for name, raw in configs.items():
        definition = BROKER_CONFIGS[name]
        try:
            parsed = definition.parse(raw)
        except InvalidConfigError as exc:
            raise InvalidConfigError(name, exc.message, error_code=code) from None
        problem = _unsupported("broker", definition)
        if problem is not None:
            raise InvalidConfigError(name, problem)
        result[name] = definition.to_string(parsed) or ""
    return result


class BrokerConfig:
    """The effective broker config: dynamic per-broker > dynamic default > static > default.

    Immutable; ``with_dynamic`` returns a new one when Redis overrides change.
    """

    __slots__ = ("_dynamic_broker", "_dynamic_default", "_static", "_values", "broker_id")

    def __init__(
        self,
        *,
        broker_id: int,
        static: Mapping[str, str] | None = None,
        dynamic_broker: Mapping[str, str] | None = None,
        dynamic_default: Mapping[str, str] | None = None,
    ) -> None:
        static_map = dict(static or {})
        given_id = static_map.get("broker.id")
        if given_id is not None and given_id.strip() != str(broker_id):
            raise InvalidConfigError(
                "broker.id",
                f"--config broker.id={given_id} conflicts with --broker-id {broker_id}",
            )
        static_map["broker.id"] = str(broker_id)
        self.broker_id = broker_id
        self._static = MappingProxyType(
            parse_broker_overrides(f"{k}={v}" for k, v in static_map.items())
        )
        self._dynamic_broker = MappingProxyType(_lenient_dynamic(dynamic_broker, "broker"))
        self._dynamic_default = MappingProxyType(_lenient_dynamic(dynamic_default, "default"))
        values: dict[str, Any] = {}
        for name, definition in BROKER_CONFIGS.items():
            raw = self.raw(name)
            values[name] = definition.default if raw is None else definition.parse(raw)
        self._values = MappingProxyType(values)

    def with_dynamic(
        self,
        *,
        dynamic_broker: Mapping[str, str] | None = None,
        dynamic_default: Mapping[str, str] | None = None,
    ) -> BrokerConfig:
        """A copy with new dynamic overrides (``None`` keeps the current ones)."""
        return BrokerConfig(
            broker_id=self.broker_id,
            static=self._static,
            dynamic_broker=self._dynamic_broker if dynamic_broker is None else dynamic_broker,
            dynamic_default=self._dynamic_default if dynamic_default is None else dynamic_default,
        )

    @property
    def static(self) -> Mapping[str, str]:
        return self._static

    @property
    def dynamic_broker(self) -> Mapping[str, str]:
        return self._dynamic_broker

    @property
    def dynamic_default(self) -> Mapping[str, str]:
        return self._dynamic_default

    def raw(self, name: str) -> str | None:
        """The string value of ``name`` from the highest-precedence level that sets it."""
        for level in (self._dynamic_broker, self._dynamic_default, self._static):
            if name in level:
                return level[name]
        return None

    def source(self, name: str) -> ConfigSource:
        if name in self._dynamic_broker:
            return ConfigSource.DYNAMIC_BROKER_CONFIG
        if name in self._dynamic_default:
            return ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if name in self._static:
            return ConfigSource.STATIC_BROKER_CONFIG
        return ConfigSource.DEFAULT_CONFIG

    def get(self, name: str) -> Any:
        """The typed value of exactly ``name`` (``None`` when unset with no default)."""
        try:
            return self._values[name]
        except KeyError:
            raise KeyError(_unknown_message("broker", name, BROKER_CONFIGS)) from None

    def topic_default(self, topic_config: str) -> Any:
        """The value a topic without an override gets for ``topic_config``."""
        definition = TOPIC_CONFIGS[topic_config]
        for synonym in definition.synonyms:
            value = self._values.get(synonym.name)
            if value is not None:
                if synonym.factor != 1:
                    value *= synonym.factor
                if topic_config == "retention.ms" and value < 0:
                    return -1  # KafkaConfig.logRetentionTimeMillis: negative means unlimited
                return value
        return definition.default

    @property
    def log_retention_ms(self) -> int:
        """``log.retention.ms`` > ``.minutes`` > ``.hours``, in ms (-1 = unlimited)."""
        return int(self.topic_default("retention.ms"))

    @property
    def log_roll_ms(self) -> int:
        """``log.roll.ms`` > ``log.roll.hours``, in ms."""
        return int(self.topic_default("segment.ms"))

    @property
    def log_flush_interval_ms(self) -> int:
        """``log.flush.interval.ms`` > ``log.flush.scheduler.interval.ms``."""
        return int(self.topic_default("flush.ms"))

    def __repr__(self) -> str:
        return (
            f"BrokerConfig(broker_id={self.broker_id}, static={dict(self._static)}, "
            f"dynamic_broker={dict(self._dynamic_broker)}, "
            f"dynamic_default={dict(self._dynamic_default)})"
        )


def check_broker_constraints(config: BrokerConfig) -> None:
    """The checks between configs Kafka's ``KafkaConfig`` makes at start-up; InvalidConfigError
    names the first config of a broken pair."""
    # (lower, higher, relation, strictly below): the heartbeat must leave the session time to
    # renew; a follower's long poll must end before its socket times out or the leader drops
    # it from the ISR.
    pairs = (
        ("broker.heartbeat.interval.ms", "broker.session.timeout.ms", "must be below", True),
        ("replica.fetch.wait.max.ms", "replica.socket.timeout.ms", "must be at most", False),
        ("replica.fetch.wait.max.ms", "replica.lag.time.max.ms", "must be at most", False),
    )
    for low, high, relation, strict in pairs:
        a, b = config.get(low), config.get(high)
        if a > b or (strict and a == b):
            raise InvalidConfigError(low, f"--config {low} ({a}) {relation} {high} ({b})")
    if config.get("max.connections.per.ip") == 0 and not config.get(
        "max.connections.per.ip.overrides"
    ):
        raise InvalidConfigError(
            "max.connections.per.ip",
            "--config max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides property is set.",
        )


def _lenient_dynamic(values: Mapping[str, str] | None, level: str) -> dict[str, str]:
    """Keep the dynamic overrides a broker can apply; log and drop the rest (as Kafka)."""
    kept: dict[str, str] = {}
    for name, raw in (values or {}).items():
        definition = BROKER_CONFIGS.get(name)
        if definition is None or definition.read_only:
            log.warning("ignoring dynamic %s config %s: not a dynamic broker config", level, name)
            continue
        try:
            parsed = definition.parse(raw)
        except InvalidConfigError as exc:
            log.warning("ignoring dynamic %s config: %s", level, exc.message)
            continue
        problem = _unsupported("broker", definition)
        if problem is not None:
            log.warning("ignoring dynamic %s config: %s", level, problem)
            continue
        kept[name] = definition.to_string(parsed) or ""
    return kept


# -- topic config ----------------------------------------------------------------------------
def validate_topic_configs(
    configs: Mapping[str, str | None], *, broker: BrokerConfig | None = None
) -> dict[str, str]:
    """Validate topic overrides (CreateTopics, AlterConfigs) → normalized ``{name: value}``.

    Raises InvalidConfigError (INVALID_CONFIG) for unknown names, null values, bad values
    and ``min.compaction.lag.ms`` > ``max.compaction.lag.ms`` (checked against the broker's
    defaults for whichever of the two is not overridden).
    """
    nulls = [k for k, v in configs.items() if v is None]
    if nulls:
        raise InvalidConfigError(
            nulls[0], f"Null value not supported for topic configs: {','.join(nulls)}"
        )
    result: dict[str, str] = {}
    parsed: dict[str, Any] = {}
    for name, raw in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise InvalidConfigError(name, _unknown_message("topic", name, TOPIC_CONFIGS))
        assert raw is not None
        parsed[name] = definition.parse(raw)
        problem = _unsupported("topic", definition)
        if problem is not None:
            raise InvalidConfigError(name, problem)
        result[name] = definition.to_string(parsed[name]) or ""

    def effective(name: str) -> Any:
        if name in parsed:
            return parsed[name]
        return broker.topic_default(name) if broker else TOPIC_CONFIGS[name].default

    low, high = effective("min.compaction.lag.ms"), effective("max.compaction.lag.ms")
    if low > high:
        raise InvalidConfigError(
            "min.compaction.lag.ms",
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})",
        )
    return result


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """The typed topic configs a broker obeys (attribute = Kafka name with ``_`` for ``.``).

    ``message_timestamp_before_max_ms`` / ``_after_max_ms`` are effective values: while left
    at their default they follow the deprecated ``message.timestamp.difference.max.ms``.
    """

    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    flush_messages: int
    flush_ms: int
    retention_bytes: int
    retention_ms: int
    max_message_bytes: int
    index_interval_bytes: int
    delete_retention_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    file_delete_delay_ms: int
    min_cleanable_dirty_ratio: float
    cleanup_policy: tuple[str, ...]
    unclean_leader_election_enable: bool
    min_insync_replicas: int
    compression_type: str
    preallocate: bool
    message_format_version: str
    message_timestamp_type: str
    message_timestamp_difference_max_ms: int
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int
    leader_replication_throttled_replicas: tuple[str, ...]
    follower_replication_throttled_replicas: tuple[str, ...]
    message_downconversion_enable: bool
    overridden: frozenset[str] = frozenset()

    @property
    def compact(self) -> bool:
        return "compact" in (p.lower() for p in self.cleanup_policy)

    @property
    def delete(self) -> bool:
        return "delete" in (p.lower() for p in self.cleanup_policy)


def _topic_values(broker: BrokerConfig, overrides: Mapping[str, str]) -> dict[str, Any]:
    """Typed value of every topic config; bad or unknown overrides are logged and ignored."""
    values: dict[str, Any] = {name: broker.topic_default(name) for name in TOPIC_CONFIGS}
    for name, raw in overrides.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            log.warning("ignoring unknown topic config %s=%s", name, raw)
            continue
        try:
            parsed = definition.parse(raw)
        except InvalidConfigError as exc:
            log.warning("ignoring topic config override: %s", exc.message)
            continue
        problem = _unsupported("topic", definition)
        if problem is not None:
            log.warning("ignoring topic config override: %s", problem)
            continue
        values[name] = parsed
    return values


def effective_topic_config(broker: BrokerConfig, overrides: Mapping[str, str]) -> TopicConfig:
    """The topic's overrides on top of the broker's effective defaults, typed."""
    values = _topic_values(broker, overrides)
    difference = values["message.timestamp.difference.max.ms"]
    for name in ("message.timestamp.before.max.ms", "message.timestamp.after.max.ms"):
        if values[name] == LONG_MAX:  # LogConfig.getMessageTimestamp{Before,After}MaxMs
            values[name] = difference
    kwargs = {
        f.name: values[f.name.replace("_", ".")]
        for f in fields(TopicConfig)
        if f.name != "overridden"
    }
    overridden = frozenset(n for n in overrides if n in TOPIC_CONFIGS)
    return TopicConfig(**kwargs, overridden=overridden)


# -- describe --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    """One DescribeConfigs synonym: where a value could come from."""

    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One DescribeConfigs result entry (``value`` is None for sensitive configs)."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    config_type: ConfigType
    documentation: str | None


_DEFAULT_STRINGS: Mapping[str, str] = MappingProxyType(
    {
        name: text
        for name, d in BROKER_CONFIGS.items()
        if not d.dynamic_only and (text := d.to_string(d.default)) is not None
    }
)


def _broker_synonym_entries(
    broker: BrokerConfig, name: str, synonyms: tuple[str, ...], sensitive: bool
) -> list[ConfigSynonym]:
    """``ConfigHelper.configSynonyms``: by source first, then by synonym precedence."""
    levels: tuple[tuple[Mapping[str, str], ConfigSource], ...] = (
        (broker.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (broker.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (broker.static, ConfigSource.STATIC_BROKER_CONFIG),
        (_DEFAULT_STRINGS, ConfigSource.DEFAULT_CONFIG),
    )
    found = [
        ConfigSynonym(synonym, None if sensitive else level[synonym], source)
        for level, source in levels
        for synonym in synonyms
        if synonym in level
    ]
    # Kafka drops the entries before the first one named ``name`` (listener overrides there;
    # here it means e.g. a lone log.retention.hours is not listed under retention.ms).
    while found and found[0].name != name:
        found.pop(0)
    return found


def describe_topic_config(
    broker: BrokerConfig,
    overrides: Mapping[str, str],
    *,
    keys: Collection[str] | None = None,
) -> list[ConfigEntry]:
    """DescribeConfigs for a TOPIC resource, sorted by name (``keys`` filters; None = all)."""
    values = _topic_values(broker, overrides)
    entries: list[ConfigEntry] = []
    for name in sorted(TOPIC_CONFIGS):
        if keys and name not in keys:
            continue
        definition = TOPIC_CONFIGS[name]
        value = None if definition.sensitive else definition.to_string(values[name])
        synonyms: list[ConfigSynonym] = []
        if definition.synonyms:
            first = definition.synonyms[0].name
            synonyms = _broker_synonym_entries(
                broker, first, _broker_synonyms(first), definition.sensitive
            )
        if name in overrides:
            synonyms.insert(0, ConfigSynonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=False,
                sensitive=definition.sensitive,
                synonyms=tuple(synonyms),
                config_type=definition.type,
                documentation=_documentation(definition),
            )
        )
    return entries


def describe_broker_config(
    broker: BrokerConfig,
    *,
    keys: Collection[str] | None = None,
    per_broker: bool = True,
) -> list[ConfigEntry]:
    """DescribeConfigs for a BROKER resource, sorted by name.

    ``per_broker``: describe this broker (resource name ``"<id>"``): every config with its
    value. Otherwise the cluster default (resource name ``""``): only the configs set as
    dynamic cluster-wide defaults, with only those synonyms, as Kafka does.
    """
    if per_broker:
        names = [
            n for n, d in BROKER_CONFIGS.items() if not d.dynamic_only or broker.raw(n) is not None
        ]
    else:
        names = list(broker.dynamic_default)
    entries: list[ConfigEntry] = []
    for name in sorted(names):
        if keys and name not in keys:
            continue
        definition = BROKER_CONFIGS[name]
        if per_broker:
            value = definition.to_string(broker.get(name))
        else:
            value = broker.dynamic_default[name]
        synonyms = _broker_synonym_entries(
            broker, name, _broker_synonyms(name), definition.sensitive
        )
        if not per_broker:
            synonyms = [
                s for s in synonyms if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
        entries.append(
            ConfigEntry(
                name=name,
                value=None if definition.sensitive else value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=definition.read_only,
                sensitive=definition.sensitive,
                synonyms=tuple(synonyms),
                config_type=definition.type,
                documentation=_documentation(definition),
            )
        )
    return entries

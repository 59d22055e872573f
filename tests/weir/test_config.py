"""Kafka's broker and topic configs: defaults, validation wording, precedence and describe."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from weir.config import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    BrokerConfig,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
    InvalidConfigError,
    describe_broker_config,
    describe_topic_config,
    effective_topic_config,
    parse_broker_overrides,
    validate_broker_dynamic_configs,
    validate_topic_configs,
)

LONG_MAX = 2**63 - 1


def entry(entries, name):  # type: ignore[no-untyped-def]
    return next(e for e in entries if e.name == name)


# -- catalog -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "default"),
    [
        ("broker.id", -1),
        ("num.partitions", 1),
        ("default.replication.factor", 1),
        ("min.insync.replicas", 1),
        ("log.segment.bytes", 1073741824),
        ("log.roll.hours", 168),
        ("log.roll.ms", None),
        ("log.retention.hours", 168),
        ("log.retention.minutes", None),
        ("log.retention.ms", None),
        ("log.retention.bytes", -1),
        ("log.index.interval.bytes", 4096),
        ("log.index.size.max.bytes", 10485760),
        ("log.cleanup.policy", ("delete",)),
        ("log.message.timestamp.type", "CreateTime"),
        ("log.flush.interval.messages", LONG_MAX),
        ("log.flush.interval.ms", None),
        ("replica.lag.time.max.ms", 30000),
        ("auto.create.topics.enable", True),
        ("unclean.leader.election.enable", False),
        ("message.max.bytes", 1048588),
        ("socket.request.max.bytes", 104857600),
        ("delete.topic.enable", True),
        ("auto.leader.rebalance.enable", True),
        ("offsets.topic.num.partitions", 50),
        ("offsets.topic.replication.factor", 3),
        ("offsets.retention.minutes", 10080),
        ("group.initial.rebalance.delay.ms", 3000),
        ("group.min.session.timeout.ms", 6000),
        ("group.max.session.timeout.ms", 1800000),
        ("compression.type", "producer"),
        ("log.cleaner.min.cleanable.ratio", 0.5),
        ("log.cleaner.delete.retention.ms", 86400000),
        ("transaction.state.log.replication.factor", 3),
        ("transaction.max.timeout.ms", 900000),
    ],
)
def test_broker_defaults_are_kafkas(name: str, default: object) -> None:
    assert BrokerConfig(broker_id=0).get(name) == (0 if name == "broker.id" else default)
    assert BROKER_CONFIGS[name].default == default


def test_every_config_has_documentation_and_a_describe_type() -> None:
    for definition in [*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()]:
        assert definition.doc, definition.name
        assert definition.type is not ConfigType.UNKNOWN


def test_topic_synonyms_name_existing_broker_configs() -> None:
    synonyms = {n: [s.name for s in d.synonyms] for n, d in TOPIC_CONFIGS.items()}
    assert synonyms["retention.ms"] == [
        "log.retention.ms",
        "log.retention.minutes",
        "log.retention.hours",
    ]
    assert synonyms["segment.bytes"] == ["log.segment.bytes"]
    assert synonyms["segment.ms"] == ["log.roll.ms", "log.roll.hours"]
    assert synonyms["max.message.bytes"] == ["message.max.bytes"]
    assert synonyms["min.cleanable.dirty.ratio"] == ["log.cleaner.min.cleanable.ratio"]
    assert synonyms["delete.retention.ms"] == ["log.cleaner.delete.retention.ms"]
    assert synonyms["file.delete.delay.ms"] == ["log.segment.delete.delay.ms"]
    for names in synonyms.values():
        for name in names:
            assert name in BROKER_CONFIGS


def test_config_type_and_source_codes_match_the_protocol() -> None:
    assert [ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT, ConfigType.SHORT] == [1, 2, 3, 4]
    assert [ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST, ConfigType.PASSWORD] == [
        5,
        6,
        7,
        9,
    ]
    assert ConfigSource.DYNAMIC_TOPIC_CONFIG == 1
    assert ConfigSource.DYNAMIC_BROKER_CONFIG == 2
    assert ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG == 3
    assert ConfigSource.STATIC_BROKER_CONFIG == 4
    assert ConfigSource.DEFAULT_CONFIG == 5


# -- topic config validation ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("configs", "message"),
    [
        (
            {"retention.ms": "abc"},
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            {"segment.bytes": "10"},
            "Invalid value 10 for configuration segment.bytes: Value must be at least 14",
        ),
        (
            {"segment.bytes": "4294967296"},
            "Invalid value 4294967296 for configuration segment.bytes: Not a number of type INT",
        ),
        (
            {"retention.ms": "-2"},
            "Invalid value -2 for configuration retention.ms: Value must be at least -1",
        ),
        (
            {"cleanup.policy": "delete,forever"},
            "Invalid value forever for configuration cleanup.policy: String must be one of: "
            "compact, delete",
        ),
        (
            {"message.timestamp.type": "Now"},
            "Invalid value Now for configuration message.timestamp.type: String must be one of: "
            "CreateTime, LogAppendTime",
        ),
        (
            {"unclean.leader.election.enable": "yes"},
            "Invalid value yes for configuration unclean.leader.election.enable: Expected value "
            "to be either true or false",
        ),
        (
            {"min.cleanable.dirty.ratio": "1.5"},
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no "
            "more than 1",
        ),
        (
            {"min.cleanable.dirty.ratio": "half"},
            "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of "
            "type DOUBLE",
        ),
        (
            {"min.insync.replicas": "0"},
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
        ({"retention.msec": "1"}, "Unknown topic config name: retention.msec"),
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
        (
            {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
        (
            {"leader.replication.throttled.replicas": "0:1,x"},
            "leader.replication.throttled.replicas must be the literal '*' or a list of "
            "replicas in the following format",
        ),
    ],
)
def test_invalid_topic_configs_get_kafkas_message(
    configs: dict[str, str | None], message: str
) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        validate_topic_configs(configs)
    assert message in str(caught.value)
    assert caught.value.error_code is ErrorCode.invalid_config
    assert caught.value.name in configs


def test_valid_topic_configs_come_back_normalized() -> None:
    clean = validate_topic_configs(
        {
            "retention.ms": " 86400000 ",
            "cleanup.policy": "compact , delete",
            "unclean.leader.election.enable": "TRUE",
            "min.cleanable.dirty.ratio": "0.25",
            "follower.replication.throttled.replicas": "*",
            "segment.bytes": "14",
        }
    )
    assert clean == {
        "retention.ms": "86400000",
        "cleanup.policy": "compact,delete",
        "unclean.leader.election.enable": "true",
        "min.cleanable.dirty.ratio": "0.25",
        "follower.replication.throttled.replicas": "*",
        "segment.bytes": "14",
    }


def test_max_compaction_lag_is_set_per_topic_or_as_the_broker_default() -> None:
    name = "log.cleaner.max.compaction.lag.ms"
    broker = BrokerConfig(broker_id=1, static={name: "1000"})
    assert validate_broker_dynamic_configs({name: "2000"}) == {name: "2000"}
    assert validate_topic_configs({"max.compaction.lag.ms": "5"}) == {"max.compaction.lag.ms": "5"}
    assert effective_topic_config(broker, {}).max_compaction_lag_ms == 1000
    assert effective_topic_config(broker, {"max.compaction.lag.ms": "5"}).max_compaction_lag_ms == 5


# -- runbroker --config --------------------------------------------------------------------
def test_parse_broker_overrides_accepts_kafka_names() -> None:
    assert parse_broker_overrides(
        ["num.partitions=3", "log.retention.ms=1000", "auto.create.topics.enable=false"]
    ) == {"num.partitions": "3", "log.retention.ms": "1000", "auto.create.topics.enable": "false"}


def test_parse_broker_overrides_last_value_wins() -> None:
    assert parse_broker_overrides(["num.partitions=3", "num.partitions=4"]) == {
        "num.partitions": "4"
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("num.partitions", "--config expects KEY=VALUE, got 'num.partitions'"),
        (
            "num.partitions=abc",
            "--config num.partitions=abc: Invalid value abc for configuration num.partitions: "
            "Not a number of type INT",
        ),
        (
            "log.retenton.ms=5",
            "--config log.retenton.ms=5: Unknown broker config name: log.retenton.ms (did you "
            "mean log.retention.ms?)",
        ),
        (
            "retention.ms=5",
            "--config retention.ms=5: retention.ms is a topic config; the broker-wide default is "
            "log.retention.ms",
        ),
        ("leader.replication.throttled.rate=5", "can only be set dynamically"),
    ],
)
def test_bad_broker_overrides_name_the_flag_and_the_key(pair: str, message: str) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        parse_broker_overrides([pair])
    assert str(caught.value) == message or message in str(caught.value)


def test_broker_id_override_must_match_the_flag() -> None:
    assert BrokerConfig(broker_id=3, static={"broker.id": "3"}).get("broker.id") == 3
    with pytest.raises(InvalidConfigError, match="conflicts with --broker-id 3"):
        BrokerConfig(broker_id=3, static={"broker.id": "4"})


# -- broker precedence ---------------------------------------------------------------------
def test_dynamic_broker_beats_dynamic_default_beats_static_beats_default() -> None:
    config = BrokerConfig(broker_id=1)
    assert config.get("message.max.bytes") == 1048588
    assert config.source("message.max.bytes") is ConfigSource.DEFAULT_CONFIG
    config = BrokerConfig(broker_id=1, static={"message.max.bytes": "2000"})
    assert config.get("message.max.bytes") == 2000
    config = config.with_dynamic(dynamic_default={"message.max.bytes": "3000"})
    assert config.get("message.max.bytes") == 3000
    assert config.source("message.max.bytes") is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
    config = config.with_dynamic(dynamic_broker={"message.max.bytes": "4000"})
    assert config.get("message.max.bytes") == 4000
    assert config.source("message.max.bytes") is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert config.with_dynamic(dynamic_broker={}).get("message.max.bytes") == 3000


def test_retention_ms_beats_minutes_beats_hours() -> None:
    hours = {"log.retention.hours": "2"}
    minutes = {**hours, "log.retention.minutes": "3"}
    millis = {**minutes, "log.retention.ms": "4000"}
    assert BrokerConfig(broker_id=1).log_retention_ms == 168 * 3_600_000
    assert BrokerConfig(broker_id=1, static=hours).log_retention_ms == 7_200_000
    assert BrokerConfig(broker_id=1, static=minutes).log_retention_ms == 180_000
    assert BrokerConfig(broker_id=1, static=millis).log_retention_ms == 4000
    # a dynamic log.retention.ms beats a static one, and minutes/hours at any level
    dynamic = BrokerConfig(broker_id=1, static=millis, dynamic_default={"log.retention.ms": "5"})
    assert dynamic.log_retention_ms == 5


def test_negative_retention_means_unlimited() -> None:
    assert BrokerConfig(broker_id=1, static={"log.retention.ms": "-5"}).log_retention_ms == -1
    assert BrokerConfig(broker_id=1, static={"log.retention.hours": "-1"}).log_retention_ms == -1


def test_roll_ms_beats_roll_hours_and_flush_falls_back_to_scheduler() -> None:
    assert BrokerConfig(broker_id=1, static={"log.roll.hours": "1"}).log_roll_ms == 3_600_000
    both = {"log.roll.hours": "1", "log.roll.ms": "1234"}
    assert BrokerConfig(broker_id=1, static=both).log_roll_ms == 1234
    assert BrokerConfig(broker_id=1).log_flush_interval_ms == LONG_MAX
    scheduler = {"log.flush.scheduler.interval.ms": "777"}
    assert BrokerConfig(broker_id=1, static=scheduler).log_flush_interval_ms == 777


def test_bad_or_read_only_dynamic_values_are_ignored_not_fatal() -> None:
    config = BrokerConfig(
        broker_id=1,
        dynamic_default={"log.retention.ms": "soon", "num.partitions": "9", "nope": "1"},
        dynamic_broker={"log.segment.bytes": "5000"},
    )
    assert config.log_retention_ms == 168 * 3_600_000
    assert config.get("num.partitions") == 1
    assert config.get("log.segment.bytes") == 5000
    assert dict(config.dynamic_default) == {}


# -- dynamic broker alteration -------------------------------------------------------------
def test_read_only_broker_configs_cannot_be_altered() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        validate_broker_dynamic_configs({"broker.id": "7", "log.retention.ms": "1"})
    assert "Cannot update these configs dynamically: broker.id" in str(caught.value)
    assert "read-only" in str(caught.value)
    assert caught.value.error_code is ErrorCode.invalid_request
    with pytest.raises(InvalidConfigError, match=r"num\.partitions"):
        validate_broker_dynamic_configs({"num.partitions": "3"}, per_broker=False)


def test_dynamic_broker_configs_are_validated_and_normalized() -> None:
    assert validate_broker_dynamic_configs(
        {"log.retention.ms": " 60000", "leader.replication.throttled.rate": "1048576"}
    ) == {"log.retention.ms": "60000", "leader.replication.throttled.rate": "1048576"}
    with pytest.raises(InvalidConfigError, match="Not a number of type LONG") as caught:
        validate_broker_dynamic_configs({"log.retention.ms": "x"})
    assert caught.value.error_code is ErrorCode.invalid_request
    with pytest.raises(InvalidConfigError, match=r"Unknown broker config name: log\.foo"):
        validate_broker_dynamic_configs({"log.foo": "1"})


# -- effective topic config ----------------------------------------------------------------
def test_topic_defaults_follow_the_broker_synonyms() -> None:
    broker = BrokerConfig(
        broker_id=1,
        static={"log.retention.hours": "1", "log.segment.bytes": "4096", "log.roll.hours": "2"},
        dynamic_default={"message.max.bytes": "5000", "min.insync.replicas": "2"},
    )
    topic = effective_topic_config(broker, {})
    assert topic.retention_ms == 3_600_000
    assert topic.segment_bytes == 4096
    assert topic.segment_ms == 7_200_000
    assert topic.max_message_bytes == 5000
    assert topic.min_insync_replicas == 2
    assert topic.cleanup_policy == ("delete",)
    assert topic.delete and not topic.compact
    assert topic.overridden == frozenset()


def test_topic_overrides_win_and_are_typed() -> None:
    topic = effective_topic_config(
        BrokerConfig(broker_id=1),
        {
            "retention.ms": "1000",
            "cleanup.policy": "compact",
            "message.timestamp.type": "LogAppendTime",
            "min.cleanable.dirty.ratio": "0.1",
            "segment.ms": "60000",
        },
    )
    assert topic.retention_ms == 1000
    assert topic.compact and not topic.delete
    assert topic.message_timestamp_type == "LogAppendTime"
    assert topic.min_cleanable_dirty_ratio == 0.1
    assert topic.segment_ms == 60000
    assert topic.overridden == {
        "retention.ms",
        "cleanup.policy",
        "message.timestamp.type",
        "min.cleanable.dirty.ratio",
        "segment.ms",
    }


def test_invalid_stored_override_falls_back_to_the_default() -> None:
    topic = effective_topic_config(BrokerConfig(broker_id=1), {"segment.bytes": "1", "x": "y"})
    assert topic.segment_bytes == 1073741824


def test_a_stored_override_weir_refuses_is_ignored() -> None:
    # Written before Weir refused it (or straight into Redis): logged and not applied, so
    # the topic keeps the default Weir actually follows.
    broker = BrokerConfig(broker_id=1)
    topic = effective_topic_config(broker, {"preallocate": "true", "segment.ms": "5000"})
    assert topic.preallocate is False
    assert topic.segment_ms == 5000


# -- describe ------------------------------------------------------------------------------
def test_describe_topic_lists_synonyms_by_source_then_precedence() -> None:
    broker = BrokerConfig(
        broker_id=1,
        static={"log.retention.ms": "100", "log.retention.minutes": "1"},
        dynamic_default={"log.retention.ms": "200"},
    )
    retention = entry(describe_topic_config(broker, {"retention.ms": "300"}), "retention.ms")
    assert retention.value == "300"
    assert retention.source is ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert retention.read_only is False
    assert retention.config_type is ConfigType.LONG
    assert retention.synonyms == (
        ConfigSynonym("retention.ms", "300", ConfigSource.DYNAMIC_TOPIC_CONFIG),
        ConfigSynonym("log.retention.ms", "200", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ConfigSynonym("log.retention.ms", "100", ConfigSource.STATIC_BROKER_CONFIG),
        ConfigSynonym("log.retention.minutes", "1", ConfigSource.STATIC_BROKER_CONFIG),
        ConfigSynonym("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG),
    )
    without_override = entry(describe_topic_config(broker, {}), "retention.ms")
    assert without_override.value == "200"
    assert without_override.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def test_describe_topic_defaults_read_like_kafka() -> None:
    entries = describe_topic_config(BrokerConfig(broker_id=1), {})
    assert [e.name for e in entries] == sorted(TOPIC_CONFIGS)
    segment = entry(entries, "segment.bytes")
    assert segment.value == "1073741824"
    assert segment.source is ConfigSource.DEFAULT_CONFIG
    assert segment.synonyms == (
        ConfigSynonym("log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG),
    )
    # Kafka drops synonyms listed before the topic config's own broker name, so a default
    # retention.ms shows no synonyms (``kafka-configs`` prints ``synonyms={}``).
    retention = entry(entries, "retention.ms")
    assert retention.value == "604800000"
    assert retention.synonyms == ()
    assert entry(entries, "cleanup.policy").value == "delete"
    assert entry(entries, "min.cleanable.dirty.ratio").value == "0.5"
    assert entry(entries, "flush.ms").value == str(LONG_MAX)
    assert entry(entries, "segment.bytes").documentation


def test_describe_topic_filters_by_keys() -> None:
    entries = describe_topic_config(
        BrokerConfig(broker_id=1), {}, keys=["segment.bytes", "retention.bytes"]
    )
    assert [e.name for e in entries] == ["retention.bytes", "segment.bytes"]


def test_describe_broker_marks_read_only_and_hides_secrets() -> None:
    broker = BrokerConfig(
        broker_id=2,
        static={"ssl.keystore.password": "hunter2", "log.retention.ms": "100"},
        dynamic_broker={"log.retention.ms": "50"},
    )
    entries = describe_broker_config(broker)
    broker_id = entry(entries, "broker.id")
    assert (broker_id.value, broker_id.read_only) == ("2", True)
    assert broker_id.source is ConfigSource.STATIC_BROKER_CONFIG
    secret = entry(entries, "ssl.keystore.password")
    assert secret.value is None and secret.sensitive
    assert secret.config_type is ConfigType.PASSWORD
    assert all(s.value is None for s in secret.synonyms)
    retention = entry(entries, "log.retention.ms")
    assert retention.value == "50" and retention.read_only is False
    assert retention.source is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert [(s.value, s.source) for s in retention.synonyms] == [
        ("50", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("100", ConfigSource.STATIC_BROKER_CONFIG),
        ("168", ConfigSource.DEFAULT_CONFIG),
    ]
    assert entry(entries, "log.retention.minutes").value is None
    names = [e.name for e in entries]
    assert "leader.replication.throttled.rate" not in names  # dynamic-only, unset
    assert names == sorted(names)


def test_describe_cluster_default_lists_only_dynamic_defaults() -> None:
    broker = BrokerConfig(
        broker_id=2,
        static={"log.retention.ms": "100"},
        dynamic_default={"log.retention.ms": "200", "follower.replication.throttled.rate": "9"},
    )
    entries = describe_broker_config(broker, per_broker=False)
    assert [e.name for e in entries] == [
        "follower.replication.throttled.rate",
        "log.retention.ms",
    ]
    retention = entry(entries, "log.retention.ms")
    assert retention.value == "200"
    assert retention.synonyms == (
        ConfigSynonym("log.retention.ms", "200", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
    )


def test_doubles_print_like_java() -> None:
    broker = BrokerConfig(broker_id=1)
    io_max = entry(describe_broker_config(broker), "log.cleaner.io.max.bytes.per.second")
    assert io_max.value == "1.7976931348623157E308"
    ratio = entry(describe_broker_config(broker), "log.cleaner.io.buffer.load.factor")
    assert ratio.value == "0.9"

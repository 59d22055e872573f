"""The topic planner of a flow: selection, loop prevention, partitions, config filter (pure)."""

from __future__ import annotations

from weir.mirror.config import Flow, MirrorConfig
from weir.mirror.topics import (
    ConfigEntryInfo,
    SourceTopic,
    config_exclude_pattern,
    configs_to_copy,
    plan_topics,
)


def flow(**extra: str) -> Flow:
    props = {
        "clusters": "east, west",
        "east.bootstrap.servers": "east:9092",
        "west.bootstrap.servers": "west:9092",
        "east->west.enabled": "true",
        **extra,
    }
    return MirrorConfig.from_properties(props).flow("east", "west")


def topic(name: str, partitions: int = 1, **configs: ConfigEntryInfo) -> SourceTopic:
    return SourceTopic(name, partitions, {k.replace("_", "."): v for k, v in configs.items()})


def test_internal_topics_and_topics_from_the_target_are_never_mirrored() -> None:
    source = {
        name: topic(name)
        for name in (
            "orders",
            "west.orders",  # came from west: mirroring it back would loop
            "central.west.orders",  # came from west two hops upstream
            "__consumer_offsets",
            "mm2-offset-syncs.west.internal",
            "east.checkpoints.internal",
            "connect-configs-internal",
            "heartbeats",
            "central.orders",
        )
    }
    plan = plan_topics(flow(topics=".*", **{"topics.exclude": ""}), source, {})
    assert plan.remote_names == {
        "orders": "east.orders",
        "heartbeats": "east.heartbeats",
        "central.orders": "east.central.orders",
    }
    assert plan.skipped["west.orders"].startswith("came from west")
    assert plan.skipped["central.west.orders"].startswith("came from west")
    for internal in ("__consumer_offsets", "mm2-offset-syncs.west.internal"):
        assert plan.skipped[internal] == "internal topic"
    assert plan.skipped["connect-configs-internal"] == "internal topic"


def test_topic_filter_selects_and_heartbeats_follow_their_own_switch() -> None:
    source = {n: topic(n) for n in ("orders", "payments", "heartbeats")}
    plan = plan_topics(flow(topics="orders"), source, {})
    assert set(plan.remote_names) == {"orders", "heartbeats"}
    assert plan.skipped["payments"] == "not selected by topics/topics.exclude"
    off = plan_topics(
        flow(topics="orders", **{"heartbeats.replication.enabled": "false"}), source, {}
    )
    assert set(off.remote_names) == {"orders"}


def test_identity_policy_keeps_names() -> None:
    props = {"replication.policy.class": "IdentityReplicationPolicy"}
    plan = plan_topics(flow(**props), {"orders": topic("orders")}, {})
    assert plan.remote_names == {"orders": "orders"}


def test_create_grow_and_never_shrink() -> None:
    source = {"new": topic("new", 3), "grown": topic("grown", 4), "shrunk": topic("shrunk", 2)}
    target = {"east.grown": 2, "east.shrunk": 5}
    by_name = {t.source_topic: t for t in plan_topics(flow(), source, target).topics}
    assert (by_name["new"].action, by_name["new"].partitions) == ("create", 3)
    assert (by_name["grown"].action, by_name["grown"].partitions) == ("grow", 4)
    assert (by_name["shrunk"].action, by_name["shrunk"].partitions) == ("none", 5)


def test_config_filter_copies_only_topic_level_writable_public_not_excluded() -> None:
    configs = {
        "retention.ms": ConfigEntryInfo("1000", topic_level=True),
        "cleanup.policy": ConfigEntryInfo("compact", topic_level=True),
        "segment.bytes": ConfigEntryInfo("1073741824", topic_level=False),  # a default
        "min.insync.replicas": ConfigEntryInfo("2", topic_level=True),  # excluded by MM2
        "message.timestamp.type": ConfigEntryInfo("LogAppendTime", topic_level=True),
        "some.secret": ConfigEntryInfo("x", topic_level=True, sensitive=True),
        "some.fixed": ConfigEntryInfo("y", topic_level=True, read_only=True),
    }
    default = config_exclude_pattern()
    assert configs_to_copy(configs, default) == {
        "cleanup.policy": "compact",
        "retention.ms": "1000",
    }
    nothing_excluded = configs_to_copy(configs, config_exclude_pattern(""))
    assert nothing_excluded["min.insync.replicas"] == "2"
    assert configs_to_copy(configs, config_exclude_pattern(r"retention\..*")) == {
        "cleanup.policy": "compact",
        "message.timestamp.type": "LogAppendTime",
        "min.insync.replicas": "2",
    }


def test_configs_planned_only_when_synced_and_altered_only_when_different() -> None:
    source = {
        "orders": SourceTopic("orders", 1, {"retention.ms": ConfigEntryInfo("1000", True)}),
    }
    exclude = config_exclude_pattern()
    created = plan_topics(flow(), source, {}, config_exclude=exclude).topics[0]
    assert created.configs == {"retention.ms": "1000"}
    same = plan_topics(
        flow(),
        source,
        {"east.orders": 1},
        target_configs={"east.orders": {"retention.ms": "1000"}},
        config_exclude=exclude,
    ).topics[0]
    assert not same.alter_configs
    different = plan_topics(
        flow(),
        source,
        {"east.orders": 1},
        target_configs={"east.orders": {"retention.ms": "5"}},
        config_exclude=exclude,
    ).topics[0]
    assert different.alter_configs
    off = plan_topics(flow(**{"sync.topic.configs.enabled": "false"}), source, {}).topics[0]
    assert off.configs == {}

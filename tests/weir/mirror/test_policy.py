"""MM2's replication policies and loop prevention (pure logic)."""

from __future__ import annotations

import pytest

from weir.mirror.policy import DefaultReplicationPolicy, IdentityReplicationPolicy, is_cycle

DEFAULT = DefaultReplicationPolicy()


def test_default_policy_round_trip() -> None:
    remote = DEFAULT.format_remote_topic("east", "orders")
    assert remote == "east.orders"
    assert DEFAULT.topic_source(remote) == "east"
    assert DEFAULT.upstream_topic(remote) == "orders"
    assert DEFAULT.original_topic("west.east.orders") == "orders"


def test_default_policy_local_topics_have_no_source() -> None:
    assert DEFAULT.topic_source("orders") is None
    assert DEFAULT.upstream_topic("orders") is None
    assert DEFAULT.original_topic("orders") == "orders"
    # Java's String.split drops trailing empty strings, so "orders." is local.
    assert DEFAULT.topic_source("orders.") is None


def test_default_policy_keeps_dots_after_the_first_separator() -> None:
    assert DEFAULT.upstream_topic("east.app.orders.v1") == "app.orders.v1"


def test_custom_separator_and_internal_topics() -> None:
    policy = DefaultReplicationPolicy(separator="_")
    assert policy.format_remote_topic("east", "orders") == "east_orders"
    assert policy.topic_source("east_orders") == "east"
    assert policy.offset_syncs_topic("b") == "mm2-offset-syncs_b_internal"
    assert policy.checkpoints_topic("a") == "a_checkpoints_internal"
    dotted = DefaultReplicationPolicy(separator="_", internal_topic_separator_enabled=False)
    assert dotted.offset_syncs_topic("b") == "mm2-offset-syncs.b.internal"
    assert dotted.checkpoints_topic("a") == "a.checkpoints.internal"


def test_empty_separator_is_refused() -> None:
    with pytest.raises(ValueError, match=r"replication\.policy\.separator"):
        DefaultReplicationPolicy(separator="")


def test_mm2_topic_names() -> None:
    assert DEFAULT.heartbeats_topic() == "heartbeats"
    assert DEFAULT.checkpoints_topic("east") == "east.checkpoints.internal"
    assert DEFAULT.offset_syncs_topic("west") == "mm2-offset-syncs.west.internal"
    assert DEFAULT.is_checkpoints_topic("east.checkpoints.internal")
    assert not DEFAULT.is_checkpoints_topic("east.orders")
    assert DEFAULT.is_heartbeats_topic("heartbeats")
    assert DEFAULT.is_heartbeats_topic("west.east.heartbeats")
    assert not DEFAULT.is_heartbeats_topic("east.orders")


@pytest.mark.parametrize(
    "topic",
    [
        "__consumer_offsets",
        "__transaction_state",
        ".hidden",
        "connect-offsets-internal",
        "mm2-offsets.east.internal",
        "east.checkpoints.internal",
        "mm2-offset-syncs.west.internal",
    ],
)
def test_internal_topics(topic: str) -> None:
    assert DEFAULT.is_internal_topic(topic)


@pytest.mark.parametrize("topic", ["orders", "east.orders", "heartbeats", "orders.replica"])
def test_not_internal_topics(topic: str) -> None:
    # "*.replica" is excluded by the default topic filter, not by the policy (as in MM2).
    assert not DEFAULT.is_internal_topic(topic)


def test_identity_policy_keeps_names_but_prefixes_heartbeats() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="east")
    assert policy.format_remote_topic("east", "orders") == "orders"
    assert policy.format_remote_topic("east", "heartbeats") == "east.heartbeats"
    assert policy.topic_source("orders") == "east"
    assert policy.upstream_topic("orders") == "orders"
    assert policy.original_topic("orders") == "orders"
    assert policy.topic_source("west.heartbeats") == "west"
    assert policy.upstream_topic("west.heartbeats") == "heartbeats"
    assert policy.is_heartbeats_topic("west.heartbeats")
    assert IdentityReplicationPolicy().topic_source("orders") is None


def test_active_active_never_mirrors_a_topic_back_home() -> None:
    # east->west must not copy west.orders (it came from west) nor east.west.orders.
    assert is_cycle(DEFAULT, "west.orders", target="west")
    assert is_cycle(DEFAULT, "east.west.orders", target="west")
    assert not is_cycle(DEFAULT, "orders", target="west")
    assert not is_cycle(DEFAULT, "central.orders", target="west")


def test_identity_policy_cannot_detect_cycles() -> None:
    policy = IdentityReplicationPolicy(source_cluster_alias="east")
    assert not is_cycle(policy, "orders", target="west")
    assert is_cycle(policy, "west.heartbeats", target="west")

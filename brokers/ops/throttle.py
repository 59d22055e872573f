"""Replication throttles for moving replicas, as ``kafka-reassign-partitions --throttle`` sets them.

Kafka's mechanism (docs/operations.md): ``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate`` (bytes/s) on every broker that takes part in a move,
and on each moving topic ``leader.replication.throttled.replicas`` (``partition:broker`` for
the current replicas, which serve the catch-up reads) and
``follower.replication.throttled.replicas`` (the replicas being added). Weir's leaders apply
the leader side to followers that are not yet in the ISR, so in-sync replication is never
slowed.

This module builds those config changes (pure: :func:`throttle_resources`,
:func:`clear_throttle_resources`) and applies them with an AdminClient
(:func:`alter_configs`). ``manage.py reassign-partitions`` and the operations API share it.
Throttled-replica lists can be merged with what a topic already lists, so several moves of
one topic started at different times do not overwrite each other's entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from brokers.ops.planner import PartitionDiff

__all__ = [
    "THROTTLE_BROKER_CONFIGS",
    "THROTTLE_TOPIC_CONFIGS",
    "ThrottleError",
    "alter_configs",
    "clear_throttle_resources",
    "throttle_resources",
]

THROTTLE_BROKER_CONFIGS = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
)
THROTTLE_TOPIC_CONFIGS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


class ThrottleError(Exception):
    """The brokers refused a throttle change."""


def _merged(existing: str | None, entries: Sequence[str]) -> str:
    old = [e.strip() for e in (existing or "").split(",") if e.strip()]
    if "*" in old:
        return "*"
    return ",".join(dict.fromkeys([*old, *entries]))


def throttle_resources(
    moves: Iterable[PartitionDiff],
    rate: int,
    *,
    live_brokers: Iterable[int],
    existing: Mapping[str, Mapping[str, str]] | None = None,
) -> list[ConfigResource]:
    """The broker and topic config changes that throttle ``moves`` to ``rate`` bytes/s.

    ``existing`` (topic → current config overrides) makes the throttled-replica lists the
    union of what the topic lists already and the new entries; without it they are replaced,
    as Kafka's tool does.
    """
    live = set(live_brokers)
    involved: set[int] = set()
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for move in moves:
        involved.update(move.current, move.proposed)
        leaders.setdefault(move.topic, []).extend(f"{move.partition}:{b}" for b in move.current)
        followers.setdefault(move.topic, []).extend(
            f"{move.partition}:{b}" for b in move.proposed if b not in move.current
        )
    resources = [
        ConfigResource(
            "broker",
            str(broker),
            incremental_configs=[
                ConfigEntry(name, str(rate), incremental_operation=AlterConfigOpType.SET)
                for name in THROTTLE_BROKER_CONFIGS
            ],
        )
        for broker in sorted(involved)
        if broker in live
    ]
    for topic in leaders:
        current = (existing or {}).get(topic, {})
        entries = [(THROTTLE_TOPIC_CONFIGS[0], leaders[topic])]
        if followers[topic] or current.get(THROTTLE_TOPIC_CONFIGS[1]):
            entries.append((THROTTLE_TOPIC_CONFIGS[1], followers[topic]))
        configs = []
        for name, values in entries:
            value = _merged(current.get(name), values) if existing is not None else ",".join(values)
            if value:
                configs.append(
                    ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
                )
        resources.append(ConfigResource("topic", topic, incremental_configs=configs))
    return resources


def clear_throttle_resources(
    *, brokers: Iterable[int], topics: Iterable[str]
) -> list[ConfigResource]:
    """The config changes that remove every throttle from ``brokers`` and ``topics``."""
    return [
        ConfigResource(
            "broker",
            str(broker),
            incremental_configs=[
                ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
                for name in THROTTLE_BROKER_CONFIGS
            ],
        )
        for broker in sorted(set(brokers))
    ] + [
        ConfigResource(
            "topic",
            topic,
            incremental_configs=[
                ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE)
                for name in THROTTLE_TOPIC_CONFIGS
            ],
        )
        for topic in sorted(set(topics))
    ]


def alter_configs(admin: Any, resources: list[ConfigResource], *, timeout: float = 30) -> None:
    """IncrementalAlterConfigs, one call per broker resource (librdkafka's rule)."""
    topics = [r for r in resources if r.restype == ConfigResource.Type.TOPIC]
    batches = [[r] for r in resources if r not in topics] + ([topics] if topics else [])
    for batch in batches:
        try:
            for future in admin.incremental_alter_configs(batch).values():
                future.result(timeout)
        except KafkaException as exc:
            raise ThrottleError(f"setting throttles failed: {exc.args[0].str()}") from None

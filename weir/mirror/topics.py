"""The topic side of one replication flow: which source topics it mirrors, and the target shape.

MM2's ``MirrorSourceConnector`` decides, every ``refresh.topics.interval.seconds``, which
source topics a flow copies and makes the target match: it creates missing remote topics with
the source's partition count and ``replication.factor``, adds partitions when the source grew
(never removes any: Kafka cannot), and, with ``sync.topic.configs.enabled``, copies topic
configs. This module does the same in two layers:

- ``plan_topics`` is pure. It takes plain data -- each source topic's partition count and
  config entries, and each existing target topic's partition count -- and returns a
  ``TopicsPlan``: per mirrored topic its remote name, the partition count the target must
  have, what to do (create, grow, nothing), and the configs to set; plus, for every source
  topic it skips, why. Tests drive it without a cluster.
- ``describe_source``/``describe_target``/``apply_plan`` are the thin executor over
  ``confluent_kafka.admin.AdminClient``: ``list_topics``, ``describe_configs``,
  ``create_topics``, ``create_partitions`` and ``incremental_alter_configs``. Every failure is
  a ``TopicSyncError`` naming the cluster, the topic and the step.

Which topics (MM2's ``shouldReplicateTopic``)
---------------------------------------------
A source topic is mirrored when the flow's topic filter selects it (or it is a heartbeats
topic and ``heartbeats.replication.enabled``), it is not internal (``__*``, ``.*``,
``*.internal``, ``*-internal``, MM2's own topics), and it did not come from the flow's target
(``policy.is_cycle``): so ``west.orders`` on ``east`` is never sent back to ``west``.

Which configs (MM2's ``DefaultConfigPropertyFilter`` and ``MirrorSourceConnector``)
--------------------------------------------------------------------------------
Only configs set on the source topic itself are copied (source ``DYNAMIC_TOPIC_CONFIG``);
defaults -- the broker's static or dynamic defaults and built-in ones -- are left to the
target's own defaults, as MM2 does with its default ``use.defaults.from=target``. Read-only and
sensitive entries are never copied. Names fully matching ``config.properties.exclude`` are
never copied; MM2's default list excludes the replication throttles, the timestamp type and
skew, ``unclean.leader.election.enable`` and ``min.insync.replicas``, which describe the
cluster rather than the data. Configs are set on create and, when the target differs, with
``incremental_alter_configs`` (SET only: a config removed on the source is left on the target,
as MM2's incremental mode does).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from weir.mirror.config import Flow
from weir.mirror.filters import compile_pattern_list, parse_list
from weir.mirror.policy import is_cycle

__all__ = [
    "CONFIG_PROPERTIES_EXCLUDE_DEFAULT",
    "ConfigEntryInfo",
    "SourceTopic",
    "TopicPlan",
    "TopicSyncError",
    "TopicsPlan",
    "apply_plan",
    "config_exclude_pattern",
    "configs_to_copy",
    "describe_source",
    "describe_target",
    "ensure_internal_topic",
    "plan_topics",
    "skip_reason",
]

CONFIG_PROPERTIES_EXCLUDE_DEFAULT = (
    r"follower\.replication\.throttled\.replicas, "
    r"leader\.replication\.throttled\.replicas, "
    r"message\.timestamp\.difference\.max\.ms, "
    r"message\.timestamp\.type, "
    r"unclean\.leader\.election\.enable, "
    r"min\.insync\.replicas"
)
_TIMEOUT_S = 30.0

Action = Literal["create", "grow", "none"]


class TopicSyncError(RuntimeError):
    """A step of making the target match the plan failed; the message names what and where."""


@dataclass(frozen=True, slots=True)
class ConfigEntryInfo:
    """One topic config as ``describe_configs`` reports it, reduced to what the filter needs."""

    value: str | None
    topic_level: bool  # set on the topic itself (DYNAMIC_TOPIC_CONFIG), not a default
    read_only: bool = False
    sensitive: bool = False


@dataclass(frozen=True, slots=True)
class SourceTopic:
    """A source topic: its partition count and config entries."""

    name: str
    partitions: int
    configs: Mapping[str, ConfigEntryInfo] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """What the target must look like for one mirrored source topic."""

    source_topic: str
    target_topic: str
    partitions: int  # the count the target must have (at least the source's)
    action: Action
    configs: Mapping[str, str]  # to set on the target; empty when configs are not synced
    alter_configs: bool  # True when the existing target's configs differ from ``configs``


@dataclass(frozen=True, slots=True)
class TopicsPlan:
    """The mirrored topics of one flow, and the source topics it skips with the reason."""

    flow: str
    topics: tuple[TopicPlan, ...]
    skipped: Mapping[str, str]

    @property
    def remote_names(self) -> dict[str, str]:
        """Source topic name -> target topic name."""
        return {t.source_topic: t.target_topic for t in self.topics}


def config_exclude_pattern(
    value: str = CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
) -> re.Pattern[str] | None:
    """``config.properties.exclude`` compiled as MM2 does (a blank list excludes nothing)."""
    return compile_pattern_list(parse_list(value), key="config.properties.exclude")


def skip_reason(flow: Flow, topic: str) -> str | None:
    """Why ``flow`` does not mirror source topic ``topic``, or None when it does."""
    policy = flow.policy
    if policy.is_internal_topic(topic):
        return "internal topic"
    if is_cycle(policy, topic, target=flow.target):
        return f"came from {flow.target} (loop prevention)"
    heartbeats = flow.heartbeats_replication_enabled and policy.is_heartbeats_topic(topic)
    if not (heartbeats or flow.topic_filter.matches(topic)):
        return "not selected by topics/topics.exclude"
    return None


def configs_to_copy(
    configs: Mapping[str, ConfigEntryInfo], exclude: re.Pattern[str] | None
) -> dict[str, str]:
    """The source configs MM2 copies: set on the topic, writable, not secret, not excluded."""
    return {
        name: entry.value
        for name, entry in sorted(configs.items())
        if entry.topic_level
        and entry.value is not None
        and not entry.read_only
        and not entry.sensitive
        and not (exclude is not None and exclude.fullmatch(name))
    }


def plan_topics(
    flow: Flow,
    source: Mapping[str, SourceTopic],
    target: Mapping[str, int],
    *,
    target_configs: Mapping[str, Mapping[str, str]] | None = None,
    config_exclude: re.Pattern[str] | None = None,
) -> TopicsPlan:
    """Plan the target side of ``flow``.

    ``source``: source topic name -> ``SourceTopic``. ``target``: existing target topic name ->
    partition count. ``target_configs``: existing target topic -> its topic-level configs (to
    decide whether an alter is needed; missing means "unknown, alter"). Configs are planned only
    when the flow syncs them (``sync.topic.configs.enabled``).
    """
    sync_configs = flow.sync_topic_configs_interval_s is not None
    plans: list[TopicPlan] = []
    skipped: dict[str, str] = {}
    for name in sorted(source):
        reason = skip_reason(flow, name)
        if reason is not None:
            skipped[name] = reason
            continue
        topic = source[name]
        remote = flow.policy.format_remote_topic(flow.source, name)
        configs = configs_to_copy(topic.configs, config_exclude) if sync_configs else {}
        existing = target.get(remote)
        if existing is None:
            plans.append(TopicPlan(name, remote, topic.partitions, "create", configs, False))
            continue
        action: Action = "grow" if topic.partitions > existing else "none"
        current = (target_configs or {}).get(remote)
        alter = bool(configs) and (
            current is None or any(current.get(k) != v for k, v in configs.items())
        )
        plans.append(
            TopicPlan(name, remote, max(existing, topic.partitions), action, configs, alter)
        )
    return TopicsPlan(flow.name, tuple(plans), skipped)


# -- the executor over confluent-kafka's AdminClient ---------------------------------------------


def _wait(
    futures: Mapping[Any, Any], *, cluster: str, step: str, tolerate: frozenset[str] = frozenset()
) -> None:
    """Wait for admin futures; errors whose code name is in ``tolerate`` are not failures
    (another mirror process with the same properties got there first)."""
    errors = []
    for key, future in futures.items():
        try:
            future.result(_TIMEOUT_S)
        except Exception as exc:
            code = exc.args[0].name() if exc.args and hasattr(exc.args[0], "name") else None
            if code in tolerate:
                continue
            errors.append(f"{getattr(key, 'name', key)}: {exc}")
    if errors:
        raise TopicSyncError(f"{cluster}: {step} failed: " + "; ".join(errors))


def describe_target(admin: Any, *, cluster: str) -> dict[str, int]:
    """Existing topics of the target cluster -> partition count."""
    try:
        metadata = admin.list_topics(timeout=_TIMEOUT_S)
    except Exception as exc:
        raise TopicSyncError(f"{cluster}: listing topics failed: {exc}") from exc
    return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}


def describe_source(
    admin: Any, *, cluster: str, topics: Iterable[str] | None = None, with_configs: bool = True
) -> dict[str, SourceTopic]:
    """The source cluster's topics (all, or ``topics``) with partitions and, optionally, configs."""
    from confluent_kafka.admin import ConfigResource, ConfigSource

    counts = describe_target(admin, cluster=cluster)
    names = sorted(counts if topics is None else set(topics) & set(counts))
    configs: dict[str, dict[str, ConfigEntryInfo]] = {name: {} for name in names}
    if with_configs and names:
        resources = [ConfigResource(ConfigResource.Type.TOPIC, name) for name in names]
        for resource, future in admin.describe_configs(resources).items():
            try:
                entries = future.result(_TIMEOUT_S)
            except Exception as exc:
                raise TopicSyncError(
                    f"{cluster}: describe_configs of topic {resource.name} failed: {exc}"
                ) from exc
            configs[resource.name] = {
                key: ConfigEntryInfo(
                    value=entry.value,
                    # confluent-kafka hands the source as a plain int, not its enum
                    topic_level=getattr(entry.source, "value", entry.source)
                    == ConfigSource.DYNAMIC_TOPIC_CONFIG.value,
                    read_only=bool(entry.is_read_only),
                    sensitive=bool(entry.is_sensitive),
                )
                for key, entry in entries.items()
            }
    return {name: SourceTopic(name, counts[name], configs[name]) for name in names}


def apply_plan(admin: Any, plan: TopicsPlan, *, cluster: str, replication_factor: int) -> None:
    """Make the target match ``plan``: create, grow and (re)configure remote topics."""
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
    )

    creates = [
        NewTopic(
            t.target_topic,
            num_partitions=t.partitions,
            replication_factor=replication_factor,
            config=dict(t.configs),
        )
        for t in plan.topics
        if t.action == "create"
    ]
    if creates:
        _wait(
            admin.create_topics(creates),
            cluster=cluster,
            step="create_topics",
            tolerate=frozenset({"TOPIC_ALREADY_EXISTS"}),
        )
    grows = [NewPartitions(t.target_topic, t.partitions) for t in plan.topics if t.action == "grow"]
    if grows:
        _wait(
            admin.create_partitions(grows),
            cluster=cluster,
            step="create_partitions",
            tolerate=frozenset({"INVALID_PARTITIONS"}),
        )
    alters = [
        ConfigResource(
            ConfigResource.Type.TOPIC,
            t.target_topic,
            incremental_configs=[
                ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                for k, v in t.configs.items()
            ],
        )
        for t in plan.topics
        if t.alter_configs
    ]
    if alters:
        _wait(
            admin.incremental_alter_configs(alters),
            cluster=cluster,
            step="incremental_alter_configs",
        )


def ensure_internal_topic(admin: Any, topic: str, *, replication_factor: int, cluster: str) -> None:
    """Create a one-partition compacted topic (MM2's internal topics); fine if it exists.
    ``TopicSyncError`` naming the cluster and topic otherwise."""
    from confluent_kafka.admin import NewTopic

    new = NewTopic(
        topic,
        num_partitions=1,
        replication_factor=replication_factor,
        config={"cleanup.policy": "compact"},
    )
    _wait(
        admin.create_topics([new]),
        cluster=cluster,
        step="create_topics",
        tolerate=frozenset({"TOPIC_ALREADY_EXISTS"}),
    )

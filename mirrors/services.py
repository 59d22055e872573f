"""The failover action: a group's translated offsets from MM2 checkpoints, committed on the target.

What ``RemoteClusterUtils.translateOffsets`` does, as a service: the mirror's checkpoint task
writes MM2 ``Checkpoint`` records into ``<source>.checkpoints.internal`` on the *target*
cluster, keyed by (group, target topic, partition), with the group's committed source offset
and its exact translation. :func:`group_failover` reads that topic from its log start to its
end on the target (never the source: during a failover the source may be gone), keeps the
latest checkpoint of each partition of ``group``, and caps each translated offset at the
target partition's log end (a translation is never beyond what the target holds: MM2's
"negative lag", KAFKA-12468). The answer lists per partition the target topic, the source
topic, the translated offset, the source committed offset the checkpoint translated, and the
target group's current committed offset.

A dry run stops there. Otherwise the offsets are committed for ``group`` on the target with
``alter_consumer_group_offsets`` -- refused (409) while the group has members on the target,
since the coordinator would let live members overwrite them; stop the consumers first, as
``kafka-consumer-groups --reset-offsets`` requires. Like every ``POST /api/`` the call is
audited by :class:`controlplane.audit.AuditMiddleware`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import OffsetSpec

from controlplane.errors import Conflict, KafkaUnavailable, NotFound
from groups.selectors import admin_result, group_description, partition_offsets
from groups.services import group_offsets_commit
from mirrors.sources import admin_client, configured_flow, consumer, mirror_setup
from weir.mirror.config import Flow, MirrorConfig
from weir.mirror.formats import Checkpoint

__all__ = ["FailoverPlan", "FailoverRow", "group_failover"]

TIMEOUT_S = 15.0
READ_TIMEOUT_S = 30.0

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FailoverRow:
    """One target partition of the group after failover."""

    topic: str  # the target topic
    partition: int
    source_topic: str | None  # the upstream name under the flow's policy (None: not remote)
    translated_offset: int  # the checkpoint's, capped at the target log end
    checkpoint_offset: int  # the checkpoint's translation before the cap
    source_committed_offset: int  # the group's source offset the checkpoint translated
    target_committed_offset: int | None  # the group's offset on the target now (None: none)
    target_end_offset: int


@dataclass(frozen=True, slots=True)
class FailoverPlan:
    """What a failover of ``group`` on ``flow`` commits (or committed)."""

    flow: str
    group: str
    checkpoints_topic: str
    members_on_target: int
    target_state: str
    dry_run: bool
    partitions: tuple[FailoverRow, ...]


def _group_key_prefix(group: str) -> bytes:
    # A Checkpoint key starts with its group as a Kafka STRING: skip other groups undecoded.
    return Checkpoint(group, "", 0, 0, 0).to_record()[0][: -(2 + 4)]


def _latest_checkpoints(config: MirrorConfig, flow: Flow, group: str) -> dict[TP, Checkpoint]:
    """The newest checkpoint of each (target topic, partition) of ``group``."""
    topic = flow.checkpoints_topic
    admin = admin_client(config, flow.target)
    metadata = admin.list_topics(topic=topic, timeout=TIMEOUT_S)
    info = metadata.topics.get(topic)
    if info is None or info.error is not None:
        raise NotFound(
            f"no checkpoints for group {group!r}: {flow.target} has no topic {topic} "
            f"(the mirror's checkpoint task has not run for {flow.name})"
        )
    partitions = [(topic, p) for p in sorted(info.partitions)]
    starts = partition_offsets(admin=admin, partitions=partitions, spec=OffsetSpec.earliest())
    ends = partition_offsets(admin=admin, partitions=partitions, spec=OffsetSpec.latest())
    pending = {tp: ends[tp] for tp in partitions if ends[tp] > starts[tp]}
    prefix = _group_key_prefix(group)
    found: dict[TP, Checkpoint] = {}
    if not pending:
        return found
    reader = consumer(config, flow.target)
    try:
        reader.assign([TopicPartition(t, p, starts[(t, p)]) for t, p in pending])
        deadline = time.monotonic() + READ_TIMEOUT_S
        while pending:
            if time.monotonic() > deadline:
                raise KafkaUnavailable(
                    f"{flow.target}: reading {topic} did not reach its end within "
                    f"{READ_TIMEOUT_S:.0f} s"
                )
            for message in reader.consume(1000, 0.5):
                if message.error() is not None:
                    continue
                key, value = message.key(), message.value()
                if key is None or value is None or not key.startswith(prefix):
                    continue
                try:
                    checkpoint = Checkpoint.from_record(key, value)
                except ValueError:
                    continue  # not a checkpoint this version can read: not ours to translate
                if checkpoint.group == group:
                    found[(checkpoint.topic, checkpoint.partition)] = checkpoint
            # By position, not by the last record seen: a control record (transaction
            # marker) may be a partition's last offset and is never handed to us.
            for tp in reader.position([TopicPartition(t, p) for t, p in pending]):
                if tp.offset >= pending[(tp.topic, tp.partition)]:
                    del pending[(tp.topic, tp.partition)]
    finally:
        reader.close()
    return found


def _target_committed(admin: object, group: str, partitions: list[TP]) -> dict[TP, int]:
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(t, p) for t, p in partitions])]
    futures = admin.list_consumer_group_offsets(request, request_timeout=TIMEOUT_S)  # type: ignore[attr-defined]
    result = admin_result(futures[group], group=group)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def group_failover(*, source: str, target: str, group: str, dry_run: bool = True) -> FailoverPlan:
    """Translate ``group``'s offsets for the flow ``source->target`` and, unless ``dry_run``,
    commit them on the target. 404: the properties file is not set, the flow is unknown, or
    no checkpoints; 409: the group is active on the target; 503: the file is not valid, or
    the target did not answer."""
    config = mirror_setup().require()
    flow = configured_flow(config, source, target)
    checkpoints = {
        tp: cp
        for tp, cp in _latest_checkpoints(config, flow, group).items()
        if cp.downstream_offset >= 0  # MM2 wrote -1 for "too old to translate"
    }
    if not checkpoints:
        raise NotFound(
            f"no checkpoints for group {group!r} in {flow.checkpoints_topic} on {flow.target}: "
            f"the mirror has not checkpointed it (is it selected by groups/groups.exclude, and "
            f"has it committed offsets on {flow.source}?)"
        )
    admin = admin_client(config, flow.target)
    keys = sorted(checkpoints)
    ends = partition_offsets(admin=admin, partitions=keys, spec=OffsetSpec.latest())
    committed = _target_committed(admin, group, keys)
    description = group_description(admin=admin, group=group)
    members = len(description.members)
    state = getattr(description.state, "name", str(description.state))
    rows = tuple(
        FailoverRow(
            topic=tp[0],
            partition=tp[1],
            source_topic=flow.policy.upstream_topic(tp[0]),
            translated_offset=min(checkpoints[tp].downstream_offset, ends[tp]),
            checkpoint_offset=checkpoints[tp].downstream_offset,
            source_committed_offset=checkpoints[tp].upstream_offset,
            target_committed_offset=committed.get(tp),
            target_end_offset=ends[tp],
        )
        for tp in keys
    )
    plan = FailoverPlan(
        flow=flow.name,
        group=group,
        checkpoints_topic=flow.checkpoints_topic,
        members_on_target=members,
        target_state=state,
        dry_run=dry_run,
        partitions=rows,
    )
    if dry_run:
        return plan
    if members:
        raise Conflict(
            f"group {group!r} is active on {flow.target} ({members} member(s), state {state}): "
            "stop its consumers there before failing it over"
        )
    group_offsets_commit(
        admin,
        group,
        [TopicPartition(r.topic, r.partition, r.translated_offset) for r in rows],
        failure=f"committing offsets of group {group!r} on {flow.target}",
    )
    return plan

"""Committed offsets: OffsetCommit (8), OffsetFetch (9), OffsetDelete (47).

Offsets live in ``__consumer_offsets`` on the group's coordinator (``weir.group_coordinator``):
a commit is validated by the group state machine, appended as offset records, and applied
(visible to OffsetFetch) only once the in-sync replicas have it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.coordinator import PartitionCommit
from weir.group_coordinator import CoordinatorError
from weir.handlers._build import by_topic, make, respond, types_of
from weir.handlers._group import group_shard
from weir.protocol.api_keys import ApiKey
from weir.security.acl import AclOperation

if TYPE_CHECKING:
    from weir.group_coordinator import GroupCoordinator
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.protocol.codec import Request
    from weir.server import ConnectionContext


# OffsetCommit ---------------------------------------------------------------------------------
async def handle_offset_commit(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    groups: GroupCoordinator,
) -> Any:
    body = request.body
    version = request.api_version
    types = types_of(request)
    requested = [(t.name, p) for t in body.topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    commits: list[PartitionCommit] = []
    views = metadata.topic_views()
    group_ok = access.on_group(ctx, AclOperation.READ, body.group_id)
    for topic, p in requested:
        view = views.get(topic)
        if not group_ok:
            errors[(topic, p.partition_index)] = ErrorCode.group_authorization_failed
            continue
        if not access.on_topic(ctx, AclOperation.READ, topic):
            errors[(topic, p.partition_index)] = ErrorCode.topic_authorization_failed
            continue
        if view is None or p.partition_index >= len(view.partitions):
            errors[(topic, p.partition_index)] = ErrorCode.unknown_topic_or_partition
            continue
        commits.append(
            PartitionCommit(
                topic=topic,
                partition=p.partition_index,
                offset=p.committed_offset,
                leader_epoch=getattr(p, "committed_leader_epoch", -1),
                metadata=p.committed_metadata,
            )
        )
    try:
        if group_ok:
            await _commit(groups, body, version, commits, errors)
    except CoordinatorError as exc:
        for c in commits:
            errors[(c.topic, c.partition)] = exc.error
    return respond(
        request,
        topics=by_topic(
            (
                (
                    topic,
                    make(
                        types.OffsetCommitResponsePartition,
                        partition_index=p.partition_index,
                        error_code=errors.get((topic, p.partition_index), ErrorCode.none),
                    ),
                )
                for topic, p in requested
            ),
            lambda name, parts: make(types.OffsetCommitResponseTopic, name=name, partitions=parts),
        ),
    )


async def _commit(
    groups: GroupCoordinator,
    body: Any,
    version: int,
    commits: list[PartitionCommit],
    errors: dict[tuple[str, int], ErrorCode],
) -> None:
    shard = groups.shard_for(body.group_id)
    group = shard.groups.get(body.group_id)
    generation = body.generation_id_or_member_epoch
    retention = getattr(body, "retention_time", None)
    retention_ms = -1
    if isinstance(retention, timedelta):
        retention_ms = int(retention.total_seconds() * 1000)
    outcome = shard.offsets.commit(
        group_id=body.group_id,
        group=group,
        member_id=body.member_id,
        group_instance_id=getattr(body, "group_instance_id", None),
        generation_id=generation,
        partitions=commits,
        api_version=version,
        now_ms=groups.now_ms(),
        retention_time_ms=retention_ms if retention_ms >= 0 else -1,
    )
    shard.wake.set()  # a member's commit refreshes its session
    for result in outcome.partitions:
        if result.error is not ErrorCode.none:
            errors[(result.topic, result.partition)] = result.error
    error = await groups.commit_offsets(shard, outcome.records)
    if error is not ErrorCode.none:
        for record in outcome.records:
            errors[(record.topic, record.partition)] = error
    elif outcome.records and group is None and body.group_id not in shard.groups:
        # A simple (generation -1) commit to an unknown group: Kafka keeps an Empty group
        # so ListGroups and DescribeGroups show it.
        groups.new_group(shard, body.group_id)


# OffsetFetch ----------------------------------------------------------------------------------
async def handle_offset_fetch(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body
    version = request.api_version
    types = types_of(request)
    if version >= 8:
        answers = [
            make(
                types.OffsetFetchResponseGroup,
                group_id=g.group_id,
                **_fetch_group(
                    access,
                    groups,
                    ctx,
                    g.group_id,
                    g.topics,
                    types,
                    "OffsetFetchResponseTopics",
                    "OffsetFetchResponsePartitions",
                ),
            )
            for g in body.groups
        ]
        return respond(request, groups=tuple(answers))
    fetched = _fetch_group(
        access,
        groups,
        ctx,
        body.group_id,
        body.topics,
        types,
        "OffsetFetchResponseTopic",
        "OffsetFetchResponsePartition",
        per_partition_errors=version < 2,
    )
    return respond(request, **fetched)


def _fetch_group(
    access: Access,
    groups: GroupCoordinator,
    ctx: ConnectionContext,
    group_id: str,
    topics: Any,
    types: Any,
    topic_type: str,
    partition_type: str,
    *,
    per_partition_errors: bool = False,
) -> dict[str, Any]:
    """``topics`` and ``error_code`` of one group's OffsetFetch answer."""
    wanted = (
        None
        if topics is None
        else [(t.name, index) for t in topics for index in t.partition_indexes]
    )
    shard = group_shard(access, ctx, groups, AclOperation.READ, group_id)
    if isinstance(shard, ErrorCode):
        if not per_partition_errors or wanted is None:
            return {"topics": (), "error_code": shard}
        rows = [(t, p, -1, -1, "", shard) for t, p in wanted]
        return {"topics": _topics(types, topic_type, partition_type, rows), "error_code": shard}
    fetched = shard.offsets.fetch(group_id, wanted)
    rows = [(f.topic, f.partition, f.offset, f.leader_epoch, f.metadata, f.error) for f in fetched]
    if access.enabled:
        rows = _describable(access, ctx, rows, listing_all=wanted is None)
    return {
        "topics": _topics(types, topic_type, partition_type, rows),
        "error_code": ErrorCode.none,
    }


def _describable(
    access: Access, ctx: ConnectionContext, rows: list[tuple[Any, ...]], *, listing_all: bool
) -> list[tuple[Any, ...]]:
    """Kafka's OffsetFetch: topics without Describe are left out of a fetch of all offsets
    and answer TOPIC_AUTHORIZATION_FAILED when named."""
    kept = []
    for row in rows:
        if access.on_topic(ctx, AclOperation.DESCRIBE, row[0]):
            kept.append(row)
        elif not listing_all:
            kept.append((row[0], row[1], -1, -1, "", ErrorCode.topic_authorization_failed))
    return kept


def _topics(types: Any, topic_type: str, partition_type: str, rows: list[tuple[Any, ...]]) -> Any:
    return by_topic(
        (
            (
                topic,
                make(
                    getattr(types, partition_type),
                    partition_index=partition,
                    committed_offset=offset,
                    committed_leader_epoch=epoch,
                    metadata=metadata,
                    error_code=error,
                ),
            )
            for topic, partition, offset, epoch, metadata, error in rows
        ),
        lambda name, parts: make(getattr(types, topic_type), name=name, partitions=parts),
    )


# OffsetDelete ---------------------------------------------------------------------------------
async def handle_offset_delete(
    ctx: ConnectionContext, request: Request, *, groups: GroupCoordinator
) -> Any:
    body = request.body
    types = types_of(request)
    wanted = [(t.name, p.partition_index) for t in body.topics for p in t.partitions]

    def reply(error: ErrorCode, results: dict[tuple[str, int], ErrorCode]) -> Any:
        topics = by_topic(
            (
                (
                    topic,
                    make(
                        types.OffsetDeleteResponsePartition,
                        partition_index=partition,
                        error_code=results.get((topic, partition), ErrorCode.none),
                    ),
                )
                for topic, partition in wanted
            ),
            lambda name, parts: make(types.OffsetDeleteResponseTopic, name=name, partitions=parts),
        )
        return respond(
            request,
            error_code=error,
            topics=topics if error is ErrorCode.none else (),
        )

    try:
        shard = groups.shard_for(body.group_id)
    except CoordinatorError as exc:
        return reply(exc.error, {})
    outcome = shard.offsets.delete(
        group_id=body.group_id, group=shard.groups.get(body.group_id), partitions=wanted
    )
    if outcome.error is not ErrorCode.none:
        return reply(outcome.error, {})
    results = {(r.topic, r.partition): r.error for r in outcome.partitions}
    error = await groups.commit_offsets(shard, outcome.records)
    if error is not ErrorCode.none:
        return reply(error, {})
    return reply(ErrorCode.none, results)


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.OFFSET_COMMIT: ((2, 8), handle_offset_commit),
    ApiKey.OFFSET_FETCH: ((1, 8), handle_offset_fetch),
    ApiKey.OFFSET_DELETE: ((0, 0), handle_offset_delete),
}

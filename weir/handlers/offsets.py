"""Committed offsets: OffsetCommit (8), OffsetFetch (9), TxnOffsetCommit (28),
OffsetDelete (47).

Offsets live in ``__consumer_offsets`` on the group's coordinator (``weir.group_coordinator``):
a commit is validated by the group state machine, appended as offset records, and applied
(visible to OffsetFetch) only once the in-sync replicas have it. A TxnOffsetCommit's offsets
are the producer's transactional write: pending until the transaction's COMMIT marker
(OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for them meanwhile).
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
from weir.security.acl import AclOperation, ResourceType

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
    requested = [(t.name, p) for t in body.topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    group_ok = access.on_group(ctx, AclOperation.READ, body.group_id)
    denied = None if group_ok else ErrorCode.group_authorization_failed
    commits = _checked_commits(ctx, metadata, access, requested, errors, denied)
    try:
        if group_ok:
            await _commit(groups, body, request.api_version, commits, errors)
    except CoordinatorError as exc:
        for c in commits:
            errors[(c.topic, c.partition)] = exc.error
    return _commit_response(request, "OffsetCommit", requested, errors)


def _checked_commits(
    ctx: ConnectionContext,
    metadata: MetadataView,
    access: Access,
    requested: list[tuple[str, Any]],
    errors: dict[tuple[str, int], ErrorCode],
    denied: ErrorCode | None,
) -> list[PartitionCommit]:
    """The partitions of a commit that may be written: ``denied`` (a group- or request-level
    authorization error) answers every partition; then Read on each topic, and the partition
    must exist. Refused partitions get their error in ``errors``."""
    commits: list[PartitionCommit] = []
    views = metadata.topic_views()
    for topic, p in requested:
        view = views.get(topic)
        if denied is not None:
            errors[(topic, p.partition_index)] = denied
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
    return commits


def _commit_response(
    request: Request,
    api: str,
    requested: list[tuple[str, Any]],
    errors: dict[tuple[str, int], ErrorCode],
) -> Any:
    """An OffsetCommit or TxnOffsetCommit (``api``) response: every requested partition."""
    types = types_of(request)
    partition_type = getattr(types, f"{api}ResponsePartition")
    topic_type = getattr(types, f"{api}ResponseTopic")
    return respond(
        request,
        topics=by_topic(
            (
                (
                    topic,
                    make(
                        partition_type,
                        partition_index=p.partition_index,
                        error_code=errors.get((topic, p.partition_index), ErrorCode.none),
                    ),
                )
                for topic, p in requested
            ),
            lambda name, parts: make(topic_type, name=name, partitions=parts),
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


# TxnOffsetCommit ------------------------------------------------------------------------------
async def handle_txn_offset_commit(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    groups: GroupCoordinator,
) -> Any:
    """Kafka's ``handleTxnOffsetCommitRequest``: Write on the transactional id, then Read on
    the group (each refusal answers every partition), then Read on each topic. v3+ carry the
    consumer's generation, member id and instance id (KIP-447), checked as OffsetCommit's."""
    body = request.body
    requested = [(t.name, p) for t in body.topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    denied = None
    if not access.authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id
    ):
        denied = ErrorCode.transactional_id_authorization_failed
    elif not access.on_group(ctx, AclOperation.READ, body.group_id):
        denied = ErrorCode.group_authorization_failed
    commits = _checked_commits(ctx, metadata, access, requested, errors, denied)
    try:
        if denied is None:
            await _txn_commit(groups, body, request.api_version, commits, errors)
    except CoordinatorError as exc:
        for c in commits:
            errors[(c.topic, c.partition)] = exc.error
    return _commit_response(request, "TxnOffsetCommit", requested, errors)


async def _txn_commit(
    groups: GroupCoordinator,
    body: Any,
    version: int,
    commits: list[PartitionCommit],
    errors: dict[tuple[str, int], ErrorCode],
) -> None:
    shard = groups.shard_for(body.group_id)
    group = shard.groups.get(body.group_id)
    outcome = shard.offsets.commit(
        group_id=body.group_id,
        group=group,
        # v0-v2 carry no group metadata: -1 / "" / None, which skip the checks.
        member_id=getattr(body, "member_id", ""),
        group_instance_id=getattr(body, "group_instance_id", None),
        generation_id=getattr(body, "generation_id", -1),
        partitions=commits,
        api_version=version,
        now_ms=groups.now_ms(),
        transactional=True,
    )
    for result in outcome.partitions:
        if result.error is not ErrorCode.none:
            errors[(result.topic, result.partition)] = result.error
    error = await groups.commit_txn_offsets(
        shard, outcome.records, producer_id=body.producer_id, producer_epoch=body.producer_epoch
    )
    if error is not ErrorCode.none:
        for record in outcome.records:
            errors[(record.topic, record.partition)] = error
    elif outcome.records and group is None and body.group_id not in shard.groups:
        # As for a simple OffsetCommit: Kafka creates the (Empty) group.
        groups.new_group(shard, body.group_id)


# OffsetFetch ----------------------------------------------------------------------------------
async def handle_offset_fetch(
    ctx: ConnectionContext, request: Request, *, access: Access, groups: GroupCoordinator
) -> Any:
    body = request.body
    version = request.api_version
    types = types_of(request)
    # v7+: answer UNSTABLE_OFFSET_COMMIT for offsets an open transaction holds.
    stable = bool(getattr(body, "require_stable", False))
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
                    require_stable=stable,
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
        require_stable=stable,
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
    require_stable: bool = False,
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
    fetched = shard.offsets.fetch(group_id, wanted, require_stable=require_stable)
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
    # v4+ belong to KIP-890 (TRANSACTION_ABORTABLE, then implicit AddOffsetsToTxn), which
    # the transaction APIs do not advertise either.
    ApiKey.TXN_OFFSET_COMMIT: ((0, 3), handle_txn_offset_commit),
    ApiKey.OFFSET_DELETE: ((0, 0), handle_offset_delete),
}

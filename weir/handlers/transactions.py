"""Transactions (KIP-98/447): the client APIs of the transaction coordinator, the markers
partition leaders write, and the tools' views of transactions and producers.

* **AddPartitionsToTxn** (24, v0-3), **AddOffsetsToTxn** (25, v0-3), **EndTxn** (26, v0-3):
  the producer's calls to its coordinator (``weir.transaction_coordinator``), each allowed
  by Write on the TransactionalId (and Write on each topic, Read on the group), with
  PRODUCER_FENCED turned into what the request version understands
  (``error_for_version``). InitProducerId with a transactional id is in
  ``weir.handlers.init_producer_id``; FindCoordinator's key type 1 in
  ``weir.handlers.groups``.
* **WriteTxnMarkers** (27, v0-1): the coordinator's request to each partition leader: the
  COMMIT or ABORT control batch is appended through the leader path and answered once
  replicated (acks=all, as Kafka's coordinator-origin appends are); a marker on a
  ``__consumer_offsets`` partition also tells the group coordinator to apply or drop the
  producer's transactional offsets. Only brokers may send it (ClusterAction).
* **DescribeTransactions** (65), **ListTransactions** (66, v0-1), **DescribeProducers**
  (61): what ``kafka-transactions.sh`` (and ``manage.py transactions``) reads: the
  coordinator's view of transactional ids, and each partition leader's producer state
  (open transactions with their first offset).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import make, respond, types_of
from weir.log.errors import LogError
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.purgatory import await_commit
from weir.security.acl import AclOperation, ResourceType
from weir.server import ConnectionContext
from weir.transactions import TransactionDescription, TransactionState, error_for_version

if TYPE_CHECKING:
    from weir.group_coordinator import GroupCoordinator
    from weir.handlers._authz import Access
    from weir.handlers._leader import Leaders
    from weir.metadata_view import MetadataView
    from weir.transaction_coordinator import TransactionCoordinator

__all__ = ["HANDLERS", "may_use_transactional_id"]

OFFSETS_TOPIC = "__consumer_offsets"
# How long a marker may wait for its replication (Kafka: the broker's request.timeout.ms).
MARKER_TIMEOUT_S = 30.0


def may_use_transactional_id(
    access: Access, ctx: ConnectionContext, op: AclOperation, transactional_id: str
) -> bool:
    """Kafka's check on the TransactionalId resource (Write to use it, Describe to see it)."""
    return access.authorize(ctx, op, ResourceType.TRANSACTIONAL_ID, transactional_id)


def _versioned(request: Request, error: ErrorCode) -> ErrorCode:
    return error_for_version(error, api_key=request.api_key, version=request.api_version)


# -- the producer's calls --------------------------------------------------------------------
async def handle_add_partitions(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    metadata: MetadataView,
    transactions: TransactionCoordinator,
) -> Any:
    body = request.body
    tid = body.v3_and_below_transactional_id
    wanted = [(t.name, int(p)) for t in body.v3_and_below_topics for p in t.partitions]
    errors: dict[tuple[str, int], ErrorCode] = {}
    if not may_use_transactional_id(access, ctx, AclOperation.WRITE, tid):
        errors = dict.fromkeys(wanted, ErrorCode.transactional_id_authorization_failed)
    else:
        topics = metadata.topic_views()
        for name, index in wanted:
            if not access.on_topic(ctx, AclOperation.WRITE, name):
                errors[(name, index)] = ErrorCode.topic_authorization_failed
            elif name not in topics or index >= len(topics[name].partitions):
                errors[(name, index)] = ErrorCode.unknown_topic_or_partition
        if errors:
            # Kafka: one bad partition fails the request; the others were not attempted.
            for key in wanted:
                errors.setdefault(key, ErrorCode.operation_not_attempted)
        else:
            error = await transactions.add_partitions(
                tid,
                producer_id=body.v3_and_below_producer_id,
                producer_epoch=body.v3_and_below_producer_epoch,
                partitions=wanted,
            )
            errors = dict.fromkeys(wanted, _versioned(request, error))
    types = types_of(request)
    by_topic: dict[str, list[Any]] = {}
    for (name, index), error in errors.items():
        by_topic.setdefault(name, []).append(
            make(
                types.AddPartitionsToTxnPartitionResult,
                partition_index=index,
                partition_error_code=error,
            )
        )
    return respond(
        request,
        results_by_topic_v3_and_below=tuple(
            make(types.AddPartitionsToTxnTopicResult, name=name, results_by_partition=tuple(parts))
            for name, parts in by_topic.items()
        ),
    )


async def handle_add_offsets(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    transactions: TransactionCoordinator,
) -> Any:
    body = request.body
    if not may_use_transactional_id(access, ctx, AclOperation.WRITE, body.transactional_id):
        return respond(request, error_code=ErrorCode.transactional_id_authorization_failed)
    if not access.on_group(ctx, AclOperation.READ, body.group_id):
        return respond(request, error_code=ErrorCode.group_authorization_failed)
    error = await transactions.add_offsets(
        body.transactional_id,
        producer_id=body.producer_id,
        producer_epoch=body.producer_epoch,
        group_id=body.group_id,
    )
    return respond(request, error_code=_versioned(request, error))


async def handle_end_txn(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    transactions: TransactionCoordinator,
) -> Any:
    body = request.body
    if not may_use_transactional_id(access, ctx, AclOperation.WRITE, body.transactional_id):
        return respond(request, error_code=ErrorCode.transactional_id_authorization_failed)
    error = await transactions.end_txn(
        body.transactional_id,
        producer_id=body.producer_id,
        producer_epoch=body.producer_epoch,
        commit=bool(body.committed),
    )
    return respond(request, error_code=_versioned(request, error))


# -- markers (broker to broker) --------------------------------------------------------------
async def handle_write_txn_markers(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    metadata: MetadataView,
    leaders: Leaders,
    groups: GroupCoordinator,
) -> Any:
    types = types_of(request)
    allowed = access.on_cluster(ctx, AclOperation.CLUSTER_ACTION)
    results = []
    for marker in request.body.markers:
        topics = []
        for topic in marker.topics:
            partitions = []
            for index in topic.partition_indexes:
                if allowed:
                    error = await _write_marker(
                        metadata, leaders, groups, topic.name, int(index), marker
                    )
                else:
                    error = ErrorCode.cluster_authorization_failed
                partitions.append(
                    make(
                        types.WritableTxnMarkerPartitionResult,
                        partition_index=index,
                        error_code=error,
                    )
                )
            topics.append(
                make(
                    types.WritableTxnMarkerTopicResult,
                    name=topic.name,
                    partitions=tuple(partitions),
                )
            )
        results.append(
            make(
                types.WritableTxnMarkerResult, producer_id=marker.producer_id, topics=tuple(topics)
            )
        )
    return respond(request, markers=tuple(results))


async def _write_marker(
    metadata: MetadataView,
    leaders: Leaders,
    groups: GroupCoordinator,
    topic: str,
    index: int,
    marker: Any,
) -> ErrorCode:
    """One COMMIT/ABORT marker on a partition this broker leads, replicated before the
    answer (acks=all); its effect on transactional offsets once it is."""
    error, partition = leaders.led(topic, index)
    if partition is None:
        return error
    epoch = partition.leader_epoch
    try:
        outcome = partition.append_control_marker(
            producer_id=marker.producer_id,
            producer_epoch=marker.producer_epoch,
            commit=bool(marker.transaction_result),
            coordinator_epoch=marker.coordinator_epoch,
        )
    except LogError as exc:
        return ErrorCode(exc.error_code)
    error = await await_commit(
        partition,
        epoch,
        outcome.last_offset + 1,
        MARKER_TIMEOUT_S,
        topic_config=metadata.topic_config,
    )
    if error is ErrorCode.none and topic == OFFSETS_TOPIC:
        groups.complete_transaction(
            index,
            marker.producer_id,
            commit=bool(marker.transaction_result),
            marker_offset=outcome.base_offset,
        )
    return error


# -- tools -----------------------------------------------------------------------------------
def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(max(ms, 0) / 1000, tz=UTC)


async def handle_describe_transactions(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    transactions: TransactionCoordinator,
) -> Any:
    types = types_of(request)
    states = []
    for tid in request.body.transactional_ids:
        if may_use_transactional_id(access, ctx, AclOperation.DESCRIBE, tid):
            found = transactions.describe(tid)
        else:
            # A description with only an error carries Kafka's "nothing" values.
            found = TransactionDescription(tid, ErrorCode.transactional_id_authorization_failed)
        by_topic: dict[str, list[int]] = {}
        for name, index in sorted(found.partitions):
            by_topic.setdefault(name, []).append(index)
        states.append(
            make(
                types.TransactionState,
                error_code=found.error,
                transactional_id=tid,
                transaction_state=found.state,
                transaction_timeout=timedelta(milliseconds=found.timeout_ms),
                transaction_start_time=_time(found.start_timestamp_ms),
                producer_id=found.producer_id,
                producer_epoch=found.producer_epoch,
                topics=tuple(
                    make(types.TopicData, topic=name, partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )
    return respond(request, transaction_states=tuple(states))


async def handle_list_transactions(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    transactions: TransactionCoordinator,
) -> Any:
    body = request.body
    filters = tuple(body.state_filters)
    unknown = tuple(s for s in filters if TransactionState.from_kafka_name(s) is None)
    error, listings = transactions.list_transactions(
        states=tuple(s for s in filters if s not in unknown),
        producer_ids=tuple(body.producer_id_filters),
        min_duration_ms=int(getattr(body, "duration_filter", -1)),
    )
    types = types_of(request)
    visible = [
        t
        for t in listings
        if may_use_transactional_id(access, ctx, AclOperation.DESCRIBE, t.transactional_id)
    ]
    return respond(
        request,
        error_code=error,
        unknown_state_filters=unknown,
        transaction_states=tuple(
            make(
                types.TransactionState,
                transactional_id=t.transactional_id,
                producer_id=t.producer_id,
                transaction_state=t.state,
            )
            for t in visible
        ),
    )


async def handle_describe_producers(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    leaders: Leaders,
) -> Any:
    types = types_of(request)
    topics = []
    for topic in request.body.topics:
        allowed = access.on_topic(ctx, AclOperation.READ, topic.name)
        partitions = []
        for index in topic.partition_indexes:
            producers: tuple[Any, ...] = ()
            if not allowed:
                error, partition = ErrorCode.topic_authorization_failed, None
            else:
                error, partition = leaders.led(topic.name, int(index))
            if partition is not None:
                producers = tuple(
                    make(
                        types.ProducerState,
                        producer_id=p.producer_id,
                        producer_epoch=p.producer_epoch,
                        last_sequence=p.last_sequence,
                        last_timestamp=p.last_timestamp,
                        coordinator_epoch=p.coordinator_epoch,
                        current_txn_start_offset=p.current_txn_start_offset,
                    )
                    for p in partition.log.active_producers()
                )
            partitions.append(
                make(
                    types.PartitionResponse,
                    partition_index=index,
                    error_code=error,
                    error_message=None,
                    active_producers=producers,
                )
            )
        topics.append(make(types.TopicResponse, name=topic.name, partitions=tuple(partitions)))
    return respond(request, topics=tuple(topics))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.ADD_PARTITIONS_TO_TXN: ((0, 3), handle_add_partitions),
    ApiKey.ADD_OFFSETS_TO_TXN: ((0, 3), handle_add_offsets),
    ApiKey.END_TXN: ((0, 3), handle_end_txn),
    ApiKey.WRITE_TXN_MARKERS: ((0, 1), handle_write_txn_markers),
    ApiKey.DESCRIBE_PRODUCERS: ((0, 0), handle_describe_producers),
    ApiKey.DESCRIBE_TRANSACTIONS: ((0, 0), handle_describe_transactions),
    ApiKey.LIST_TRANSACTIONS: ((0, 1), handle_list_transactions),
}

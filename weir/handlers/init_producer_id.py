"""InitProducerId (API 22): hand idempotent producers a cluster-unique producer id.

Idempotent producers: ids come from a counter in Redis, so they never repeat across brokers
or restarts; a producer that re-initialises with its current id and epoch (KIP-360, v3+)
gets the epoch bumped. A transactional id goes to its transaction coordinator (the leader of
its ``__transaction_state`` partition, ``weir.transaction_coordinator``), which fences the
id's previous producer, after Write on the TransactionalId resource.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import respond
from weir.handlers.transactions import may_use_transactional_id
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext
from weir.transactions import error_for_version

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.transaction_coordinator import TransactionCoordinator


_MAX_EPOCH = 32767


def _may_write_idempotently(metadata: MetadataView, access: Access, ctx: ConnectionContext) -> bool:
    """Kafka 3.x: IdempotentWrite on the cluster, or Write on any topic (checked against the
    topics that exist, where Kafka asks whether any Write ACL could match)."""
    if access.on_cluster(ctx, AclOperation.IDEMPOTENT_WRITE):
        return True
    return any(access.on_topic(ctx, AclOperation.WRITE, name) for name in metadata.topic_views())


async def handle(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    allocate_producer_id: Callable[[], Awaitable[int]],
    transactions: TransactionCoordinator,
) -> Any:
    body = request.body

    def reply(error: ErrorCode, producer_id: int = -1, producer_epoch: int = -1) -> Any:
        return respond(
            request,
            error_code=error,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )

    if body.transactional_id is not None:
        tid = body.transactional_id
        if not may_use_transactional_id(access, ctx, AclOperation.WRITE, tid):
            return reply(ErrorCode.transactional_id_authorization_failed)
        found = await transactions.init_producer_id(
            tid,
            timeout_ms=int(body.transaction_timeout.total_seconds() * 1000),
            producer_id=getattr(body, "producer_id", -1),
            producer_epoch=getattr(body, "producer_epoch", -1),
        )
        error = error_for_version(found.error, api_key=request.api_key, version=request.api_version)
        return reply(error, found.producer_id, found.producer_epoch)
    if not _may_write_idempotently(metadata, access, ctx):
        return reply(ErrorCode.cluster_authorization_failed)
    producer_id = getattr(body, "producer_id", -1)
    epoch = getattr(body, "producer_epoch", -1)
    if producer_id >= 0 and 0 <= epoch < _MAX_EPOCH - 1:
        return reply(ErrorCode.none, producer_id, epoch + 1)
    try:
        new_id = await allocate_producer_id()
    except ConnectionError:
        return reply(ErrorCode.coordinator_not_available)
    return reply(ErrorCode.none, new_id, 0)


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.INIT_PRODUCER_ID: ((0, 4), handle),
}

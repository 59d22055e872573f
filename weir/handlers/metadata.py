"""Metadata (API 3) and DescribeCluster (API 60): who the brokers are and who leads what.

Metadata lists the live brokers, the controller, and for each topic its partitions with
leader, leader epoch, replicas, ISR and offline replicas. Unknown topics are created on the
fly when both the request (``allow_auto_topic_creation``; always for v0-3) and the broker
(``auto.create.topics.enable``) allow it (DESIGN §5); the answer then waits briefly for the
new topic to appear so the client's first produce does not bounce.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import make, respond, types_of
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    AclOperation,
    ResourceType,
)
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView, TopicView
    from weir.topic_admin import TopicAdmin


_NULL_UUID = uuid.UUID(int=0)


async def handle_metadata(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    admin: TopicAdmin,
) -> Any:
    body = request.body
    version = request.api_version
    types = types_of(request)
    requested = body.topics
    if requested is not None and version == 0 and not requested:
        requested = None  # v0: an empty list means all topics
    topics: list[Any] = []
    want_topic_ops = bool(getattr(body, "include_topic_authorized_operations", False))

    def topic_entry(view: TopicView) -> Any:
        ops = access.operations_field(ctx, want_topic_ops, ResourceType.TOPIC, view.name)
        return _topic(types, view, ops)

    if requested is None:
        for view in sorted(metadata.topic_views().values(), key=lambda v: v.name):
            if access.on_topic(ctx, AclOperation.DESCRIBE, view.name):
                topics.append(topic_entry(view))
    else:
        allow_auto = getattr(body, "allow_auto_topic_creation", True)
        for wanted in requested:
            name = wanted.name
            view = None
            if name is None:
                view = metadata.topic_view_by_id(wanted.topic_id)
                if view is None:
                    topics.append(
                        _missing(types, None, wanted.topic_id, ErrorCode.unknown_topic_id)
                    )
                    continue
            else:
                view = metadata.topic_views().get(name)
            if view is not None and not access.on_topic(ctx, AclOperation.DESCRIBE, view.name):
                denied = ErrorCode.topic_authorization_failed
                topics.append(_missing(types, name, _NULL_UUID, denied))
                continue
            if view is None and name is not None:
                error = ErrorCode.unknown_topic_or_partition
                if not access.on_topic(ctx, AclOperation.DESCRIBE, name):
                    error = ErrorCode.topic_authorization_failed
                elif allow_auto and metadata.auto_create_topics:
                    if not access.may_create_topic(ctx, name):
                        topics.append(
                            _missing(types, name, _NULL_UUID, ErrorCode.topic_authorization_failed)
                        )
                        continue
                    error, view = await admin.auto_create_topic(name)
                if view is None:
                    topics.append(_missing(types, name, _NULL_UUID, error))
                    continue
            assert view is not None
            topics.append(topic_entry(view))
    return respond(
        request,
        topics=tuple(topics),
        **_cluster(
            metadata,
            access,
            ctx,
            bool(getattr(body, "include_cluster_authorized_operations", False)),
            types.MetadataResponseBroker,
            "node_id",
        ),
    )


def _cluster(
    metadata: MetadataView,
    access: Access,
    ctx: ConnectionContext,
    want_ops: bool,
    broker_cls: type,
    id_field: str,
) -> dict[str, Any]:
    """The cluster as Metadata and DescribeCluster both describe it: the live brokers (as
    ``broker_cls`` entries whose id field is ``id_field``), the cluster id, the controller,
    and the principal's cluster operations when asked."""
    return {
        "brokers": tuple(
            make(broker_cls, **{id_field: b.broker_id}, host=b.host, port=b.port, rack=b.rack)
            for b in metadata.live_brokers()
        ),
        "cluster_id": metadata.cluster_id,
        "controller_id": metadata.controller_id(),
        "cluster_authorized_operations": access.operations_field(
            ctx, want_ops, ResourceType.CLUSTER, CLUSTER_NAME
        ),
    }


def _missing(types: Any, name: str | None, topic_id: uuid.UUID, error: ErrorCode) -> Any:
    return make(
        types.MetadataResponseTopic,
        error_code=error,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=(),
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def _topic(types: Any, view: TopicView, ops: int) -> Any:
    return make(
        types.MetadataResponseTopic,
        error_code=ErrorCode.none,
        name=view.name,
        topic_id=view.topic_id,
        is_internal=view.is_internal,
        partitions=tuple(
            make(
                types.MetadataResponsePartition,
                error_code=ErrorCode.leader_not_available if p.leader < 0 else ErrorCode.none,
                partition_index=p.index,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=tuple(p.replicas),
                isr_nodes=tuple(p.isr),
                offline_replicas=tuple(p.offline_replicas),
            )
            for p in view.partitions
        ),
        topic_authorized_operations=ops,
    )


async def handle_describe_cluster(
    ctx: ConnectionContext, request: Request, *, metadata: MetadataView, access: Access
) -> Any:
    types = types_of(request)
    return respond(
        request,
        endpoint_type=1,  # brokers
        **_cluster(
            metadata,
            access,
            ctx,
            request.body.include_cluster_authorized_operations,
            types.DescribeClusterBroker,
            "broker_id",
        ),
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.METADATA: ((0, 12), handle_metadata),
    ApiKey.DESCRIBE_CLUSTER: ((0, 1), handle_describe_cluster),
}

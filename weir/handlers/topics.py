"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): thin over ``weir.topic_admin``.

Only the controller changes topics; any other broker answers NOT_CONTROLLER and clients
resend to the controller named in Metadata, as with Kafka.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir import topic_admin
from weir.handlers._build import make, respond, types_of
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.controller_channel import ControllerChannel
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.topic_admin import TopicAdmin

CREATE_TOPICS_KEY = 19
CREATE_TOPICS_VERSIONS = (2, 7)
DELETE_TOPICS_KEY = 20
DELETE_TOPICS_VERSIONS = (1, 6)
CREATE_PARTITIONS_KEY = 37
CREATE_PARTITIONS_VERSIONS = (0, 3)

FORWARDED_CLIENT_PREFIX = "weir-broker-"
_DENIED = "not authorized"
_NOT_CONTROLLER = "this broker is not the controller; send the request to the controller"


def _may(
    metadata: MetadataView,
    access: Access,
    ctx: ConnectionContext,
    op: AclOperation,
    name: str | None,
    topic_id: Any,
) -> bool:
    """``op`` on the topic named ``name`` (or with id ``topic_id``, resolved here)."""
    if not access.enabled:
        return True
    if name is None and topic_id is not None:
        view = metadata.topic_view_by_id(topic_id)
        name = view.name if view is not None else None
    if name is None:
        return access.on_cluster(ctx, op)
    return access.on_topic(ctx, op, name)


async def _forward(
    admin: TopicAdmin, channel: ControllerChannel, request: Request, all_allowed: bool = True
) -> Any | None:
    """KIP-590: a broker that is not the controller forwards topic admin to the controller.

    Clients may send these to any broker (Kafka's own brokers forward since 2.8). A request
    that was itself forwarded is never forwarded again, so two brokers that disagree about
    the controller for a moment cannot bounce it between them: it gets NOT_CONTROLLER.
    """
    if admin.is_controller or (request.client_id or "").startswith(FORWARDED_CLIENT_PREFIX):
        return None
    if not all_allowed:
        # The principal is known here, not at the controller (forwarding runs as the
        # broker): a request with a denied topic is answered here, the rest NOT_CONTROLLER.
        return None
    timeout_s = request.body.timeout.total_seconds() + 10
    return await channel.forward(request.body, timeout_s)


async def _unless_refused(
    allowed: bool,
    admin: TopicAdmin,
    act: Callable[[], Awaitable[topic_admin.TopicOutcome]],
) -> topic_admin.TopicOutcome:
    """One topic of a topic-admin request: denied, NOT_CONTROLLER (a request answered here
    because it was not forwarded), or ``act``'s outcome."""
    if not allowed:
        return topic_admin.TopicOutcome(ErrorCode.topic_authorization_failed, _DENIED)
    if not admin.is_controller:
        return topic_admin.TopicOutcome(ErrorCode.not_controller, _NOT_CONTROLLER)
    return await act()


async def handle_create_topics(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    channel: ControllerChannel,
    admin: TopicAdmin,
) -> Any:
    allowed = {t.name: access.may_create_topic(ctx, t.name) for t in request.body.topics}
    forwarded = await _forward(admin, channel, request, all(allowed.values()))
    if forwarded is not None:
        return forwarded
    body = request.body
    types = types_of(request)
    seen: dict[str, int] = {}
    for topic in body.topics:
        seen[topic.name] = seen.get(topic.name, 0) + 1
    results = []
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    for topic in body.topics:
        if seen[topic.name] > 1:
            outcome = topic_admin.TopicOutcome(
                ErrorCode.invalid_request, f"topic {topic.name} appears more than once"
            )
        else:
            outcome = await _unless_refused(
                allowed[topic.name],
                admin,
                lambda topic=topic: admin.create_topic(
                    name=topic.name,
                    num_partitions=topic.num_partitions,
                    replication_factor=topic.replication_factor,
                    assignments={a.partition_index: list(a.broker_ids) for a in topic.assignments},
                    configs={c.name: c.value for c in topic.configs},
                    validate_only=body.validate_only,
                    timeout_ms=timeout_ms,
                ),
            )
        results.append(
            make(
                types.CreatableTopicResult,
                name=topic.name,
                topic_id=outcome.topic_id,
                error_code=outcome.error,
                error_message=outcome.message,
                num_partitions=outcome.num_partitions,
                replication_factor=outcome.replication_factor,
                configs=tuple(
                    make(
                        types.CreatableTopicConfigs,
                        name=entry.name,
                        value=entry.value,
                        read_only=entry.read_only,
                        config_source=entry.source,
                        is_sensitive=entry.sensitive,
                    )
                    for entry in outcome.configs
                ),
            )
        )
    return respond(request, topics=tuple(results))


async def handle_delete_topics(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    channel: ControllerChannel,
    admin: TopicAdmin,
) -> Any:
    body = request.body
    version = request.api_version
    if version >= 6:
        targets = [(t.name, t.topic_id) for t in body.topics]
    else:
        targets = [(name, None) for name in body.topic_names]
    allowed = {
        (name, topic_id): _may(metadata, access, ctx, AclOperation.DELETE, name, topic_id)
        for name, topic_id in targets
    }
    forwarded = await _forward(admin, channel, request, all(allowed.values()))
    if forwarded is not None:
        return forwarded
    types = types_of(request)
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    results = []
    for name, topic_id in targets:
        outcome = await _unless_refused(
            allowed[(name, topic_id)],
            admin,
            lambda name=name, topic_id=topic_id: admin.delete_topic(
                name=name, topic_id=topic_id, timeout_ms=timeout_ms
            ),
        )
        results.append(
            make(
                types.DeletableTopicResult,
                name=outcome.name or name,
                topic_id=outcome.topic_id,
                error_code=outcome.error,
                error_message=outcome.message,
            )
        )
    return respond(request, responses=tuple(results))


async def handle_create_partitions(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    channel: ControllerChannel,
    admin: TopicAdmin,
) -> Any:
    allowed = {
        t.name: access.on_topic(ctx, AclOperation.ALTER, t.name) for t in request.body.topics
    }
    forwarded = await _forward(admin, channel, request, all(allowed.values()))
    if forwarded is not None:
        return forwarded
    body = request.body
    types = types_of(request)
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    results = []
    for topic in body.topics:
        outcome = await _unless_refused(
            allowed[topic.name],
            admin,
            lambda topic=topic: admin.create_partitions(
                name=topic.name,
                count=topic.count,
                assignments=(
                    [list(a.broker_ids) for a in topic.assignments]
                    if topic.assignments is not None
                    else None
                ),
                validate_only=body.validate_only,
                timeout_ms=timeout_ms,
            ),
        )
        results.append(
            make(
                types.CreatePartitionsTopicResult,
                name=topic.name,
                error_code=outcome.error,
                error_message=outcome.message,
            )
        )
    return respond(request, results=tuple(results))


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    CREATE_TOPICS_KEY: (CREATE_TOPICS_VERSIONS, handle_create_topics),
    DELETE_TOPICS_KEY: (DELETE_TOPICS_VERSIONS, handle_delete_topics),
    CREATE_PARTITIONS_KEY: (CREATE_PARTITIONS_VERSIONS, handle_create_partitions),
}

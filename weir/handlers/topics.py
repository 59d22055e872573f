"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): thin over ``weir.topic_admin``.

Only the controller changes topics; any other broker answers NOT_CONTROLLER and clients
resend to the controller named in Metadata, as with Kafka.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import make, respond, types_of
from weir.handlers.configs import config_entries
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext
from weir.topic_admin import TopicOutcome

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.topic_admin import TopicAdmin


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


async def _forward(admin: TopicAdmin, request: Request, all_allowed: bool = True) -> Any | None:
    """KIP-590: a broker that is not the controller forwards topic admin to the controller
    (over the topic admin's controller channel).

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
    return await admin.channel.forward(request.body, timeout_s)


@dataclass(frozen=True, slots=True)
class _Target:
    """One topic of a topic-admin request, as its handler reads it."""

    name: str | None  # as the request names it (None: by id only)
    allowed: bool  # may the principal act on it?
    act: Callable[[int], Awaitable[TopicOutcome]]  # the admin call, given timeout_ms
    invalid: str | None = None  # why the request is invalid for this topic, answered first


async def _answer(
    request: Request,
    admin: TopicAdmin,
    targets: list[_Target],
    *,
    field: str,
    result: str,
) -> Any:
    """Forward the request to the controller, or answer each target here as a ``result``
    entry of the response's ``field``: invalid, denied, NOT_CONTROLLER (a request answered
    here because it was not forwarded), or the admin call's outcome."""
    forwarded = await _forward(admin, request, all(t.allowed for t in targets))
    if forwarded is not None:
        return forwarded
    types = types_of(request)
    timeout_ms = int(request.body.timeout.total_seconds() * 1000)
    results = []
    for target in targets:
        if target.invalid is not None:
            outcome = TopicOutcome(ErrorCode.invalid_request, target.invalid)
        elif not target.allowed:
            outcome = TopicOutcome(ErrorCode.topic_authorization_failed, _DENIED)
        elif not admin.is_controller:
            outcome = TopicOutcome(ErrorCode.not_controller, _NOT_CONTROLLER)
        else:
            outcome = await target.act(timeout_ms)
        # One entry serves the three APIs: ``make`` keeps the fields this result has.
        results.append(
            make(
                getattr(types, result),
                name=outcome.name or target.name,
                topic_id=outcome.topic_id,
                error_code=outcome.error,
                error_message=outcome.message,
                num_partitions=outcome.num_partitions,
                replication_factor=outcome.replication_factor,
                configs=config_entries(
                    types, types.CreatableTopicConfigs, outcome.configs, synonyms=False, docs=False
                ),
            )
        )
    return respond(request, **{field: tuple(results)})


async def handle_create_topics(
    ctx: ConnectionContext, request: Request, *, access: Access, admin: TopicAdmin
) -> Any:
    body = request.body
    counts = Counter(t.name for t in body.topics)

    def create(topic: Any, timeout_ms: int) -> Awaitable[TopicOutcome]:
        return admin.create_topic(
            name=topic.name,
            num_partitions=topic.num_partitions,
            replication_factor=topic.replication_factor,
            assignments={a.partition_index: list(a.broker_ids) for a in topic.assignments},
            configs={c.name: c.value for c in topic.configs},
            validate_only=body.validate_only,
            timeout_ms=timeout_ms,
        )

    targets = [
        _Target(
            topic.name,
            access.may_create_topic(ctx, topic.name),
            partial(create, topic),
            invalid=f"topic {topic.name} appears more than once"
            if counts[topic.name] > 1
            else None,
        )
        for topic in body.topics
    ]
    return await _answer(request, admin, targets, field="topics", result="CreatableTopicResult")


async def handle_delete_topics(
    ctx: ConnectionContext,
    request: Request,
    *,
    metadata: MetadataView,
    access: Access,
    admin: TopicAdmin,
) -> Any:
    body = request.body
    if request.api_version >= 6:
        named = [(t.name, t.topic_id) for t in body.topics]
    else:
        named = [(name, None) for name in body.topic_names]

    def delete(name: str | None, topic_id: Any, timeout_ms: int) -> Awaitable[TopicOutcome]:
        return admin.delete_topic(name=name, topic_id=topic_id, timeout_ms=timeout_ms)

    targets = [
        _Target(
            name,
            _may(metadata, access, ctx, AclOperation.DELETE, name, topic_id),
            partial(delete, name, topic_id),
        )
        for name, topic_id in named
    ]
    return await _answer(request, admin, targets, field="responses", result="DeletableTopicResult")


async def handle_create_partitions(
    ctx: ConnectionContext, request: Request, *, access: Access, admin: TopicAdmin
) -> Any:
    body = request.body

    def create(topic: Any, timeout_ms: int) -> Awaitable[TopicOutcome]:
        return admin.create_partitions(
            name=topic.name,
            count=topic.count,
            assignments=(
                [list(a.broker_ids) for a in topic.assignments]
                if topic.assignments is not None
                else None
            ),
            validate_only=body.validate_only,
            timeout_ms=timeout_ms,
        )

    targets = [
        _Target(
            topic.name, access.on_topic(ctx, AclOperation.ALTER, topic.name), partial(create, topic)
        )
        for topic in body.topics
    ]
    return await _answer(
        request, admin, targets, field="results", result="CreatePartitionsTopicResult"
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.CREATE_TOPICS: ((2, 7), handle_create_topics),
    ApiKey.DELETE_TOPICS: ((1, 6), handle_delete_topics),
    ApiKey.CREATE_PARTITIONS: ((0, 3), handle_create_partitions),
}

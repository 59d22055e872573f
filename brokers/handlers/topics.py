"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): thin over ``brokers.admin``.

Only the controller changes topics; any other broker answers NOT_CONTROLLER and clients
resend to the controller named in Metadata, as with Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from brokers import admin
from brokers.handlers._build import NO_THROTTLE, make, response_class, response_types
from brokers.protocol.codec import Request
from brokers.server import ConnectionContext

if TYPE_CHECKING:
    from brokers.broker import Broker

CREATE_TOPICS_KEY = 19
CREATE_TOPICS_VERSIONS = (2, 7)
DELETE_TOPICS_KEY = 20
DELETE_TOPICS_VERSIONS = (1, 6)
CREATE_PARTITIONS_KEY = 37
CREATE_PARTITIONS_VERSIONS = (0, 3)

FORWARDED_CLIENT_PREFIX = "weir-broker-"
_NOT_CONTROLLER = "this broker is not the controller; send the request to the controller"


async def _forward(broker: Broker, request: Request) -> Any | None:
    """KIP-590: a broker that is not the controller forwards topic admin to the controller.

    Clients may send these to any broker (Kafka's own brokers forward since 2.8). A request
    that was itself forwarded is never forwarded again, so two brokers that disagree about
    the controller for a moment cannot bounce it between them: it gets NOT_CONTROLLER.
    """
    if broker.is_controller or (request.client_id or "").startswith(FORWARDED_CLIENT_PREFIX):
        return None
    timeout_s = request.body.timeout.total_seconds() + 10
    return await broker.forward_to_controller(request.body, timeout_s)


async def handle_create_topics(broker: Broker, ctx: ConnectionContext, request: Request) -> Any:
    forwarded = await _forward(broker, request)
    if forwarded is not None:
        return forwarded
    body = request.body
    version = request.api_version
    types = response_types(CREATE_TOPICS_KEY, version)
    seen: dict[str, int] = {}
    for topic in body.topics:
        seen[topic.name] = seen.get(topic.name, 0) + 1
    results = []
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    for topic in body.topics:
        if seen[topic.name] > 1:
            outcome = admin.TopicOutcome(
                ErrorCode.invalid_request, f"topic {topic.name} appears more than once"
            )
        elif not broker.is_controller:
            outcome = admin.TopicOutcome(ErrorCode.not_controller, _NOT_CONTROLLER)
        else:
            outcome = await admin.create_topic(
                broker,
                name=topic.name,
                num_partitions=topic.num_partitions,
                replication_factor=topic.replication_factor,
                assignments={a.partition_index: list(a.broker_ids) for a in topic.assignments},
                configs={c.name: c.value for c in topic.configs},
                validate_only=body.validate_only,
                timeout_ms=timeout_ms,
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
    return make(
        response_class(CREATE_TOPICS_KEY, version),
        throttle_time=NO_THROTTLE,
        topics=tuple(results),
    )


async def handle_delete_topics(broker: Broker, ctx: ConnectionContext, request: Request) -> Any:
    forwarded = await _forward(broker, request)
    if forwarded is not None:
        return forwarded
    body = request.body
    version = request.api_version
    types = response_types(DELETE_TOPICS_KEY, version)
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    if version >= 6:
        targets = [(t.name, t.topic_id) for t in body.topics]
    else:
        targets = [(name, None) for name in body.topic_names]
    results = []
    for name, topic_id in targets:
        if not broker.is_controller:
            outcome = admin.TopicOutcome(ErrorCode.not_controller, _NOT_CONTROLLER)
        else:
            outcome = await admin.delete_topic(
                broker, name=name, topic_id=topic_id, timeout_ms=timeout_ms
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
    return make(
        response_class(DELETE_TOPICS_KEY, version),
        throttle_time=NO_THROTTLE,
        responses=tuple(results),
    )


async def handle_create_partitions(broker: Broker, ctx: ConnectionContext, request: Request) -> Any:
    forwarded = await _forward(broker, request)
    if forwarded is not None:
        return forwarded
    body = request.body
    version = request.api_version
    types = response_types(CREATE_PARTITIONS_KEY, version)
    timeout_ms = int(body.timeout.total_seconds() * 1000)
    results = []
    for topic in body.topics:
        if not broker.is_controller:
            outcome = admin.TopicOutcome(ErrorCode.not_controller, _NOT_CONTROLLER)
        else:
            outcome = await admin.create_partitions(
                broker,
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
        results.append(
            make(
                types.CreatePartitionsTopicResult,
                name=topic.name,
                error_code=outcome.error,
                error_message=outcome.message,
            )
        )
    return make(
        response_class(CREATE_PARTITIONS_KEY, version),
        throttle_time=NO_THROTTLE,
        results=tuple(results),
    )

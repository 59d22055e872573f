"""DescribeConfigs (32), AlterConfigs (33), IncrementalAlterConfigs (44).

Topic and broker resources, Kafka's names, defaults, sources and synonyms; validation
errors come back per resource as INVALID_CONFIG with a message naming the config. The
work is in ``weir.topic_admin``; this module only maps requests and responses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir import topic_admin
from weir.handlers._build import make, respond, types_of
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.topic_admin import TopicAdmin


_TOPIC_CONFIG = 2
_DENIED = "not authorized"


def _may(access: Access, ctx: ConnectionContext, op: AclOperation, resource: Any) -> bool:
    """Kafka: ``op`` on the topic for topic configs, on the cluster for broker configs."""
    if resource.resource_type == _TOPIC_CONFIG:
        return access.on_topic(ctx, op, resource.resource_name)
    return access.on_cluster(ctx, op)


def _denied(resource: Any) -> ErrorCode:
    if resource.resource_type == _TOPIC_CONFIG:
        return ErrorCode.topic_authorization_failed
    return ErrorCode.cluster_authorization_failed


def config_entries(
    types: Any, entry_cls: type, entries: Iterable[Any], *, synonyms: bool, docs: bool
) -> tuple[Any, ...]:
    """Config entries (``topic_admin``'s) as DescribeConfigs and CreateTopics answer them, as
    ``entry_cls`` entries; ``make`` keeps the fields the entry has (CreateTopics has neither
    synonyms nor documentation)."""
    return tuple(
        make(
            entry_cls,
            name=entry.name,
            value=entry.value,
            read_only=entry.read_only,
            config_source=entry.source,
            is_sensitive=entry.sensitive,
            synonyms=tuple(
                make(types.DescribeConfigsSynonym, name=s.name, value=s.value, source=s.source)
                for s in entry.synonyms
            )
            if synonyms
            else (),
            config_type=entry.config_type,
            documentation=entry.documentation if docs else None,
        )
        for entry in entries
    )


async def _answer(
    ctx: ConnectionContext,
    request: Request,
    access: Access,
    op: AclOperation,
    act: Callable[[Any], Awaitable[topic_admin.ConfigsOutcome]],
    *,
    field: str,
    result: str,
    synonyms: bool = False,
    docs: bool = False,
) -> Any:
    """Per requested resource, a ``result`` entry of the response's ``field``: denied without
    ``op`` on it, else the outcome of ``act`` (the configs when it describes them)."""
    types = types_of(request)
    results = []
    for resource in request.body.resources:
        if not _may(access, ctx, op, resource):
            outcome = topic_admin.ConfigsOutcome(_denied(resource), _DENIED)
        else:
            outcome = await act(resource)
        results.append(
            make(
                getattr(types, result),
                error_code=outcome.error,
                error_message=outcome.message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
                configs=config_entries(
                    types,
                    types.DescribeConfigsResourceResult,
                    outcome.entries,
                    synonyms=synonyms,
                    docs=docs,
                ),
            )
        )
    return respond(request, **{field: tuple(results)})


async def handle_describe(
    ctx: ConnectionContext, request: Request, *, access: Access, admin: TopicAdmin
) -> Any:
    async def describe(resource: Any) -> topic_admin.ConfigsOutcome:
        keys = resource.configuration_keys
        return admin.describe_configs(
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
            keys=None if keys is None else list(keys),
        )

    return await _answer(
        ctx,
        request,
        access,
        AclOperation.DESCRIBE_CONFIGS,
        describe,
        field="results",
        result="DescribeConfigsResult",
        synonyms=getattr(request.body, "include_synonyms", False),
        docs=getattr(request.body, "include_documentation", False),
    )


async def handle_alter(
    ctx: ConnectionContext, request: Request, *, access: Access, admin: TopicAdmin
) -> Any:
    """AlterConfigs and IncrementalAlterConfigs, one walk: per resource, ALTER_CONFIGS or a
    denial, then the requested configs applied by the topic admin. Legacy AlterConfigs sets
    each given config and the set replaces every dynamic config of the resource; the
    incremental form does SET, DELETE, APPEND or SUBTRACT per config (KIP-339)."""
    incremental = request.api_key == ApiKey.INCREMENTAL_ALTER_CONFIGS

    def alter(resource: Any) -> Awaitable[topic_admin.ConfigsOutcome]:
        return admin.alter_configs(
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
            operations=[
                (c.name, c.config_operation if incremental else topic_admin.OP_SET, c.value)
                for c in resource.configs
            ],
            replace=not incremental,
            validate_only=request.body.validate_only,
        )

    return await _answer(
        ctx,
        request,
        access,
        AclOperation.ALTER_CONFIGS,
        alter,
        field="responses",
        result="AlterConfigsResourceResponse",
    )


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.DESCRIBE_CONFIGS: ((1, 4), handle_describe),
    ApiKey.ALTER_CONFIGS: ((0, 2), handle_alter),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ((0, 1), handle_alter),
}

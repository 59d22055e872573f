"""DescribeClientQuotas (48) and AlterClientQuotas (49), v0-1.

Quotas live in the metadata (``client_quotas`` hash + ``ClientQuota`` records, written by
the controller like dynamic configs, so every broker's image has them within a metadata-log
round trip). Describe reads this broker's image; Alter validates each entry as Kafka's
``ClientQuotaControlManager`` does (INVALID_REQUEST naming the problem), then the controller
writes the valid ones in one fenced script. A broker that is not the controller forwards the
request to it (KIP-590), then waits until its own image shows the change, so a Describe sent
to it next sees it. Authorization as Kafka: ALTER_CONFIGS / DESCRIBE_CONFIGS on the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import CLUSTER_DENIED, cluster_denied, make, respond, types_of
from weir.handlers.topics import FORWARDED_CLIENT_PREFIX
from weir.metadata.errors import MetadataError
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import Request
from weir.quotas import InvalidQuotaError, QuotaEntity, describe_matching, validate_alteration
from weir.security.acl import AclOperation
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata.image import ClusterImage
    from weir.metadata_view import MetadataView
    from weir.topic_admin import TopicAdmin

_WAIT_FOR_IMAGE_S = 5.0
_FORWARD_TIMEOUT_S = 15.0


async def handle_describe(
    ctx: ConnectionContext, request: Request, *, access: Access, metadata: MetadataView
) -> Any:
    types = types_of(request)
    if not access.on_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
        return cluster_denied(request, entries=None)
    body = request.body
    try:
        found = describe_matching(
            metadata.image.client_quotas,
            [(c.entity_type, int(c.match_type), c.match) for c in body.components],
            strict=body.strict,
        )
    except InvalidQuotaError as exc:
        return respond(
            request, error_code=ErrorCode.invalid_request, error_message=exc.message, entries=None
        )
    return respond(
        request,
        entries=tuple(
            make(
                types.EntryData,
                entity=tuple(
                    make(types.EntityData, entity_type=t, entity_name=n)
                    for t, n in entity.components
                ),
                values=tuple(
                    make(types.ValueData, key=k, value=v) for k, v in sorted(values.items())
                ),
            )
            for entity, values in found
        ),
    )


def _entity(entry: Any) -> QuotaEntity:
    return QuotaEntity(
        tuple(sorted(((e.entity_type, e.entity_name) for e in entry.entity), key=lambda c: c[0]))
    )


def _shows(image: ClusterImage, changes: list[tuple[QuotaEntity, str, float | None]]) -> bool:
    """Does ``image`` hold every change (so a Describe here sees the alteration)?"""
    return all(image.client_quotas.get(e, {}).get(k) == v for e, k, v in changes)


async def handle_alter(
    ctx: ConnectionContext,
    request: Request,
    *,
    access: Access,
    metadata: MetadataView,
    admin: TopicAdmin,
) -> Any:
    body = request.body
    allowed = access.on_cluster(ctx, AclOperation.ALTER_CONFIGS)
    outcomes: list[tuple[ErrorCode, str | None]] = []
    changes: list[list[tuple[QuotaEntity, str, float | None]]] = []  # per entry
    seen: set[QuotaEntity] = set()
    for entry in body.entries:
        entity = _entity(entry)
        changes.append([])
        if not allowed:
            outcomes.append((ErrorCode.cluster_authorization_failed, CLUSTER_DENIED))
            continue
        try:
            if entity in seen:
                raise InvalidQuotaError(f"Duplicate entity in request: {entity}")
            seen.add(entity)
            valid = validate_alteration(entity, [(o.key, o.value, o.remove) for o in entry.ops])
        except InvalidQuotaError as exc:
            outcomes.append((ErrorCode.invalid_request, exc.message))
            continue
        outcomes.append((ErrorCode.none, None))
        changes[-1] = [(entity, key, value) for key, value in valid.items()]
    if allowed and not admin.is_controller:
        return await _forward(request, metadata, admin, changes)
    wanted = [c for entry_changes in changes for c in entry_changes]
    if wanted and not body.validate_only:
        assert admin.lease.epoch is not None
        try:
            await admin.store.alter_client_quotas(
                controller_epoch=admin.lease.epoch, changes=wanted
            )
        except MetadataError as exc:
            outcomes = [
                (ErrorCode(exc.error_code), str(exc)) if e is ErrorCode.none else (e, m)
                for e, m in outcomes
            ]
        else:
            await metadata.wait_for_metadata(
                lambda: _shows(metadata.image, wanted), _WAIT_FOR_IMAGE_S
            )
    return _response(request, outcomes)


def _response(request: Request, outcomes: list[tuple[ErrorCode, str | None]]) -> Any:
    types = types_of(request)
    return respond(
        request,
        entries=tuple(
            make(
                types.EntryData,
                error_code=error,
                error_message=message,
                entity=tuple(
                    make(types.EntityData, entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity
                ),
            )
            for entry, (error, message) in zip(request.body.entries, outcomes, strict=True)
        ),
    )


async def _forward(
    request: Request,
    metadata: MetadataView,
    admin: TopicAdmin,
    changes: list[list[tuple[QuotaEntity, str, float | None]]],
) -> Any:
    """Not the controller: the controller answers (KIP-590), and this broker waits until its
    own image shows what the controller accepted. A request a broker forwarded here is never
    forwarded again (two brokers that disagree about the controller cannot bounce it)."""
    forwarded = None
    if not (request.client_id or "").startswith(FORWARDED_CLIENT_PREFIX):
        forwarded = await admin.channel.forward(request.body, _FORWARD_TIMEOUT_S)
    if forwarded is None:
        message = "this broker is not the controller and cannot reach it; retry"
        return _response(request, [(ErrorCode.not_controller, message)] * len(changes))
    if not request.body.validate_only:
        accepted = [
            c
            for entry, entry_changes in zip(forwarded.entries, changes, strict=False)
            if entry.error_code == ErrorCode.none
            for c in entry_changes
        ]
        await metadata.wait_for_metadata(
            lambda: _shows(metadata.image, accepted), _WAIT_FOR_IMAGE_S
        )
    return forwarded


# API key -> (supported versions, handler), for weir.handlers.registry.
HANDLERS = {
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ((0, 1), handle_describe),
    ApiKey.ALTER_CLIENT_QUOTAS: ((0, 1), handle_alter),
}

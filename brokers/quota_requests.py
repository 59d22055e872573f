"""AlterClientQuotas and DescribeClientQuotas requests, as Kafka's tools write entities.

Kept apart from :mod:`brokers.quotas` (the control plane's services, which need Django and
DRF) so that a process without Django — the overload benchmark, a broker test — can build
them too. Entities are written as ``kafka-configs`` writes them: ``users`` / ``clients`` with
a name or ``<default>`` (None here), e.g. ``[("users", "alice"), ("clients", None)]``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.alter_client_quotas.v1 import request as alter
from kio.schema.describe_client_quotas.v1 import request as describe
from kio.static.primitive import f64, i8

from weir.quotas import CLIENT_ID, USER

__all__ = [
    "ENTITY_TYPES",
    "ToolEntity",
    "protocol_entity",
    "quota_alter_request",
    "quota_describe_request",
]

# kafka-configs' entity type names → the protocol's.
ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID}
_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_SPECIFIED = 0, 1, 2

ToolEntity = Sequence[tuple[str, str | None]]


def protocol_entity(entity: ToolEntity) -> list[tuple[str, str | None]]:
    """``[("users", "alice")]`` → ``[("user", "alice")]``: the protocol's entity types."""
    return [(ENTITY_TYPES[kind], name) for kind, name in entity]


def quota_describe_request(
    entity: Sequence[tuple[str, str | bool | None]],
) -> describe.DescribeClientQuotasRequest:
    """DescribeClientQuotas for exactly this entity, as ``kafka-configs --describe``; a name
    of ``True`` matches any named entity of that type (``--entity-type users`` alone)."""
    components = []
    for kind, name in entity:
        if name is True:
            match_type, match = _MATCH_SPECIFIED, None
        elif name is None:
            match_type, match = _MATCH_DEFAULT, None
        else:
            match_type, match = _MATCH_EXACT, str(name)
        components.append(
            describe.ComponentData(
                entity_type=ENTITY_TYPES[kind], match_type=i8(match_type), match=match
            )
        )
    return describe.DescribeClientQuotasRequest(components=tuple(components), strict=True)


def quota_alter_request(
    entity: ToolEntity, *, set: dict[str, float], remove: Sequence[str] = ()
) -> alter.AlterClientQuotasRequest:
    """AlterClientQuotas setting and removing quota keys of one entity."""
    ops = [alter.OpData(key=k, value=f64(float(v)), remove=False) for k, v in set.items()]
    ops += [alter.OpData(key=k, value=f64(0.0), remove=True) for k in remove]
    return alter.AlterClientQuotasRequest(
        entries=(
            alter.EntryData(
                entity=tuple(
                    alter.EntityData(entity_type=t, entity_name=n)
                    for t, n in protocol_entity(entity)
                ),
                ops=tuple(ops),
            ),
        ),
        validate_only=False,
    )

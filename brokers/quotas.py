"""Client quotas for the control plane: request builders for ``manage.py configs`` and the
selector the dashboard and ``/metrics`` read.

Quotas are set and described through the brokers (AlterClientQuotas / DescribeClientQuotas),
so the broker's authorizer applies, exactly as ``kafka-configs.sh --entity-type users|clients``
does. Reading the current state needs no broker round trip: the quotas are in the metadata
image (``ClusterImage.client_quotas``) and every broker publishes, with its metrics, the
per-entity figures of the clients under a quota (``weir.quotas.QuotaManager.snapshot``).
:func:`client_quota_state` joins the two.

Entities are written as Kafka's tools write them: ``users`` / ``clients`` with a name or
``<default>`` (None here), e.g. ``[("users", "alice"), ("clients", None)]``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.alter_client_quotas.v1 import request as alter
from kio.schema.describe_client_quotas.v1 import request as describe
from kio.static.primitive import f64, i8

from weir.metrics import broker_metrics_key, read_broker_metrics
from weir.quotas import CLIENT_ID, USER, QuotaEntity

__all__ = [
    "ENTITY_TYPES",
    "ClientQuota",
    "QuotaUsage",
    "client_quota_state",
    "entity_label",
    "quota_alter_request",
    "quota_describe_request",
]

# kafka-configs' entity type names → the protocol's.
ENTITY_TYPES = {"users": USER, "clients": CLIENT_ID}
_MATCH_EXACT, _MATCH_DEFAULT, _MATCH_SPECIFIED = 0, 1, 2
# A broker snapshot older than this belongs to a broker that stopped publishing.
_STALE_MS = 5_000

ToolEntity = Sequence[tuple[str, str | None]]


def _protocol_entity(entity: ToolEntity) -> list[tuple[str, str | None]]:
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
                    for t, n in _protocol_entity(entity)
                ),
                ops=tuple(ops),
            ),
        ),
        validate_only=False,
    )


def entity_label(components: Sequence[tuple[str, str | None]]) -> str:
    """Kafka's wording: ``user-principal 'alice', the default client-id``."""
    words = {USER: "user-principal", CLIENT_ID: "client-id"}
    order = sorted(components, key=lambda c: 0 if c[0] == USER else 1)
    return ", ".join(
        f"the default {words.get(t, t)}" if n is None else f"{words.get(t, t)} '{n}'"
        for t, n in order
    )


@dataclass(frozen=True, slots=True)
class QuotaUsage:
    """What one broker measured for the clients counted under one quota (metric tags)."""

    broker_id: int
    type: str  # Produce, Fetch, Request
    user: str
    client_id: str
    quota: float | None
    rate: float  # bytes/s, or percent of a thread for Request
    throttle_time_avg_ms: float
    throttle_time_max_ms: float
    throttled_requests: int
    throttle_time_ms_total: int


@dataclass(frozen=True, slots=True)
class ClientQuota:
    """A configured quota entity: its path (``users/alice/clients/<default>``), parts, values."""

    entity: str
    user: str | bool | None  # a name, None for <default>, False when not part of the entity
    client_id: str | bool | None
    values: dict[str, float]
    usage: list[QuotaUsage] = field(default_factory=list)


def client_quota_state(gw: Any = None) -> tuple[list[ClientQuota], list[QuotaUsage]]:
    """(every configured quota entity, every live usage figure of every broker).

    Usage rows are keyed by metric tags, not entity (several entities can feed one, e.g.
    ``clients/<default>`` gives each client id its own); a row is attached to a configured
    entity's ``usage`` when the tags name it exactly (``users/U``, ``clients/C`` or
    ``users/U/clients/C``), and always listed in the second element.
    """
    if gw is None:
        from controlplane.cluster import gateway

        gw = gateway()
    image = gw.image()
    cutoff = int(time.time() * 1000) - _STALE_MS
    usage = [
        QuotaUsage(broker_id=broker, **row)
        for broker, snap in sorted(
            read_broker_metrics(gw.redis.hgetall(broker_metrics_key(gw.keys))).items()
        )
        if snap.get("updated_ms", 0) >= cutoff
        for row in snap.get("client_quotas", [])
    ]
    quotas = []
    for entity, values in sorted(image.client_quotas.items(), key=lambda kv: str(kv[0])):
        user, client_id = entity.part(USER), entity.part(CLIENT_ID)
        mine = [u for u in usage if _tags_of(entity) == (u.user, u.client_id)]
        quotas.append(ClientQuota(str(entity), user, client_id, dict(values), mine))
    return quotas, usage


def _tags_of(entity: QuotaEntity) -> tuple[str, str] | None:
    """The metric tags a named entity's clients are counted under (None for defaults, whose
    clients each get tags of their own)."""
    user, client_id = entity.part(USER), entity.part(CLIENT_ID)
    if user is None or client_id is None:
        return None
    return (user or "", client_id or "")

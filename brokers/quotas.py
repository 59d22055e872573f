"""Client quotas for the control plane: the services ``manage.py configs`` and ``/api/quotas/``
share, and the selector the dashboard, the API and ``/metrics`` read.

Quotas are set and described through the brokers (AlterClientQuotas / DescribeClientQuotas),
so the broker's authorizer applies, exactly as ``kafka-configs.sh --entity-type users|clients``
does. Reading the current state needs no broker round trip: the quotas are in the metadata
image (``ClusterImage.client_quotas``) and every broker publishes, with its metrics, the
per-entity figures of the clients under a quota (``weir.quotas.QuotaManager.snapshot``).
:func:`client_quota_state` joins the two.

The services (:func:`client_quota_describe`, :func:`client_quota_alter`,
:func:`client_quota_replace`, :func:`client_quota_delete`) take a ``send`` callable (a kio
request in, its response out): the web app's is the shared gateway's ``request_any``, the
CLI's sends with its ``--bootstrap-server`` / ``--command-config``. Each alteration is checked
first with the brokers' own rule (``weir.quotas.validate_alteration``), so bad input gets
Kafka's message without a round trip; the broker checks again. Failures are the control
plane's API errors (``controlplane.errors``): 400 for what Kafka calls INVALID_REQUEST, 403
for an authorization failure, 404 for nothing to delete, 503 when no broker answers; the CLI
turns them into a tool error with the same message.

Entities are written as Kafka's tools write them: ``users`` / ``clients`` with a name or
``<default>`` (None here), e.g. ``[("users", "alice"), ("clients", None)]``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode
from rest_framework import status

from brokers.management.kafka_admin import kafka_error_text
from brokers.quota_requests import (
    ENTITY_TYPES,
    ToolEntity,
    protocol_entity,
    quota_alter_request,
    quota_describe_request,
)
from controlplane.errors import ApiError, BadRequest, KafkaUnavailable, NotFound
from weir.metrics import broker_metrics_key, read_broker_metrics
from weir.quotas import (
    CLIENT_ID,
    QUOTA_KEYS,
    USER,
    InvalidQuotaError,
    QuotaEntity,
    validate_alteration,
)

__all__ = [
    "DEFAULT",
    "ENTITY_TYPES",
    "QUOTA_KEYS",
    "ClientQuota",
    "DescribedQuota",
    "QuotaUsage",
    "Send",
    "client_quota_alter",
    "client_quota_delete",
    "client_quota_describe",
    "client_quota_replace",
    "client_quota_state",
    "entity_label",
    "entity_of",
    "entity_path",
    "quota_alter_request",
    "quota_describe_request",
]

# A broker snapshot older than this belongs to a broker that stopped publishing.
_STALE_MS = 5_000

# A kio request in, its response out (see the module docstring).
Send = Callable[[Any], Any]
# How the API, the dashboard and kafka-configs write a default entity part.
DEFAULT = "<default>"
TIMEOUT = 10.0


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

    def fields(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, slots=True)
class ClientQuota:
    """A configured quota entity: its path (``users/alice/clients/<default>``), parts, values."""

    entity: str
    user: str | bool | None  # a name, None for <default>, False when not part of the entity
    client_id: str | bool | None
    values: dict[str, float]
    usage: list[QuotaUsage] = field(default_factory=list)

    def fields(self) -> dict[str, Any]:
        """As the API shows it: each part a name, ``<default>``, or null when absent."""
        return {
            "entity": self.entity,
            "user": _api_part(self.user),
            "client_id": _api_part(self.client_id),
            "values": dict(sorted(self.values.items())),
            "usage": [u.fields() for u in self.usage],
        }


def _api_part(name: str | bool | None) -> str | None:
    if name is False:
        return None
    return DEFAULT if name is None else str(name)


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


def client_quota_view(gw: Any = None) -> dict[str, Any]:
    """:func:`client_quota_state` as JSON: ``{"quotas": [...], "usage": [...]}`` (the body of
    ``GET /api/quotas/``, the dashboard's first paint and its live socket's message)."""
    quotas, usage = client_quota_state(gw)
    return {"quotas": [q.fields() for q in quotas], "usage": [u.fields() for u in usage]}


# -- services ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DescribedQuota:
    """One entity as the brokers describe it: its parts (protocol entity types) and values."""

    components: tuple[tuple[str, str | None], ...]
    values: dict[str, float]

    @property
    def label(self) -> str:
        """Kafka's wording, ``user-principal 'alice', the default client-id``."""
        return entity_label(self.components)


def entity_of(
    *, user: str | None = None, client_id: str | None = None
) -> list[tuple[str, str | None]]:
    """The entity the API's parts name: each a name, ``<default>``, or None when absent.

    400 when neither part is given; other bad entities (an empty name) are refused by
    :func:`client_quota_alter` with Kafka's message."""
    entity: list[tuple[str, str | None]] = []
    for kind, name in (("users", user), ("clients", client_id)):
        if name is not None:
            entity.append((kind, None if name == DEFAULT else name))
    if not entity:
        raise BadRequest(f"a quota entity needs a user and/or a client_id (a name or {DEFAULT})")
    return entity


def entity_path(entity: ToolEntity) -> str:
    """Kafka's path form of an entity, ``users/alice/clients/<default>``."""
    return str(QuotaEntity(tuple(sorted(protocol_entity(entity)))))


def client_quota_describe(
    *, entity: Sequence[tuple[str, str | bool | None]], send: Send | None = None
) -> list[DescribedQuota]:
    """The entities the brokers describe for this filter (``True`` as a name: any name)."""
    response = (send or _gateway_send)(quota_describe_request(entity))
    _raise_for(response.error_code, response.error_message)
    return [
        DescribedQuota(
            components=tuple((e.entity_type, e.entity_name) for e in entry.entity),
            values={v.key: float(v.value) for v in entry.values},
        )
        for entry in response.entries or ()
    ]


def client_quota_values(*, entity: ToolEntity, send: Send | None = None) -> dict[str, float]:
    """The quota values set on exactly this entity (empty when none)."""
    found = client_quota_describe(entity=entity, send=send)
    return dict(found[0].values) if found else {}


def client_quota_alter(
    *,
    entity: ToolEntity,
    values: Mapping[str, float],
    remove: Sequence[str] = (),
    send: Send | None = None,
) -> None:
    """Set ``values`` and remove the keys ``remove`` on one entity (kafka-configs --alter)."""
    _check_alteration(entity, values, remove)
    response = (send or _gateway_send)(quota_alter_request(entity, set=dict(values), remove=remove))
    (result,) = response.entries
    _raise_for(result.error_code, result.error_message)


def client_quota_replace(
    *, entity: ToolEntity, values: Mapping[str, float], send: Send | None = None
) -> dict[str, float]:
    """Make ``values`` the entity's only quotas (keys not given are removed); the values the
    brokers then describe."""
    _check_alteration(entity, values, ())
    current = client_quota_values(entity=entity, send=send)
    remove = [key for key in sorted(current) if key not in values]
    if values or remove:
        client_quota_alter(entity=entity, values=values, remove=remove, send=send)
    return client_quota_values(entity=entity, send=send)


def client_quota_delete(
    *, entity: ToolEntity, keys: Sequence[str] = (), send: Send | None = None
) -> list[str]:
    """Remove ``keys`` (all of them when empty) from an entity; the keys removed. 404 when the
    entity has no quota, or lacks one of the named keys (nothing is removed then)."""
    _check_alteration(entity, {}, keys)
    current = client_quota_values(entity=entity, send=send)
    path = entity_path(entity)
    if not current:
        raise NotFound(f"no quota is set for {path}")
    wanted = list(keys) or sorted(current)
    missing = [key for key in wanted if key not in current]
    if missing:
        raise NotFound(f"{path} has no {', '.join(missing)} quota")
    client_quota_alter(entity=entity, values={}, remove=wanted, send=send)
    return wanted


def _gateway_send(body: Any) -> Any:
    from controlplane.cluster import gateway

    return gateway().request_any(body, timeout=TIMEOUT)


def _check_alteration(
    entity: ToolEntity, values: Mapping[str, float], remove: Sequence[str]
) -> None:
    """The brokers' own checks (``weir.quotas.validate_alteration``), before any request."""
    for kind, _ in entity:
        if kind not in ENTITY_TYPES:
            raise BadRequest(f"quota entity type {kind!r} is not one of {', '.join(ENTITY_TYPES)}")
    ops = [(key, float(value), False) for key, value in values.items()]
    ops += [(key, 0.0, True) for key in remove]
    try:
        validate_alteration(QuotaEntity(tuple(sorted(protocol_entity(entity)))), ops)
    except InvalidQuotaError as exc:
        raise BadRequest(f"INVALID_REQUEST: {exc.message}") from None


def _raise_for(code: int, message: str | None) -> None:
    """The API error a Kafka error code in a quota answer stands for (none for 0)."""
    error = ErrorCode(code)
    if error == ErrorCode.none:
        return
    text = kafka_error_text(code, message)
    if error == ErrorCode.cluster_authorization_failed:
        raise ApiError(f"not authorized: {text}", status_code=status.HTTP_403_FORBIDDEN)
    if error.retriable:
        raise KafkaUnavailable(f"client quotas: {text}")
    raise BadRequest(text)

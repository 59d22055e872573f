"""One module per Kafka API family; each ends with ``HANDLERS``: API key (a
``weir.protocol.api_keys.ApiKey``) -> (supported versions, handler).

``registry()`` collects those into the dispatch table the server uses and that ApiVersions
advertises, so what Weir claims and what it implements cannot drift apart.

Handlers never see the broker. A handler is ``async def handle(ctx, request, *, <parts>)``:
its keyword-only parameters name the broker parts it uses (``metadata``, ``replicas``,
``access``, ``groups``, ``admin``, ...), and ``registry`` binds exactly those, so the
signature is the whole list of what a handler may touch, and a test can call one with real
parts and no process. A handler that names a part the registry does not have fails at
start-up, not on its first request.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from weir.handlers import acls as acl_api
from weir.handlers import (
    api_versions,
    client_quotas,
    cluster_control,
    configs,
    delete_records,
    fetch,
    init_producer_id,
    list_offsets,
    offset_for_leader_epoch,
    offsets,
    produce,
    reassignments,
    sasl,
    scram_credentials,
    topics,
    transactions,
)
from weir.handlers import groups as group_api
from weir.handlers import metadata as metadata_api
from weir.handlers._authz import Access
from weir.handlers._leader import Leaders
from weir.handlers._quota import with_request_quota
from weir.quotas import QuotaManager

if TYPE_CHECKING:
    from weir.controller import Controller
    from weir.controller_channel import ControllerChannel
    from weir.credential_store import ScramCredentialStore
    from weir.group_coordinator import GroupCoordinator
    from weir.metadata_view import MetadataView
    from weir.replica_manager import ReplicaManager
    from weir.replication.isr_manager import IsrManager
    from weir.replication.throttle import ReplicationThrottle
    from weir.security.acl import Authorizer
    from weir.security.acl_store import AclCache
    from weir.server import Handler
    from weir.topic_admin import TopicAdmin
    from weir.transaction_coordinator import TransactionCoordinator

__all__ = ["bind", "registry", "supported_versions"]

_MODULES = (
    produce,
    fetch,
    list_offsets,
    metadata_api,
    api_versions,
    topics,
    delete_records,
    init_producer_id,
    configs,
    offset_for_leader_epoch,
    cluster_control,
    reassignments,
    group_api,
    offsets,
    sasl,
    scram_credentials,
    acl_api,
    client_quotas,
    transactions,
)


def supported_versions() -> dict[int, tuple[int, int]]:
    """Supported version range by API key, from the modules' ``HANDLERS``: what ApiVersions
    advertises and requests are checked against (needs no broker parts)."""
    return {
        key: supported for module in _MODULES for key, (supported, _) in module.HANDLERS.items()
    }


def registry(
    *,
    metadata: MetadataView,
    replicas: ReplicaManager,
    authorizer: Authorizer | None,
    groups: GroupCoordinator,
    transactions: TransactionCoordinator,
    controller: Controller,
    channel: ControllerChannel,
    admin: TopicAdmin,
    isr: IsrManager,
    throttle: ReplicationThrottle,
    acls: AclCache,
    credentials: ScramCredentialStore,
    allocate_producer_id: Callable[[], Awaitable[int]],
    time_ms: Callable[[], int],
    quotas: QuotaManager | None = None,
) -> tuple[dict[int, Handler], dict[int, tuple[int, int]]]:
    """(handlers by API key, supported version range by API key), each handler bound to the
    parts its signature names and under the client request quota (``_quota``)."""
    versions = supported_versions()
    quotas = quotas if quotas is not None else QuotaManager()
    parts: dict[str, Any] = {
        "metadata": metadata,
        "replicas": replicas,
        "leaders": Leaders(metadata, replicas),
        "access": Access(authorizer),
        "groups": groups,
        "transactions": transactions,
        "controller": controller,
        "channel": channel,
        "admin": admin,
        "isr": isr,
        "throttle": throttle,
        "acls": acls,
        "credentials": credentials,
        "allocate_producer_id": allocate_producer_id,
        "time_ms": time_ms,
        "supported_versions": versions,
        "quotas": quotas,
    }
    handlers: dict[int, Handler] = {}
    for module in _MODULES:
        for key, (_, fn) in module.HANDLERS.items():
            handlers[key] = with_request_quota(key, bind(fn, parts), quotas, time_ms)
    return handlers, versions


def bind(fn: Callable[..., Awaitable[Any]], parts: Mapping[str, Any]) -> Handler:
    """``fn`` with its keyword-only parameters (the parts it uses) filled from ``parts``."""
    wanted = [
        name
        for name, param in inspect.signature(fn).parameters.items()
        if param.kind is inspect.Parameter.KEYWORD_ONLY
    ]
    missing = [name for name in wanted if name not in parts]
    if missing:
        raise TypeError(f"{fn.__module__}.{fn.__name__} needs unknown parts {missing}")
    return partial(fn, **{name: parts[name] for name in wanted})

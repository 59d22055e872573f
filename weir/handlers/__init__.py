"""One module per Kafka API family; each exposes ``API_KEY``, ``VERSIONS`` and ``handle``.

``registry()`` collects them into the dispatch table the server uses and that ApiVersions
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
)
from weir.handlers import groups as group_api
from weir.handlers import metadata as metadata_api
from weir.handlers._authz import Access
from weir.handlers._leader import Leaders

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

__all__ = ["bind", "registry"]


def registry(
    *,
    metadata: MetadataView,
    replicas: ReplicaManager,
    authorizer: Authorizer | None,
    groups: GroupCoordinator,
    controller: Controller,
    channel: ControllerChannel,
    admin: TopicAdmin,
    isr: IsrManager,
    throttle: ReplicationThrottle,
    acls: AclCache,
    credentials: ScramCredentialStore,
    allocate_producer_id: Callable[[], Awaitable[int]],
    time_ms: Callable[[], int],
) -> tuple[dict[int, Handler], dict[int, tuple[int, int]]]:
    """(handlers by API key, supported version range by API key), each handler bound to the
    parts its signature names."""
    versions: dict[int, tuple[int, int]] = {}
    parts: dict[str, Any] = {
        "metadata": metadata,
        "replicas": replicas,
        "leaders": Leaders(metadata, replicas),
        "access": Access(authorizer),
        "groups": groups,
        "controller": controller,
        "channel": channel,
        "admin": admin,
        "isr": isr,
        "throttle": throttle,
        "acls": acls,
        "credentials": credentials,
        "allocate_producer_id": allocate_producer_id,
        "time_ms": time_ms,
        # ApiVersions answers from the finished table (filled below).
        "supported_versions": versions,
    }
    table = [
        (produce.API_KEY, produce.VERSIONS, produce.handle),
        (fetch.API_KEY, fetch.VERSIONS, fetch.handle),
        (list_offsets.API_KEY, list_offsets.VERSIONS, list_offsets.handle),
        (metadata_api.METADATA_KEY, metadata_api.METADATA_VERSIONS, metadata_api.handle_metadata),
        (api_versions.API_KEY, api_versions.VERSIONS, api_versions.handle),
        (topics.CREATE_TOPICS_KEY, topics.CREATE_TOPICS_VERSIONS, topics.handle_create_topics),
        (topics.DELETE_TOPICS_KEY, topics.DELETE_TOPICS_VERSIONS, topics.handle_delete_topics),
        (delete_records.API_KEY, delete_records.VERSIONS, delete_records.handle),
        (init_producer_id.API_KEY, init_producer_id.VERSIONS, init_producer_id.handle),
        (configs.DESCRIBE_KEY, configs.DESCRIBE_VERSIONS, configs.handle_describe),
        (configs.ALTER_KEY, configs.ALTER_VERSIONS, configs.handle_alter),
        (
            topics.CREATE_PARTITIONS_KEY,
            topics.CREATE_PARTITIONS_VERSIONS,
            topics.handle_create_partitions,
        ),
        (configs.INCREMENTAL_KEY, configs.INCREMENTAL_VERSIONS, configs.handle_alter),
        (
            offset_for_leader_epoch.API_KEY,
            offset_for_leader_epoch.VERSIONS,
            offset_for_leader_epoch.handle,
        ),
        (
            cluster_control.ELECT_LEADERS_KEY,
            cluster_control.ELECT_LEADERS_VERSIONS,
            cluster_control.handle_elect_leaders,
        ),
        (reassignments.ALTER_KEY, reassignments.ALTER_VERSIONS, reassignments.handle_alter),
        (reassignments.LIST_KEY, reassignments.LIST_VERSIONS, reassignments.handle_list),
        (
            cluster_control.ALTER_PARTITION_KEY,
            cluster_control.ALTER_PARTITION_VERSIONS,
            cluster_control.handle_alter_partition,
        ),
        (
            group_api.FIND_COORDINATOR_KEY,
            group_api.FIND_COORDINATOR_VERSIONS,
            group_api.handle_find_coordinator,
        ),
        (group_api.JOIN_GROUP_KEY, group_api.JOIN_GROUP_VERSIONS, group_api.handle_join_group),
        (group_api.HEARTBEAT_KEY, group_api.HEARTBEAT_VERSIONS, group_api.handle_heartbeat),
        (group_api.LEAVE_GROUP_KEY, group_api.LEAVE_GROUP_VERSIONS, group_api.handle_leave_group),
        (group_api.SYNC_GROUP_KEY, group_api.SYNC_GROUP_VERSIONS, group_api.handle_sync_group),
        (
            group_api.DESCRIBE_GROUPS_KEY,
            group_api.DESCRIBE_GROUPS_VERSIONS,
            group_api.handle_describe_groups,
        ),
        (group_api.LIST_GROUPS_KEY, group_api.LIST_GROUPS_VERSIONS, group_api.handle_list_groups),
        (
            group_api.DELETE_GROUPS_KEY,
            group_api.DELETE_GROUPS_VERSIONS,
            group_api.handle_delete_groups,
        ),
        (offsets.OFFSET_COMMIT_KEY, offsets.OFFSET_COMMIT_VERSIONS, offsets.handle_offset_commit),
        (offsets.OFFSET_FETCH_KEY, offsets.OFFSET_FETCH_VERSIONS, offsets.handle_offset_fetch),
        (offsets.OFFSET_DELETE_KEY, offsets.OFFSET_DELETE_VERSIONS, offsets.handle_offset_delete),
        (
            metadata_api.DESCRIBE_CLUSTER_KEY,
            metadata_api.DESCRIBE_CLUSTER_VERSIONS,
            metadata_api.handle_describe_cluster,
        ),
        (sasl.HANDSHAKE_KEY, sasl.HANDSHAKE_VERSIONS, sasl.handle_handshake),
        (sasl.AUTHENTICATE_KEY, sasl.AUTHENTICATE_VERSIONS, sasl.handle_authenticate),
        (
            scram_credentials.DESCRIBE_KEY,
            scram_credentials.DESCRIBE_VERSIONS,
            scram_credentials.handle_describe,
        ),
        (
            scram_credentials.ALTER_KEY,
            scram_credentials.ALTER_VERSIONS,
            scram_credentials.handle_alter,
        ),
        (acl_api.DESCRIBE_KEY, acl_api.DESCRIBE_VERSIONS, acl_api.handle_describe),
        (acl_api.CREATE_KEY, acl_api.CREATE_VERSIONS, acl_api.handle_create),
        (acl_api.DELETE_KEY, acl_api.DELETE_VERSIONS, acl_api.handle_delete),
    ]
    handlers: dict[int, Handler] = {key: bind(fn, parts) for key, _, fn in table}
    versions.update({key: rng for key, rng, _ in table})
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

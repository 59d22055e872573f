"""One module per Kafka API family; each exposes ``API_KEY``, ``VERSIONS`` and ``handle``.

``registry()`` collects them into the dispatch table the server uses and that ApiVersions
advertises, so what Weir claims and what it implements cannot drift apart.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from weir.handlers import (
    acls,
    api_versions,
    cluster_control,
    configs,
    delete_records,
    fetch,
    groups,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
    reassignments,
    sasl,
    scram_credentials,
    topics,
)

if TYPE_CHECKING:
    from weir.broker import Broker
    from weir.server import Handler

__all__ = ["registry"]


def registry(broker: Broker) -> tuple[dict[int, Handler], dict[int, tuple[int, int]]]:
    """(handlers by API key, supported version range by API key) bound to ``broker``."""
    table = [
        (produce.API_KEY, produce.VERSIONS, produce.handle),
        (fetch.API_KEY, fetch.VERSIONS, fetch.handle),
        (list_offsets.API_KEY, list_offsets.VERSIONS, list_offsets.handle),
        (metadata.METADATA_KEY, metadata.METADATA_VERSIONS, metadata.handle_metadata),
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
        (configs.INCREMENTAL_KEY, configs.INCREMENTAL_VERSIONS, configs.handle_incremental),
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
            groups.FIND_COORDINATOR_KEY,
            groups.FIND_COORDINATOR_VERSIONS,
            groups.handle_find_coordinator,
        ),
        (groups.JOIN_GROUP_KEY, groups.JOIN_GROUP_VERSIONS, groups.handle_join_group),
        (groups.HEARTBEAT_KEY, groups.HEARTBEAT_VERSIONS, groups.handle_heartbeat),
        (groups.LEAVE_GROUP_KEY, groups.LEAVE_GROUP_VERSIONS, groups.handle_leave_group),
        (groups.SYNC_GROUP_KEY, groups.SYNC_GROUP_VERSIONS, groups.handle_sync_group),
        (
            groups.DESCRIBE_GROUPS_KEY,
            groups.DESCRIBE_GROUPS_VERSIONS,
            groups.handle_describe_groups,
        ),
        (groups.LIST_GROUPS_KEY, groups.LIST_GROUPS_VERSIONS, groups.handle_list_groups),
        (groups.DELETE_GROUPS_KEY, groups.DELETE_GROUPS_VERSIONS, groups.handle_delete_groups),
        (offsets.OFFSET_COMMIT_KEY, offsets.OFFSET_COMMIT_VERSIONS, offsets.handle_offset_commit),
        (offsets.OFFSET_FETCH_KEY, offsets.OFFSET_FETCH_VERSIONS, offsets.handle_offset_fetch),
        (offsets.OFFSET_DELETE_KEY, offsets.OFFSET_DELETE_VERSIONS, offsets.handle_offset_delete),
        (
            metadata.DESCRIBE_CLUSTER_KEY,
            metadata.DESCRIBE_CLUSTER_VERSIONS,
            metadata.handle_describe_cluster,
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
        (acls.DESCRIBE_KEY, acls.DESCRIBE_VERSIONS, acls.handle_describe),
        (acls.CREATE_KEY, acls.CREATE_VERSIONS, acls.handle_create),
        (acls.DELETE_KEY, acls.DELETE_VERSIONS, acls.handle_delete),
    ]
    handlers: dict[int, Handler] = {key: partial(fn, broker) for key, _, fn in table}
    versions = {key: rng for key, rng, _ in table}
    return handlers, versions

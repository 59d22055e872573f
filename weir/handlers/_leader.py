"""The one check every data-plane handler makes first: does this broker lead the partition?"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

if TYPE_CHECKING:
    from weir.metadata_view import MetadataView
    from weir.partition import Partition
    from weir.replica_manager import ReplicaManager

__all__ = ["led_partition"]


def led_partition(
    metadata: MetadataView, replicas: ReplicaManager, topic: str, index: int
) -> tuple[ErrorCode, Partition | None]:
    """(NONE, this broker's replica) when it leads ``topic``-``index``, else (the error
    clients expect, None)."""
    local = replicas.get(topic, index)
    error = metadata.leader_error(topic, index, local)
    return error, (local if error is ErrorCode.none else None)

"""The one check every data-plane handler makes first: does this broker lead the partition?

``Leaders`` is the part data-plane handlers take instead of the metadata view and the replica
manager: they need only "this broker's replica, if it leads the partition at the epoch the
client knows", and the errors clients expect when it does not.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from weir.handlers._build import per_partition, respond, types_of

if TYPE_CHECKING:
    from weir.handlers._authz import Access
    from weir.metadata_view import MetadataView
    from weir.partition import Partition
    from weir.protocol.codec import Request
    from weir.replica_manager import ReplicaManager
    from weir.security.acl import AclOperation
    from weir.server import ConnectionContext

__all__ = ["Leaders", "led_partition", "partition_leader_handler"]


def led_partition(
    metadata: MetadataView, replicas: ReplicaManager, topic: str, index: int
) -> tuple[ErrorCode, Partition | None]:
    """(NONE, this broker's replica) when it leads ``topic``-``index``, else (the error
    clients expect, None): KAFKA_STORAGE_ERROR while it is offline on this broker (its disk
    failed it), as Kafka answers for a replica on an offline log directory."""
    local = replicas.get(topic, index)
    if local is None and replicas.is_offline(topic, index):
        return ErrorCode.kafka_storage_error, None
    error = metadata.leader_error(topic, index, local)
    return error, (local if error is ErrorCode.none else None)


def epoch_error(partition: Partition, requested: int) -> ErrorCode:
    """KIP-320: a client that knows a newer or older leader epoch than ours must refresh
    (-1: the client does not say)."""
    if requested < 0 or requested == partition.leader_epoch:
        return ErrorCode.none
    if requested < partition.leader_epoch:
        return ErrorCode.fenced_leader_epoch
    return ErrorCode.unknown_leader_epoch


@dataclass(frozen=True, slots=True)
class Leaders:
    """The partitions this broker leads, as the metadata view and the local replicas agree."""

    metadata: MetadataView
    replicas: ReplicaManager

    def led(
        self, topic: str, index: int, current_epoch: int = -1
    ) -> tuple[ErrorCode, Partition | None]:
        """(NONE, the replica) when this broker leads ``topic``-``index`` at the leader epoch
        the client knows (``current_epoch``), else (the error clients expect, None)."""
        error, partition = led_partition(self.metadata, self.replicas, topic, index)
        if partition is None:
            return error, None
        error = epoch_error(partition, current_epoch)
        return error, (partition if error is ErrorCode.none else None)


def partition_leader_handler(
    *,
    topic_result: str,
    partition_result: str,
    operation: AclOperation,
    answer: Callable[[Leaders, str, Any, Any], Mapping[str, Any]],
    denied: Mapping[str, Any],
) -> Callable[..., Awaitable[Any]]:
    """The handler of an API that each partition's leader answers on its own (ListOffsets,
    DeleteRecords): per requested topic, ``denied`` for every partition without ``operation``
    on the topic, else ``answer(leaders, topic, partition, request body)`` per partition, as
    the response's ``topic_result`` and ``partition_result`` entries."""

    async def handle(
        ctx: ConnectionContext, request: Request, *, leaders: Leaders, access: Access
    ) -> Any:
        types = types_of(request)
        topics = per_partition(
            request.body.topics,
            topic_cls=getattr(types, topic_result),
            partition_cls=getattr(types, partition_result),
            allowed=lambda name: access.on_topic(ctx, operation, name),
            answer=lambda name, p: answer(leaders, name, p, request.body),
            denied=denied,
        )
        return respond(request, topics=topics)

    return handle

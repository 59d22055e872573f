"""Reads for topics, partitions, replicas and reassignments: the metadata image in Redis.

The image is the cluster's source of truth (the controller writes it before answering an
admin request), so a topic created through the proxy is visible to the next read at once.
Offsets are asked of the partition's leader (ListOffsets), so they are exact right after a
produce.
"""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.cluster import gateway
from controlplane.errors import KafkaUnavailable, NotFound
from controlplane.rest_v3 import parse_int
from weir.metadata.image import ClusterImage, PartitionImage, TopicImage
from weir.topic_names import INTERNAL_TOPICS

__all__ = [
    "PartitionOffsets",
    "partition_at",
    "partition_get",
    "partition_list",
    "partition_number",
    "partition_offset_at",
    "partition_offsets",
    "reassignment_list",
    "replica_list_for_broker",
    "topic_get",
    "topic_is_internal",
    "topic_list",
]


def _image(image: ClusterImage | None) -> ClusterImage:
    return image or gateway().image()


def topic_is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def topic_list(*, image: ClusterImage | None = None) -> list[TopicImage]:
    """Every topic, by name."""
    image = _image(image)
    return [image.topics[name] for name in sorted(image.topics)]


def topic_get(*, name: str, image: ClusterImage | None = None, v2: bool = False) -> TopicImage:
    """One topic, or 404 (error code 40401 for v2) naming it."""
    topic = _image(image).topics.get(name)
    if topic is None:
        raise NotFound(f"topic {name!r} not found", error_code=40401 if v2 else None)
    return topic


def partition_list(*, topic: TopicImage) -> list[PartitionImage]:
    return [topic.partitions[i] for i in sorted(topic.partitions)]


def partition_get(*, topic: TopicImage, partition: int, v2: bool = False) -> PartitionImage:
    """One partition, or 404 (40402 for v2) naming the topic's partition count."""
    found = topic.partitions.get(partition)
    if found is None:
        raise NotFound(
            f"partition {partition} of topic {topic.name!r} not found "
            f"(the topic has {len(topic.partitions)} partitions)",
            error_code=40402 if v2 else None,
        )
    return found


def partition_number(*, topic_name: str, text: str, v2: bool = False) -> int:
    """The partition number a URL path segment gives, else 404 (40402 for v2) naming the topic."""
    what = f"partition of topic {topic_name!r}"
    return parse_int(text, what=what, error_code=40402 if v2 else None)


def partition_at(*, topic_name: str, partition: str, v2: bool = False) -> PartitionImage:
    """The partition a URL path names; 404 for the topic first (40401 for v2), then for the
    partition (40402)."""
    topic = topic_get(name=topic_name, v2=v2)
    index = partition_number(topic_name=topic_name, text=partition, v2=v2)
    return partition_get(topic=topic, partition=index, v2=v2)


def replica_list_for_broker(
    *, broker_id: int, image: ClusterImage | None = None
) -> list[tuple[str, PartitionImage]]:
    """(topic, partition) of every replica ``broker_id`` hosts, by topic and partition."""
    image = _image(image)
    found = []
    for name in sorted(image.topics):
        for p in partition_list(topic=image.topics[name]):
            if broker_id in p.replicas:
                found.append((name, p))
    return found


def reassignment_list(
    *, topic: str | None = None, image: ClusterImage | None = None
) -> list[tuple[str, PartitionImage]]:
    """Partitions with a reassignment under way (adding or removing replicas)."""
    image = _image(image)
    names = [topic] if topic is not None else sorted(image.topics)
    found = []
    for name in names:
        for p in partition_list(topic=image.topics[name]):
            if p.adding_replicas or p.removing_replicas:
                found.append((name, p))
    return found


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    beginning_offset: int
    end_offset: int


def partition_offset_at(*, topic: str, partition: int, timestamp: int) -> int:
    """One ListOffsets answer from the partition's leader: ``timestamp`` -2 is the log start
    offset, -1 the high watermark, any other the first offset whose record's timestamp is at
    or after it (-1 when there is none)."""
    from kio.schema.list_offsets.v7.request import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )
    from kio.static.primitive import i8, i32, i64

    image = gateway().image()
    found = image.topics.get(topic)
    state = found.partitions.get(partition) if found is not None else None
    if state is None or state.leader < 0:
        raise KafkaUnavailable(f"{topic}-{partition} has no leader right now; retry shortly")
    request = ListOffsetsRequest(
        replica_id=i32(-1),
        isolation_level=i8(0),
        topics=(
            ListOffsetsTopic(
                name=topic,
                partitions=(
                    ListOffsetsPartition(partition_index=i32(partition), timestamp=i64(timestamp)),
                ),
            ),
        ),
    )
    response = gateway().request_broker(state.leader, request, timeout=10)
    (answer,) = response.topics[0].partitions
    if answer.error_code != 0:
        raise KafkaUnavailable(
            f"offsets of {topic}-{partition}: Kafka error {int(answer.error_code)}; retry"
        )
    return int(answer.offset)


def partition_offsets(*, topic: str, partition: int) -> PartitionOffsets:
    """Log start offset and high watermark (what a consumer can read) of one partition.

    Asked of the partition's leader with ListOffsets (earliest, latest) so the answer is exact
    right after a produce; the published partition state can be up to a second behind.
    """
    beginning, end = (
        partition_offset_at(topic=topic, partition=partition, timestamp=t) for t in (-2, -1)
    )
    return PartitionOffsets(beginning_offset=beginning, end_offset=end)

"""Reads behind the cluster and broker resources: the metadata image in Redis."""

from __future__ import annotations

from controlplane.cluster import gateway
from controlplane.errors import NotFound
from weir.metadata.image import BrokerImage, ClusterImage

__all__ = ["broker_get", "broker_list", "cluster_image"]


def cluster_image() -> ClusterImage:
    return gateway().image()


def broker_list(*, image: ClusterImage | None = None) -> list[BrokerImage]:
    """Live brokers, by id."""
    image = image or cluster_image()
    return [image.brokers[i] for i in sorted(image.brokers)]


def broker_get(*, broker_id: int, image: ClusterImage | None = None) -> BrokerImage:
    """A live broker, or 404 naming it."""
    image = image or cluster_image()
    broker = image.brokers.get(broker_id)
    if broker is None:
        known = ", ".join(str(i) for i in sorted(image.brokers)) or "none"
        raise NotFound(f"broker {broker_id} not found (live brokers: {known})")
    return broker

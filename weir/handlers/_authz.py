"""Authorization as handlers see it: ``Access`` answers "may this connection do that?".

Without an authorizer (``authorizer.class.name`` empty) everything is allowed. It also fills
the ``authorized_operations`` fields of Metadata, DescribeGroups and DescribeCluster: Kafka
fills them only when the request asks (``include_*_authorized_operations``); without an
authorizer every supported operation is reported, as Kafka's ``AuthHelper`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.security.acl import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_NAME,
    AclOperation,
    Authorizer,
    ResourceType,
    authorized_operations,
)
from weir.server import ConnectionContext

__all__ = ["Access"]


@dataclass(frozen=True, slots=True)
class Access:
    """The broker's authorizer (or none), asked per connection."""

    authorizer: Authorizer | None = None

    @property
    def enabled(self) -> bool:
        """Is an authorizer configured? (Some checks are skipped entirely without one.)"""
        return self.authorizer is not None

    def authorize(
        self, ctx: ConnectionContext, op: AclOperation, rtype: ResourceType, name: str
    ) -> bool:
        """May the connection's principal do ``op`` on the resource?"""
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_connection(ctx, op, rtype, name)

    def on_cluster(self, ctx: ConnectionContext, op: AclOperation) -> bool:
        """May the connection's principal do ``op`` on the cluster resource?"""
        return self.authorize(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)

    def on_topic(self, ctx: ConnectionContext, op: AclOperation, name: str) -> bool:
        """May the connection's principal do ``op`` on the topic ``name``?"""
        return self.authorize(ctx, op, ResourceType.TOPIC, name)

    def on_group(self, ctx: ConnectionContext, op: AclOperation, group_id: str) -> bool:
        """May the connection's principal do ``op`` on the consumer group ``group_id``?"""
        return self.authorize(ctx, op, ResourceType.GROUP, group_id)

    def may_create_topic(self, ctx: ConnectionContext, name: str) -> bool:
        """Creating a topic needs Create on the cluster or on the topic (Kafka's rule)."""
        return self.on_cluster(ctx, AclOperation.CREATE) or self.on_topic(
            ctx, AclOperation.CREATE, name
        )

    def operations_field(
        self, ctx: ConnectionContext, requested: bool, rtype: ResourceType, name: str
    ) -> int:
        """The bit field for ``name`` if ``requested``, else Kafka's "omitted" marker."""
        if not requested:
            return AUTHORIZED_OPERATIONS_OMITTED
        return authorized_operations(lambda op: self.authorize(ctx, op, rtype, name), rtype)

"""The ``authorized_operations`` fields of Metadata, DescribeGroups and DescribeCluster.

Kafka fills them only when the request asks (``include_*_authorized_operations``); without
an authorizer every supported operation is reported, as Kafka's ``AuthHelper`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from weir.security.acl import AUTHORIZED_OPERATIONS_OMITTED, ResourceType, authorized_operations
from weir.server import ConnectionContext

if TYPE_CHECKING:
    from weir.broker import Broker

__all__ = ["operations_field"]


def operations_field(
    broker: Broker, ctx: ConnectionContext, requested: bool, rtype: ResourceType, name: str
) -> int:
    """The bit field for ``name`` if ``requested``, else Kafka's "omitted" marker."""
    if not requested:
        return AUTHORIZED_OPERATIONS_OMITTED
    return authorized_operations(lambda op: broker.authorize(ctx, op, rtype, name), rtype)

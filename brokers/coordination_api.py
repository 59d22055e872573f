"""``GET /api/coordination/``: the coordination store (viewers read).

For a ``redis+sentinel://`` ``WEIR_REDIS_URL``: ``kind: "sentinel"``, the ``service_name``,
the ``primary`` (address, run id, replication offset, AOF and fsync policy,
``min-replicas-to-write``, used memory), the ``replicas`` (address, ``link_status`` up/down,
``replication_offset``, ``lag_bytes`` behind the primary), ``sentinels_total``,
``sentinels_reachable``, ``quorum``; for a plain URL ``kind: "single"`` and the one server as
``primary``. ``failovers`` (newest first) and ``last_failover`` are Weir's own record
(``{at_ms, from_address, to_address}``): Sentinel keeps none. ``error`` says what could not be
reached. The work is :mod:`brokers.coordination`'s.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.coordination import coordination_view
from controlplane.roles import VIEWER

__all__ = ["CoordinationView"]


class CoordinationView(APIView):
    """The coordination store's primary, replicas, sentinels and failovers."""

    roles = {"GET": VIEWER}

    @extend_schema(
        operation_id="describeCoordination", responses=OpenApiTypes.OBJECT, tags=["Cluster"]
    )
    def get(self, request: Request) -> Response:
        return Response(coordination_view())

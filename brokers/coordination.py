"""The coordination store (Redis, or Redis under Sentinel) as the dashboard and
``GET /api/coordination/`` show it: a thin selector over
:func:`weir.metadata.deployment.describe_coordination` for this control plane's
``WEIR_REDIS_URL`` and ``WEIR_CLUSTER_ID``. The monitor calls it every few seconds
(``brokers.periodic``) so a failover is recorded soon after it happens, page open or not."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from weir.metadata.deployment import describe_coordination

__all__ = ["coordination_view"]


def coordination_view() -> dict[str, Any]:
    """The deployment as JSON: kind, primary, replicas, sentinels, quorum, failovers."""
    state = describe_coordination(settings.WEIR_REDIS_URL, cluster_id=settings.WEIR_CLUSTER_ID)
    return state.to_dict()

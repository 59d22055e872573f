"""The coordination page (``/coordination/``): the Redis deployment that holds the metadata.

For Redis under Sentinel: the primary, every replica with its link status, replication
offset and lag in bytes behind the primary, how many sentinels answer out of those in
``WEIR_REDIS_URL`` and their quorum, and the failovers Weir recorded (Sentinel keeps no
history; see :mod:`weir.metadata.deployment`). For one plain Redis: its address, role, AOF
and fsync policy, ``min-replicas-to-write`` and used memory. The body is
:func:`brokers.coordination.coordination_view`, the same as ``GET /api/coordination/``. It is
read when the page loads (the deployment changes seldom; reload to see a failover).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.urls import URLPattern, path

from brokers.coordination import coordination_view
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


class CoordinationPage(Page):
    template_name = "frontend/coordination/index.html"
    title = "Coordination store"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        state = coordination_view()
        for failover in [*state["failovers"], state["last_failover"]]:
            if failover is not None:
                failover["at"] = datetime.fromtimestamp(failover["at_ms"] / 1000, tz=UTC)
        return {"state": state}


urlpatterns: list[URLPattern] = [
    path("coordination/", CoordinationPage.as_view(), name="dashboard-coordination"),
]

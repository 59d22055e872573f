"""The reassignments page (``/reassignments/``): follow, start and cancel replica moves.

Three parts. *Reassignments*: every partition being moved (or moved within the hour) with a
progress bar of bytes copied, live from ``/ws/ui/reassignments/``; operators cancel one or
all. *New reassignment* (operators): pick topics and target brokers, generate a proposal
(``POST /api/reassignments/generate/``), review it as a diff of replica sets, set a throttle
and execute it (``POST /api/reassignments/``). *Cluster rebalance*: the planner's proposal
for the whole cluster (or some topics, or without some brokers), executed by the monitor's
rebalance executor; its plan's progress is on the same socket. First paint uses the same
selectors as the API and the socket.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from brokers.ops.selectors import topic_placement
from controlplane.cluster import gateway
from frontend.live.reassignments import progress_view
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


class ReassignmentsPage(Page):
    template_name = "frontend/reassignments/index.html"
    assets = ("reassignments.css", "reassignments.js")
    title = "Reassignments and rebalance"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        image = gateway().image()
        brokers = [
            {
                "id": b,
                "host": info.host,
                "port": info.port,
                "rack": info.rack,
                "alive": b in image.live_broker_ids,
            }
            for b, info in sorted(image.registrations.items())
        ]
        return {
            "live": progress_view(),
            "brokers": brokers,
            "topics": topic_placement(image=image),
        }


urlpatterns: list[URLPattern] = [
    path("reassignments/", ReassignmentsPage.as_view(), name="dashboard-reassignments"),
]

"""Consumer group pages: the list (``/groups/``) and one group (``/groups/<group>/``).

Both render from the lag monitor's snapshots in Redis (:mod:`groups.lag`), so a page costs
one Redis read whatever the number of groups, and then follow the monitor's pushes: the list
from ``/ws/cluster/`` (status and total lag of every group each tick), a group from
``/ws/groups/<group>/`` (its lag per partition each tick) plus
``/ws/ui/groups/<group>/members/`` (:mod:`frontend.live.groups`: members and assignments,
which only the coordinator knows). The detail page adds what history the database holds — the
lag chart's first points and the Burrow status timeline — and, for operators, the reset
offsets wizard, the rebalance button and the alert webhooks editor, all calling ``/api/``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.urls import URLPattern, path
from django.utils import timezone

from controlplane.errors import ApiError, NotFound
from frontend.pages.base import Page
from groups.lag import group_lag, group_list, lag_chart, status_timeline
from groups.ops_api import WebhookSerializer
from groups.selectors import consumer_group_members, webhook_list
from groups.services import RESET_STRATEGIES

__all__ = ["urlpatterns"]

# How far back the lag chart and the status timeline start when the page opens.
CHART_MINUTES = 30
TIMELINE_HOURS = 24


class GroupListPage(Page):
    template_name = "frontend/groups/list.html"
    assets = ("groups.css", "groups.js")
    title = "Consumer groups"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        return {"groups": group_list()}


class GroupDetailPage(Page):
    template_name = "frontend/groups/detail.html"
    assets = ("groups.css", "group.js")
    title = "Consumer group"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        group: str = kwargs["group"]
        lag = group_lag(group=group)
        if lag is None:
            raise NotFound(f"consumer group {group!r} does not exist")
        try:
            members: dict[str, Any] = consumer_group_members(group_id=group)
        except ApiError as exc:
            # The lag snapshot is enough to show the page; the members socket retries.
            members = {"type": "error", "message": exc.message}
        now = timezone.now()
        return dict(
            title=f"Consumer group {group}",
            group=group,
            lag=lag,
            page_data={
                "group": group,
                "members": members,
                "chart": lag_chart(group=group, since=now - timedelta(minutes=CHART_MINUTES)),
                "timeline": status_timeline(
                    group=group, since=now - timedelta(hours=TIMELINE_HOURS)
                ),
                "webhooks": WebhookSerializer(webhook_list(group=group), many=True).data,
                "strategies": list(RESET_STRATEGIES),
            },
        )


urlpatterns: list[URLPattern] = [
    path("groups/", GroupListPage.as_view(), name="dashboard-groups"),
    path("groups/<str:group>/", GroupDetailPage.as_view(), name="dashboard-group"),
]

"""Live sockets of the consumer group pages.

The monitor's ``/ws/groups/<group>/`` carries a group's lag each tick but only the number of
its members; who they are and what they own is known by the group's coordinator alone.
``/ws/ui/groups/<group>/members/`` asks it (one DescribeGroups) every two seconds while a
group page is open and sends the members only when they changed — after a join, a leave or a
rebalance — so the members table and the partition owners follow without the browser polling.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, re_path

from frontend.live.base import WatchConsumer
from groups.selectors import consumer_group_members

__all__ = ["GroupMembersConsumer", "websocket_urlpatterns"]


class GroupMembersConsumer(WatchConsumer):
    """The group's members and assignments, sent when they change."""

    # A Kafka request, not a Redis read: slower than the lag ticks, and membership changes
    # take seconds anyway (a join waits for the rebalance).
    interval = 2.0

    def snapshot(self) -> dict[str, Any]:
        return consumer_group_members(group_id=self.kwargs["group"])


websocket_urlpatterns: list[URLPattern] = [
    re_path(
        r"^ws/ui/groups/(?P<group>[^/]+)/members/$",
        GroupMembersConsumer.as_asgi(),
        name="ws-ui-group-members",
    ),
]

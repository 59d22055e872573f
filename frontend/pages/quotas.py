"""The quotas page (``/quotas/``): Kafka's client quotas, their limits and live usage.

Two tables. *Quota entities*: every configured entity (``users/alice``,
``clients/<default>``...) with its limits, and — where an entity's clients are counted under
its own name — the rate and throttle each broker measured for them. *Live usage*: every
row the brokers publish (per broker, quota type and metric tags), which is where the clients
of a default entity show up, each client id or user with its own budget. Both are filtered
by one search box and paged in the browser, as the topic list is.

First paint is :func:`brokers.quotas.client_quota_view` (the body of ``GET /api/quotas/``);
then ``/ws/ui/quotas/`` pushes the same message whenever a limit or a figure changes.
Operators get a form that sets, replaces and removes quotas with ``/api/quotas/``; viewers
get neither the form nor the remove buttons (and the API would refuse them anyway).
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from brokers.quotas import DEFAULT, QUOTA_KEYS
from frontend.live.quotas import quota_message
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


class QuotasPage(Page):
    template_name = "frontend/quotas/index.html"
    assets = ("topics.css", "quotas.js")
    title = "Client quotas"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        return {"live": quota_message(), "keys": QUOTA_KEYS, "default": DEFAULT}


urlpatterns: list[URLPattern] = [
    path("quotas/", QuotasPage.as_view(), name="dashboard-quotas"),
]

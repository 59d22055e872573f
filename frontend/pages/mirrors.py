"""The mirrors page (``/mirrors/``): cross-cluster flows, their lag, and the failover button.

*Flows*: every flow of ``WEIR_MIRROR_PROPERTIES`` and every flow a live ``mirror-maker``
process publishes, with its state, processes, lag, throughput, last checkpoint and heartbeat
age, errors and the target groups offset sync skipped as active. *Charts*: total lag (records)
and throughput (records/s) per flow, growing from each pushed message. *Partitions*: the
per-partition lag of every flow. First paint is :func:`frontend.live.mirrors.mirror_message`
(the body of ``GET /api/mirrors/``); then ``/ws/ui/mirrors/`` pushes it when it changes.

Operators get the failover form: pick a flow and a group, *Dry run* shows the translated
offsets (``POST /api/mirrors/<source>/<target>/failover/`` with ``dry_run``), *Commit* applies
them on the target after a confirmation. Viewers get neither (the API would refuse anyway).
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from frontend.live.mirrors import mirror_message
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


class MirrorsPage(Page):
    template_name = "frontend/mirrors/index.html"
    assets = ("topics.css", "analytics.css", "mirrors.css", "mirrors.js")
    title = "Mirrors"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        return {"live": mirror_message()}


urlpatterns: list[URLPattern] = [
    path("mirrors/", MirrorsPage.as_view(), name="dashboard-mirrors"),
]

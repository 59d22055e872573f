"""The dead letter pages: the DLQ topics (``/dlq/``) and one DLQ's records (``/dlq/<topic>/``).

*List*: every topic :func:`dlq.selectors.dlq_list` finds — named by ``WEIR_DLQ_TOPIC_PATTERN``
or carrying Kafka Connect's / Spring's dead-letter headers — with its partitions, records and
how it was found, and the pattern in force. Rendered by the server: the list is the body of
``GET /api/dlq/``, and a topic that starts carrying error headers is found on a later load.

*Topic*: the page checks the topic is a DLQ (:func:`dlq.selectors.dlq_get`, a 404 page
otherwise) and hands the browser its partitions; ``dlq.js`` reads the records a page at a time
from ``GET /api/dlq/<t>/records/`` with the partition and filters chosen, and draws each one's
error context (original topic, partition and offset, exception, stack trace, attempts) beside
its key and value. Operators also get the replay form (selected records, an offset range or
everything matching the filters; a dry run first, then a job whose progress the page follows
on ``/ws/ui/jobs/?kind=dlq-replay``, the jobs page's socket) and the purge form (DeleteRecords
before an offset, after a typed confirmation). Viewers get neither; the API refuses them anyway.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.urls import URLPattern, path

from dlq import replay, selectors
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


class DlqListPage(Page):
    template_name = "frontend/dlq/list.html"
    assets = ("topics.css", "dlq.css")
    title = "Dead letters"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        found = selectors.dlq_list()
        return {
            "topics": [t.as_dict() for t in found],
            "total_records": sum(t.records for t in found),
            "pattern": selectors.topic_pattern().pattern,
        }


class DlqTopicPage(Page):
    template_name = "frontend/dlq/detail.html"
    assets = ("topics.css", "jobs.css", "dlq.css", "records.js", "dlq.js")
    title = "Dead letters"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        topic = selectors.dlq_get(name=kwargs["topic"])
        partitions = sorted(topic.partitions)
        chosen = self.request.GET.get("partition", "")
        page = {
            "topic": topic.name,
            "partitions": partitions,
            "partition": int(chosen) if chosen.isdigit() and int(chosen) in partitions else 0,
            "default_limit": selectors.DEFAULT_LIMIT,
            "max_limit": selectors.MAX_LIMIT,
            "max_selected": replay.MAX_SELECTED,
        }
        return {
            "title": topic.name,
            "topic": topic.name,
            "pattern": settings.WEIR_DLQ_TOPIC_PATTERN,
            "page": page,
        }


urlpatterns: list[URLPattern] = [
    path("dlq/", DlqListPage.as_view(), name="dashboard-dlq"),
    path("dlq/<str:topic>/", DlqTopicPage.as_view(), name="dashboard-dlq-topic"),
]

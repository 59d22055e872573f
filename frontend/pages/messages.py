"""Dashboard page: a topic's messages (``/topics/<name>/messages/``).

The page itself only needs the topic's partitions (the metadata image and the published
partition states, from Redis); the records come from ``/api/topics/<t>/partitions/<p>/
messages/`` when the user asks (load, page, search chunks), and new ones over the tail socket
(``frontend.live.messages``) while the live toggle is on. Operators also get the produce form,
which posts to the REST proxy's ``/kafka/v3/.../records``.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from frontend.pages.topics import TopicTabPage
from topics import messages

__all__ = ["urlpatterns"]


class TopicMessagesPage(TopicTabPage):
    template_name = "frontend/topics/messages.html"
    assets = ("topics.css", "records.js", "messages.js")
    title = "Messages"
    tab = "messages"

    def tab_context(self, topic: dict[str, Any]) -> dict[str, Any]:
        # The topic's partition rows feed the picker, which shows each one's offsets.
        chosen = self.request.GET.get("partition", "")
        page = {
            "topic": topic["name"],
            "partitions": topic["partitions"],
            "partition": int(chosen) if chosen.isdigit() else 0,
            "default_limit": messages.DEFAULT_LIMIT,
            "max_limit": messages.MAX_LIMIT,
            "max_search_range": messages.MAX_SEARCH_RANGE,
            "search_chunk": messages.DEFAULT_CHUNK,
        }
        return {"page": page}


urlpatterns: list[URLPattern] = [
    path(
        "topics/<str:name>/messages/", TopicMessagesPage.as_view(), name="dashboard-topic-messages"
    ),
]

"""Live socket for messages: tail one partition (``/ws/ui/topics/<t>/partitions/<p>/tail/``).

Each connection owns a :class:`topics.messages.PartitionTail` — a consumer assigned to the
partition at its high watermark when the socket opened. librdkafka fetches in its own thread
(long-polling the leader), so every ``interval`` the socket's loop only drains what was
already fetched (``poll`` without waiting) and sends the new records with the next offset to
read. Nothing is sent while nothing arrives; the browser never polls. The consumer is closed
when the socket closes.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.urls import URLPattern, path

from controlplane.errors import ApiError
from frontend.live.base import WatchConsumer
from topics.messages import PartitionTail

__all__ = ["PartitionTailConsumer", "websocket_urlpatterns"]

MAX_RECORDS_PER_MESSAGE = 200


class PartitionTailConsumer(WatchConsumer):
    """``{"type": "tail", "position", "records": [...new ones]}`` as records arrive."""

    interval = 0.25
    _tail: PartitionTail | None = None
    _failed: ApiError | None = None
    _closed = False

    def snapshot(self) -> dict[str, Any]:
        topic, partition = self.kwargs["name"], self.kwargs["partition"]
        if self._failed is not None:  # an unknown topic stays unknown: say so, do not retry
            raise self._failed
        if self._tail is None:
            try:
                self._tail = PartitionTail(topic=topic, partition=partition)
            except ApiError as exc:
                self._failed = exc
                raise
            if self._closed:  # the socket closed while the consumer was being made
                self._tail.close()
            records: list[dict[str, Any]] = []
        else:
            records = self._tail.poll(max_records=MAX_RECORDS_PER_MESSAGE, timeout=0)
        return {
            "type": "tail",
            "topic": topic,
            "partition": partition,
            "position": self._tail.position,
            "records": records,
        }

    async def disconnect(self, code: int) -> None:
        self._closed = True
        await super().disconnect(code)
        if self._tail is not None:
            await sync_to_async(self._tail.close, thread_sensitive=False)()


websocket_urlpatterns: list[URLPattern] = [
    path(
        "ws/ui/topics/<str:name>/partitions/<int:partition>/tail/",
        PartitionTailConsumer.as_asgi(),
    ),
]

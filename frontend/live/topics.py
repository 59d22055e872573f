"""Live sockets for topics: the list with rates, and one topic's partition table.

``/ws/ui/topics/`` sends every topic's summary row (``frontend.pages.topics.topic_rows``)
with two rates computed here, server-side: records/s from the growth of the summed high
watermarks and bytes/s from the growth of the summed partition sizes. Leaders publish their
partition states about once a second, so a rate taken between two successive reads would
swing between 0 and twice the truth; each connection keeps a few seconds of readings
(:class:`RateWindow`) and divides over that window instead.

``/ws/ui/topics/<name>/`` sends the topic's partition table (leader, replicas, ISR, log start,
LEO, HW, size) and config overrides; once the topic is deleted it sends an error message.
Both read Redis only (the image and the partition states), once per interval per open page.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from django.urls import URLPattern, path

from controlplane.cluster import gateway
from frontend.live.base import WatchConsumer
from frontend.pages.topics import topic_rows, topic_view

__all__ = ["RateWindow", "TopicDetailConsumer", "TopicListConsumer", "websocket_urlpatterns"]

# (high watermarks, bytes, partitions known) per topic at one reading.
Totals = dict[str, tuple[int, int, int]]


class RateWindow:
    """Per-topic rates from cumulative readings spread over ``window_s`` seconds."""

    def __init__(self, *, window_s: float = 5.0, min_span_s: float = 0.9) -> None:
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._readings: deque[tuple[float, Totals]] = deque()

    def add(self, *, at: float, totals: Totals) -> dict[str, tuple[float | None, float | None]]:
        """Record a reading; (records/s, bytes/s) per topic, None until there is a span."""
        self._readings.append((at, totals))
        # Keep the newest reading at least ``window_s`` old as the base of the rate.
        while len(self._readings) > 2 and self._readings[1][0] <= at - self.window_s:
            self._readings.popleft()
        rates: dict[str, tuple[float | None, float | None]] = {}
        for name, (watermarks, size, known) in totals.items():
            rates[name] = (None, None)
            # The oldest reading that counted the same partitions: a partition whose leader
            # stopped publishing (or a new one) would make the sums jump.
            for base_at, base in self._readings:
                span = at - base_at
                if span < self.min_span_s:
                    break
                before = base.get(name)
                if before is None or before[2] != known:
                    continue
                # Retention and deletes shrink logs: growth is never negative.
                records = max(0, watermarks - before[0]) / span
                size_rate = max(0, size - before[1]) / span
                rates[name] = (round(records, 1), round(size_rate, 1))
                break
        return rates


class TopicListConsumer(WatchConsumer):
    """Every topic's row plus ``records_per_s`` and ``bytes_per_s``."""

    interval = 1.0
    _rates: RateWindow | None = None

    def snapshot(self) -> dict[str, Any]:
        if self._rates is None:  # one window per connection
            self._rates = RateWindow()
        image = gateway().image()
        states, _ = gateway().partition_states()
        rows = topic_rows(image=image, states=states)
        totals = {
            r["name"]: (r["high_watermarks"], r["size"], r["known"]) for r in rows if r["known"]
        }
        rates = self._rates.add(at=time.monotonic(), totals=totals)
        for row in rows:
            row["records_per_s"], row["bytes_per_s"] = rates.get(row["name"], (None, None))
            # Inputs of the rates only: 1,000 topics' worth of them is not worth sending.
            del row["high_watermarks"], row["known"]
        return {"type": "topics", "topics": rows, "brokers": len(image.brokers)}


class TopicDetailConsumer(WatchConsumer):
    """One topic's partition table and overrides."""

    interval = 1.0

    def snapshot(self) -> dict[str, Any]:
        return topic_view(name=self.kwargs["name"])


websocket_urlpatterns: list[URLPattern] = [
    path("ws/ui/topics/", TopicListConsumer.as_asgi()),
    path("ws/ui/topics/<str:name>/", TopicDetailConsumer.as_asgi()),
]

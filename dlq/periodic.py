"""Periodic work of the dlq app, run by ``manage.py monitor``.

* header detection (every 30 s, up to 5 s of reading): looks at the newest record of the
  partitions that changed since the last look and remembers which topics carry dead-letter
  headers (:func:`dlq.selectors.detect_header_topics`), so the list API, which looks only
  briefly, finds them already known on a large cluster.
"""

from __future__ import annotations

from controlplane.periodic import every
from dlq.selectors import detect_header_topics

__all__ = ["detect_dlq_topics"]


@every(30.0, name="dlq.detect_header_topics")
def detect_dlq_topics() -> None:
    detect_header_topics(budget_s=5.0)

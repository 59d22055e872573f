"""Dashboard pages: the topic list (``/topics/``) and a topic's detail (``/topics/<name>/``).

Both read the metadata image and the leaders' published partition states from Redis — two
reads for any number of topics — and hand the rows to the page as JSON; the browser renders
and filters the table, so 1,000 topics cost one response and no per-topic request. The
``/ws/ui/topics/`` and ``/ws/ui/topics/<name>/`` sockets (``frontend.live.topics``) push the
same rows, with per-topic rates, as they change.

Only the detail page asks Kafka something: the topic's configs (one DescribeConfigs to the
controller). Mutations are the REST proxy's: create and delete (admins), add partitions and
configs (operators).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import URLPattern, path

from brokers.rest.configs import config_describe
from controlplane.cluster import gateway
from controlplane.errors import ApiError
from frontend.pages.base import Page
from topics import selectors
from topics.health import health_counts, partition_health
from weir.metadata.image import ClusterImage, TopicImage
from weir.metadata.partition_state import PartitionStatus

__all__ = ["TopicTabPage", "partition_rows", "topic_rows", "urlpatterns"]

States = Mapping[tuple[str, int], PartitionStatus]


def _replication_factor(topic: TopicImage) -> int:
    first = topic.partitions.get(0)
    return len(first.replicas) if first is not None else 0


def topic_rows(*, image: ClusterImage, states: States) -> list[dict[str, Any]]:
    """One summary per topic, by name: partitions, replication, health, size and records.

    ``size``/``records``/``high_watermarks`` are sums over the partitions whose leader
    published a fresh state (``known`` of them); the live socket derives rates from
    successive ``high_watermarks`` and ``size`` values.
    """
    rows = []
    live = image.live_broker_ids
    for topic in selectors.topic_list(image=image):
        size = records = watermarks = known = 0
        health = health_counts(topic.partitions.values(), live=live)
        for p in topic.partitions.values():
            state = states.get((topic.name, p.partition))
            if state is None:
                continue
            known += 1
            size += state.size_bytes
            watermarks += state.high_watermark
            records += max(0, state.high_watermark - state.log_start_offset)
        rows.append(
            {
                "name": topic.name,
                "internal": selectors.topic_is_internal(topic.name),
                "partitions": len(topic.partitions),
                "replication_factor": _replication_factor(topic),
                "under_replicated": health.under_replicated,
                "offline": health.offline,
                "size": size if known else None,
                "records": records if known else None,
                "high_watermarks": watermarks if known else None,
                "known": known,
            }
        )
    return rows


def partition_rows(*, topic: TopicImage, image: ClusterImage, states: States) -> list[dict]:
    """The partition table of one topic: placement from the image, offsets from the leader."""
    live = image.live_broker_ids
    rows = []
    for p in selectors.partition_list(topic=topic):
        state = states.get((topic.name, p.partition))
        health = partition_health(p, live=live)
        rows.append(
            {
                "partition": p.partition,
                "leader": p.leader if p.leader >= 0 else None,
                "preferred_leader": p.replicas[0] if p.replicas else None,
                "replicas": list(p.replicas),
                "isr": list(p.isr),
                "adding": list(p.adding_replicas),
                "removing": list(p.removing_replicas),
                "under_replicated": health.under_replicated,
                "offline": health.offline,
                "log_start_offset": state.log_start_offset if state else None,
                "log_end_offset": state.log_end_offset if state else None,
                "high_watermark": state.high_watermark if state else None,
                "size": state.size_bytes if state else None,
            }
        )
    return rows


def topic_view(*, name: str) -> dict[str, Any]:
    """The detail socket's message (and the page's first paint): 404 once the topic is gone."""
    image = gateway().image()
    topic = selectors.topic_get(name=name, image=image)
    states, _ = gateway().partition_states()
    partitions = partition_rows(topic=topic, image=image, states=states)
    return {
        "type": "topic",
        "name": name,
        "internal": selectors.topic_is_internal(name),
        "replication_factor": _replication_factor(topic),
        "partitions": partitions,
        # Sorted: the page compares successive messages' overrides to notice a change.
        "overrides": dict(sorted(image.topic_config(name).items())),
    }


class TopicListPage(Page):
    template_name = "frontend/topics/list.html"
    assets = ("topics.css", "topics.js")
    title = "Topics"

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        image = gateway().image()
        states, _ = gateway().partition_states()
        return {"topics": topic_rows(image=image, states=states), "brokers": len(image.brokers)}


class TopicTabPage(Page):
    """A tab of one topic's page (``_topic_page.html``): the header's topic view, the title
    and the active tab are set here, what the tab itself shows by :meth:`tab_context`."""

    tab = ""

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        name = kwargs["name"]
        topic = topic_view(name=name)
        return dict(title=name, tab=self.tab, topic=topic, **self.tab_context(topic))

    def tab_context(self, topic: dict[str, Any]) -> dict[str, Any]:
        """What this tab adds to the context; ``topic`` is :func:`topic_view`'s."""
        return {}


class TopicDetailPage(TopicTabPage):
    template_name = "frontend/topics/detail.html"
    assets = ("topics.css", "topic.js")
    title = "Topic"
    tab = "overview"

    def tab_context(self, topic: dict[str, Any]) -> dict[str, Any]:
        try:
            configs = [e.fields() for e in config_describe(kind="topic", name=topic["name"])]
            configs_error = ""
        except ApiError as exc:  # the table says so; the rest of the page is still useful
            configs, configs_error = [], exc.message
        return dict(configs=configs, configs_error=configs_error)


urlpatterns: list[URLPattern] = [
    path("topics/", TopicListPage.as_view(), name="dashboard-topics"),
    path("topics/<str:name>/", TopicDetailPage.as_view(), name="dashboard-topic"),
]

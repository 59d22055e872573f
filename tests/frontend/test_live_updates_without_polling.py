"""Live pages get their updates over websockets: after load, the browser sends no requests.

Each page is opened as a viewer and watched while the monitor ticks and records are produced
to the page's topic. Every HTTP request the page makes after its load event is recorded
(Playwright sees fetch/XHR and everything else); the test asserts there are none, that the
page opened the websockets it is built on, and that frames arrived on them — so the page is
live, and live without polling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, WebSocket, expect

from tests.controlplane.lag_helpers import commit, now_ms, produce_at, wait_high_watermarks
from tests.weir.cluster.conftest import Cluster

WATCH_MS = 3000

# page → the websocket paths it must open ({topic} and {group} are filled in).
LIVE_PAGES = {
    "/": ["/ws/cluster/"],
    "/brokers/": ["/ws/cluster/", "/ws/ui/brokers/"],
    "/topics/": ["/ws/ui/topics/"],
    "/topics/{topic}/": ["/ws/ui/topics/{topic}/"],
    "/groups/": ["/ws/cluster/"],
    "/groups/{group}/": ["/ws/groups/{group}/", "/ws/ui/groups/{group}/members/"],
    "/reassignments/": ["/ws/ui/reassignments/"],
    "/jobs/": ["/ws/ui/jobs/"],
    "/analytics/": ["/ws/ui/jobs/"],
    "/quotas/": ["/ws/ui/quotas/"],
    "/mirrors/": ["/ws/ui/mirrors/"],
}


@pytest.fixture(scope="module")
def watched(cp_cluster: Cluster) -> Iterator[dict[str, str]]:
    """A topic with records and a group behind on it."""
    topic, group = "no-polling-topic", "no-polling-group"
    cp_cluster.create_topic(topic)
    produce_at(cp_cluster, topic, 0, [now_ms()] * 3)
    commit(cp_cluster, group, {(topic, 0): 1})
    wait_high_watermarks({(topic, 0): 3})
    yield {"topic": topic, "group": group}


@pytest.mark.parametrize("template", list(LIVE_PAGES))
def test_live_page_receives_frames_and_sends_no_requests(
    page_as: Callable[[str], Page],
    cp_cluster: Cluster,
    watched: dict[str, str],
    template: str,
) -> None:
    page = page_as("viewer")
    frames: dict[str, int] = {}

    def on_socket(socket: WebSocket) -> None:
        path = "/" + socket.url.split("/", 3)[3].split("?")[0]
        frames.setdefault(path, 0)

        def count(_payload: object) -> None:
            frames[path] += 1

        socket.on("framereceived", count)

    page.on("websocket", on_socket)
    page.goto(template.format(**watched), wait_until="load")
    expect(page.locator(".live-dot.on")).to_have_count(1)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(f"{request.method} {request.url}"))
    produce_at(cp_cluster, watched["topic"], 0, [now_ms()] * 2)
    page.wait_for_timeout(WATCH_MS)
    expected = [path.format(**watched) for path in LIVE_PAGES[template]]
    for path in expected:
        assert frames.get(path, 0) > 0, f"no frames on {path}: {frames}"
    assert requests == [], f"the page polled: {requests}"

"""Live pages get their updates over websockets: after load, the browser sends no requests.

Each page is opened as a viewer and watched for a few monitor ticks. Every HTTP request the
page makes after its load event is recorded (Playwright sees fetch/XHR and everything else);
the test asserts there are none, and that websocket frames did arrive meanwhile — so the page
is live, and live without polling.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, WebSocket, expect

from tests.brokers.cluster.conftest import Cluster

# Pages whose content is live, with the websocket path they must use.
LIVE_PAGES = {
    "/": "/ws/cluster/",
}
WATCH_MS = 3000


@pytest.mark.parametrize("path", sorted(LIVE_PAGES))
def test_live_page_receives_frames_and_sends_no_requests(
    page_as: Callable[[str], Page], cp_cluster: Cluster, path: str
) -> None:
    page = page_as("viewer")
    frames: list[str] = []
    sockets: list[str] = []

    def on_socket(socket: WebSocket) -> None:
        sockets.append(socket.url)
        socket.on("framereceived", lambda payload: frames.append(str(payload)[:40]))

    page.on("websocket", on_socket)
    page.goto(path, wait_until="load")
    expect(page.locator(".live-dot.on")).to_have_count(1)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(f"{request.method} {request.url}"))
    before = len(frames)
    page.wait_for_timeout(WATCH_MS)
    assert any(url.endswith(LIVE_PAGES[path]) for url in sockets), sockets
    assert len(frames) > before, "no live update arrived while watching"
    assert requests == [], f"the page polled: {requests}"

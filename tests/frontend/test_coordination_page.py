"""The coordination page in the browser: reached from the navigation, it shows the dashboard's
Redis (the suite's plain redis-server here) with its address and persistence, and the same
data is ``GET /api/coordination/``. The Sentinel case (replicas, sentinels, a recorded
failover) is proven on the data function against a real deployment
(tests/weir/metadata/test_deployment.py)."""

from __future__ import annotations

import base64
import json
import re
import urllib.request
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.controlplane_fixtures import PASSWORD, Dashboard


def test_a_viewer_sees_the_coordination_store_and_the_api_agrees(
    page_as: Callable[[str], Page], dashboard: Dashboard
) -> None:
    request = urllib.request.Request(dashboard.url + "/api/coordination/")
    token = base64.b64encode(f"viewer:{PASSWORD}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=10) as response:
        body = json.loads(response.read())
    assert body["kind"] == "single" and body["primary"]["role"] == "primary"
    address = body["primary"]["address"]
    assert address.endswith(":" + dashboard.env["WEIR_REDIS_URL"].rsplit(":", 1)[1].split("/")[0])

    page = page_as("viewer")
    page.goto("/")
    page.locator('nav.side a[data-nav="coordination"]').click()
    expect(page).to_have_url(re.compile(r"/coordination/$"))
    expect(page.locator("#coordination-summary h2")).to_have_text("One Redis server")
    expect(page.locator("#primary-address")).to_have_text(address)
    expect(page.locator("#primary-aof")).to_have_text("off")
    expect(page.locator("#last-failover")).to_have_text("none recorded")

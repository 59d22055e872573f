"""The overview and the sign-in: real browser, real brokers, live traffic from the monitor."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.controlplane.lag_helpers import now_ms, produce_at
from tests.frontend.conftest import Dashboard, login
from tests.weir.cluster.conftest import Cluster


def test_signing_in_leads_to_the_overview_and_a_wrong_password_does_not(
    browser, dashboard: Dashboard, shot: Callable[[Page, str], Path]
) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{dashboard.url}/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    login(page, dashboard, "viewer", "not-the-password")
    expect(page.get_by_role("alert")).to_contain_text("Wrong username or password")
    shot(page, "login")
    login(page, dashboard, "viewer")
    expect(page).to_have_url(f"{dashboard.url}/")
    expect(page.locator(".userbox .user")).to_have_text("viewer")
    context.close()


def test_overview_shows_brokers_controller_and_live_traffic(
    page_as: Callable[[str], Page],
    cp_cluster: Cluster,
    unique: Callable[[str], str],
    shot: Callable[[Page, str], Path],
) -> None:
    page = page_as("viewer")
    page.goto("/")
    expect(page.locator('[data-stat="brokers"]')).to_have_text("3 / 3")
    expect(page.locator("#brokers-table tbody tr")).to_have_count(3)
    expect(page.locator("#brokers-table .badge.controller")).to_have_count(1)
    expect(page.locator(".live-dot.on")).to_have_count(1)
    # The chart keeps the newest 600 ticks: once full it slides rather than grows, so watch
    # its newest point.
    trace = "document.getElementById('traffic-chart').data[0]"
    newest = f"{trace}.x[{trace}.x.length - 1]"
    before = page.evaluate(newest)
    topic = cp_cluster.create_topic(unique("overview"))
    produce_at(cp_cluster, topic, 0, [now_ms()] * 200, value=b"x" * 2000)
    # New points arrive and show the produced bytes without a reload.
    page.wait_for_function(
        f"{newest} !== {json.dumps(before)} && Math.max(...{trace}.y.slice(-60)) > 0"
    )
    shot(page, "overview")

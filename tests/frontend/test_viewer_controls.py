"""Every page in the browser: a viewer gets no button that changes anything, and no page
loads anything from outside Weir.

Each page's own tests check its controls by id; this one looks at every page the way a
person does — the visible buttons and their labels — as a viewer and as an admin. The admin
must see the mutating actions (so the check has something to find), the viewer none.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page

from tests.controlplane.lag_helpers import commit, now_ms, produce_at, wait_high_watermarks
from tests.controlplane_fixtures import Dashboard
from tests.frontend.schemas import avro_order, register
from tests.weir.cluster.conftest import Cluster

PAGES = (
    "/",
    "/brokers/",
    "/topics/",
    "/topics/{topic}/",
    "/topics/{topic}/messages/",
    "/groups/",
    "/groups/{group}/",
    "/reassignments/",
    "/jobs/",
    "/analytics/",
    "/quotas/",
    "/mirrors/",
    "/schemas/",
    "/schemas/{subject}/",
    "/dlq/",
    "/dlq/{dlq}/",
)
MUTATING = re.compile(
    r"\b(create|delete|produce|reset|execute|rebalance|elect|cancel|add|save|edit|propose|"
    r"generate|apply|remove|run|commit|register|replay|purge)\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def names(cp_cluster: Cluster, dashboard: Dashboard) -> Iterator[dict[str, str]]:
    suffix = uuid.uuid4().hex[:8]
    topic, group = f"roles-{suffix}", f"roles-group-{suffix}"
    subject = f"roles-{suffix}-value"
    dlq = cp_cluster.create_topic(f"{topic}.DLT")  # a dead letter queue by its name
    cp_cluster.create_topic(topic)
    produce_at(cp_cluster, topic, 0, [now_ms()] * 2)
    produce_at(cp_cluster, dlq, 0, [now_ms()])
    commit(cp_cluster, group, {(topic, 0): 1})
    wait_high_watermarks({(topic, 0): 2, (dlq, 0): 1})
    register(dashboard, subject, avro_order())
    yield {"topic": topic, "group": group, "subject": subject, "dlq": dlq}


def visible_buttons(page: Page) -> list[str]:
    controls = page.locator("main button:visible, main input[type=submit]:visible")
    return [text.strip() for text in controls.all_inner_texts()]


def test_viewer_sees_no_mutating_button_on_any_page_and_an_admin_does(
    page_as: Callable[[str], Page], names: dict[str, str]
) -> None:
    seen: dict[str, dict[str, list[str]]] = {"viewer": {}, "admin": {}}
    for role, found in seen.items():
        page = page_as(role)
        for template in PAGES:
            page.goto(template.format(**names), wait_until="networkidle")
            found[template] = [b for b in visible_buttons(page) if MUTATING.search(b)]
    assert all(not buttons for buttons in seen["viewer"].values()), seen["viewer"]
    pages_with_actions = [t for t, buttons in seen["admin"].items() if buttons]
    assert len(pages_with_actions) >= 5, seen["admin"]


def test_every_page_loads_all_its_assets_from_weir_itself(
    page_as: Callable[[str], Page], names: dict[str, str], dashboard: Dashboard
) -> None:
    """No CDN: users run Weir on closed networks, so nothing may come from elsewhere."""
    page = page_as("admin")
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    for template in PAGES:
        page.goto(template.format(**names), wait_until="networkidle")
    origin = dashboard.url + "/"
    foreign = [url for url in requested if not url.startswith(origin)]
    assert foreign == []
    assert any(url.endswith("/static/vendor/plotly.min.js") for url in requested)

"""Consumer group pages in a real browser against real brokers, daphne and the lag monitor.

Groups are made the way the lag tests make them: records produced at known offsets and
offsets committed without joining (``lag_helpers``), or a live confluent-kafka member for
what needs an active group. Lag is read back from the page's own DOM (table text and the
Plotly div's ``data``) after producing, with no reload in between; offsets are read back from
Kafka with the AdminClient, so "the dry run wrote nothing" is checked where it matters.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions
from playwright.sync_api import APIRequestContext, Browser, Page, expect

from controlplane.cluster import gateway
from tests.controlplane.lag_helpers import commit, now_ms, produce_at, wait_high_watermarks
from tests.controlplane_fixtures import basic
from tests.frontend.conftest import Dashboard
from tests.weir.cluster.conftest import Cluster

# Text of every button in the page's main area that is not part of a Plotly chart toolbar.
BUTTONS = """[...document.querySelectorAll("main button")]
    .filter((b) => !b.closest(".modebar")).map((b) => b.textContent.trim())"""
Shot = Callable[[Page, str], Path]
PageAs = Callable[[str], Page]


def committed(group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets as Kafka reports them now."""
    future = gateway().admin().list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = future[group].result(15)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def chart_max(page: Page, chart: str, trace: int | str = 0) -> str:
    """A JS expression: the highest y of a trace (by index or name) of a Plotly div."""
    pick = f"d.find((t) => t.name === {trace!r})" if isinstance(trace, str) else f"d[{trace}]"
    return (
        f"(() => {{ const d = document.getElementById('{chart}').data; const t = d && {pick};"
        " return t && t.y.length ? Math.max(...t.y) : -1; })()"
    )


def confirm_dialog(page: Page) -> None:
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    dialog.locator("button.confirm").click()


@pytest.fixture
def api(browser: Browser, dashboard: Dashboard) -> Iterator[Callable[[str], APIRequestContext]]:
    """``api("operator")`` → HTTP calls to the dashboard with that role's basic auth."""
    contexts = []

    def open_api(role: str) -> APIRequestContext:
        context = browser.new_context(
            base_url=dashboard.url, extra_http_headers={"Authorization": basic(role)}
        )
        contexts.append(context)
        return context.request

    yield open_api
    for context in contexts:
        context.close()


@pytest.fixture
def lagging(cp_cluster: Cluster, unique: Callable[[str], str]) -> dict[str, Any]:
    """A group with no members, committed at 3 of 10 on partition 0 and at 4 of 4 on 1."""
    topic, group = unique("ui-lag"), unique("ui-group")
    cp_cluster.create_topic(topic, partitions=2)
    produce_at(cp_cluster, topic, 0, [now_ms() - 30_000 + i for i in range(10)])
    produce_at(cp_cluster, topic, 1, [now_ms()] * 4)
    commit(cp_cluster, group, {(topic, 0): 3, (topic, 1): 4})
    wait_high_watermarks({(topic, 0): 10, (topic, 1): 4})
    return {"topic": topic, "group": group}


@pytest.fixture
def join(cp_cluster: Cluster) -> Iterator[Callable[[str, str], None]]:
    """``join(group, topic)``: a confluent-kafka consumer joins and owns the topic's partitions.

    Offsets are not committed (auto commit off), so the group's offsets stay what the test set.
    """
    consumers: list[Consumer] = []

    def start(group: str, topic: str) -> None:
        assigned: list[int] = []
        consumer = Consumer(
            {
                "bootstrap.servers": cp_cluster.bootstrap(),
                "group.id": group,
                "client.id": "billing-worker",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 300,
                "enable.auto.commit": False,
            }
        )
        consumers.append(consumer)
        consumer.subscribe([topic], on_assign=lambda c, parts: assigned.append(len(parts)))
        deadline = time.monotonic() + 20
        while not assigned:
            assert time.monotonic() < deadline, "the consumer was never assigned its partitions"
            consumer.poll(0.1)

    yield start
    for consumer in consumers:
        consumer.close()


def test_group_lag_rises_on_the_live_chart_and_table_without_reload(
    page_as: PageAs, cp_cluster: Cluster, unique: Callable[[str], str], shot: Shot
) -> None:
    topic, group = unique("ui-rise"), unique("ui-rise-group")
    cp_cluster.create_topic(topic, partitions=2)
    produce_at(cp_cluster, topic, 0, [now_ms()] * 5)
    commit(cp_cluster, group, {(topic, 0): 0, (topic, 1): 0})
    wait_high_watermarks({(topic, 0): 5})
    page = page_as("viewer")
    page.goto(f"/groups/{group}/")
    p0 = page.locator(f'#partitions-table tr[data-partition="{topic}-0"]')
    expect(p0.locator('[data-col="lag"]')).to_have_text("5")
    expect(page.locator('[data-stat="total_lag"]')).to_have_text("5")
    page.wait_for_function(f"{chart_max(page, 'lag-total-chart')} === 5")
    page.evaluate("window.notReloaded = true")

    produce_at(cp_cluster, topic, 0, [now_ms()] * 20)
    produce_at(cp_cluster, topic, 1, [now_ms()] * 7)
    expect(p0.locator('[data-col="lag"]')).to_have_text("25")
    expect(p0.locator('[data-col="hw"]')).to_have_text("25")
    expect(
        page.locator(f'#partitions-table tr[data-partition="{topic}-1"] [data-col="lag"]')
    ).to_have_text("7")
    expect(page.locator('[data-stat="total_lag"]')).to_have_text("32")
    # Both charts grew from the websocket: the group's total and each partition's trace.
    page.wait_for_function(f"{chart_max(page, 'lag-total-chart')} === 32")
    page.wait_for_function(f"{chart_max(page, 'lag-partitions-chart', f'{topic}-0')} === 25")
    page.wait_for_function(f"{chart_max(page, 'lag-partitions-chart', f'{topic}-1')} === 7")
    assert page.evaluate("window.notReloaded") is True
    # The lag (time) column says how old the oldest unconsumed record is.
    expect(p0.locator('[data-col="lag-seconds"]')).not_to_have_text("0")
    # No member commits while lag grows: Burrow's STOP, so the group's status is ERR by now.
    expect(page.locator("#status-table tbody tr").first.locator(".badge")).to_have_text("ERR")
    expect(page.locator("#group-status")).to_have_text("ERR")
    shot(page, "group-lag")


def test_groups_list_shows_the_group_with_its_status_badge_and_lag_live(
    page_as: PageAs, cp_cluster: Cluster, lagging: dict[str, Any], shot: Shot
) -> None:
    topic, group = lagging["topic"], lagging["group"]
    page = page_as("viewer")
    page.goto("/groups/")
    row = page.locator(f'#groups-table tr[data-group="{group}"]')
    expect(row.locator('[data-col="lag"]')).to_have_text("7")
    expect(row.locator('[data-col="status"]')).to_have_text(re.compile("^(OK|WARN|ERR)$"))
    expect(row).to_contain_text("Empty")
    page.evaluate("window.notReloaded = true")
    produce_at(cp_cluster, topic, 1, [now_ms()] * 6)
    expect(row.locator('[data-col="lag"]')).to_have_text("13")
    assert page.evaluate("window.notReloaded") is True
    shot(page, "groups")
    # The search box filters in the browser.
    page.fill("#group-search", group)
    expect(page.locator("#groups-table tbody tr")).to_have_count(1)
    page.fill("#group-search", "no-group-has-this-name")
    expect(page.locator("#groups-table tbody")).to_contain_text("No group matches")
    row_link = page.locator("#groups-table a")
    expect(row_link).to_have_count(0)


def test_reset_offsets_wizard_previews_without_writing_then_executes(
    page_as: PageAs, lagging: dict[str, Any]
) -> None:
    topic, group = lagging["topic"], lagging["group"]
    page = page_as("operator")
    page.goto(f"/groups/{group}/")
    page.select_option("#reset-strategy", "earliest")
    page.click("#reset-preview")
    preview = page.locator("#reset-preview-table tbody")
    expect(preview.locator(f'tr[data-partition="{topic}-0"] [data-col="current"]')).to_have_text(
        "3"
    )
    expect(preview.locator(f'tr[data-partition="{topic}-0"] [data-col="new"]')).to_have_text("0")
    expect(preview.locator(f'tr[data-partition="{topic}-1"] [data-col="new"]')).to_have_text("0")
    expect(page.locator("#reset-summary")).to_contain_text("Nothing has been written")
    assert committed(group) == {(topic, 0): 3, (topic, 1): 4}  # a dry run writes nothing

    # Shift partition 0 back by 2: the preview shows 3 → 1, executing writes it.
    page.click("#reset-back")
    page.select_option("#reset-strategy", "shift")
    page.fill("#reset-shift", "-2")
    page.check('input[name=scope][value="partitions"]')
    page.check(f'input[name=partition][data-topic="{topic}"][value="0"]')
    page.click("#reset-preview")
    expect(preview.locator("tr")).to_have_count(1)
    expect(preview.locator('[data-col="new"]')).to_have_text("1")
    assert committed(group) == {(topic, 0): 3, (topic, 1): 4}
    page.click("#reset-execute")
    confirm_dialog(page)
    expect(page.locator(".toast.ok")).to_contain_text("reset")
    expect(page.locator("#reset-summary")).to_contain_text("Done")
    assert committed(group) == {(topic, 0): 1, (topic, 1): 4}
    # The monitor's next tick shows the new offset in the partition table.
    row = page.locator(f'#partitions-table tr[data-partition="{topic}-0"]')
    expect(row.locator('[data-col="committed"]')).to_have_text("1")
    expect(row.locator('[data-col="lag"]')).to_have_text("9")


def test_reset_wizard_says_what_is_missing_before_calling_the_api(
    page_as: PageAs, lagging: dict[str, Any]
) -> None:
    page = page_as("operator")
    page.goto(f"/groups/{lagging['group']}/")
    page.select_option("#reset-strategy", "by-duration")
    page.fill("#reset-duration", "ten minutes")
    page.click("#reset-preview")
    # The API's own message, shown in the wizard.
    expect(page.locator("#reset-error")).to_contain_text("ISO-8601 duration")
    page.select_option("#reset-strategy", "offset")
    page.click("#reset-preview")
    expect(page.locator("#reset-error")).to_contain_text("Enter the offset")
    expect(page.locator("#reset-preview-box")).to_be_hidden()


def test_a_joining_member_appears_live_then_rebalance_reports_and_active_reset_is_refused(
    page_as: PageAs, lagging: dict[str, Any], join: Callable[[str, str], None]
) -> None:
    topic, group = lagging["topic"], lagging["group"]
    page = page_as("operator")
    page.goto(f"/groups/{group}/")
    expect(page.locator("#members-table tbody")).to_contain_text("No active members")
    page.evaluate("window.notReloaded = true")
    join(group, topic)
    # Members and partition owners come from the members socket; the state from the lag one.
    member = page.locator("#members-table tbody tr").first
    expect(member).to_contain_text("billing-worker")
    expect(member).to_contain_text(f"{topic}: 0, 1")
    owner = page.locator(f'#partitions-table tr[data-partition="{topic}-0"]')
    expect(owner).to_contain_text("billing-worker")
    expect(page.locator("#group-state")).to_have_text("Stable")
    assert page.evaluate("window.notReloaded") is True

    page.click("#rebalance-button")
    confirm_dialog(page)
    expect(page.locator(".toast.ok")).to_contain_text(f"group {group} is rebalancing")

    page.select_option("#reset-strategy", "earliest")
    page.click("#reset-preview")
    expect(page.locator("#reset-preview-table tbody tr")).to_have_count(2)
    page.click("#reset-execute")
    confirm_dialog(page)
    # Kafka's refusal, word for word from the API, in a toast and in the wizard.
    expect(page.locator(".toast.error")).to_contain_text("inactive")
    expect(page.locator("#reset-error")).to_contain_text("can only be reset if the group")
    assert committed(group) == {(topic, 0): 3, (topic, 1): 4}


def test_webhooks_are_added_edited_and_deleted_from_the_group_page(
    page_as: PageAs, lagging: dict[str, Any], api: Callable[[str], APIRequestContext]
) -> None:
    group = lagging["group"]
    url = f"http://127.0.0.1:9/alerts/{group}"
    page = page_as("operator")
    page.goto(f"/groups/{group}/")
    page.fill("#webhook-url", url)
    page.select_option("#webhook-min-status", "ERR")
    page.fill("#webhook-secret", "s3cret")
    page.click("#webhook-save")
    confirm_dialog(page)
    expect(page.locator(".toast.ok", has_text="added")).to_be_visible()
    row = page.locator("#webhooks-table tbody tr", has_text=url)
    expect(row).to_contain_text("ERR")
    expect(row).to_contain_text("set")
    stored = [w for w in api("viewer").get("/api/webhooks/").json() if w["url"] == url]
    assert [(w["group"], w["min_status"], w["has_secret"]) for w in stored] == [
        (group, "ERR", True)
    ]

    row.get_by_role("button", name="Edit").click()
    expect(page.locator("#webhook-url")).to_have_value(url)
    page.select_option("#webhook-min-status", "WARN")
    page.click("#webhook-save")
    confirm_dialog(page)
    expect(row).to_contain_text("WARN")
    assert api("viewer").get(f"/api/webhooks/{stored[0]['id']}/").json()["min_status"] == "WARN"

    row.get_by_role("button", name="Delete").click()
    confirm_dialog(page)
    expect(page.locator(".toast.ok", has_text="deleted")).to_be_visible()
    expect(page.locator("#webhooks-table tbody")).not_to_contain_text(url)
    assert api("viewer").get(f"/api/webhooks/{stored[0]['id']}/").status == 404


def test_viewer_sees_the_group_but_none_of_the_mutating_controls(
    page_as: PageAs, lagging: dict[str, Any], api: Callable[[str], APIRequestContext]
) -> None:
    group = lagging["group"]
    hook = api("operator").post(
        "/api/webhooks/", data={"url": "http://127.0.0.1:9/viewer-sees-me", "group": group}
    )
    assert hook.status == 201, hook.text()
    page = page_as("viewer")
    page.goto(f"/groups/{group}/")
    expect(
        page.locator(f'#partitions-table tr[data-partition="{lagging["topic"]}-0"]')
    ).to_be_visible()
    expect(page.locator("#webhooks-table tbody")).to_contain_text("viewer-sees-me")
    for selector in (
        "#rebalance-button",
        "#reset-panel",
        "#reset-form",
        "#reset-execute",
        "#webhook-form",
        "[data-edit]",
        "[data-delete]",
        "[data-mutating]",
    ):
        expect(page.locator(selector)).to_have_count(0)
    # Besides the charts' own toolbars, the only button on the page is the sign-out one.
    assert page.evaluate(BUTTONS) == ["Log out"]
    page.goto("/groups/")
    expect(page.locator("#groups-table tbody tr").first).to_be_visible()
    assert page.evaluate(BUTTONS) == ["Log out"]
    api("operator").delete(f"/api/webhooks/{hook.json()['id']}/")


def test_an_unknown_group_is_a_404_page(page_as: PageAs) -> None:
    page = page_as("viewer")
    response = page.goto(f"/groups/no-such-group-{time.monotonic_ns()}/")
    assert response is not None and response.status == 404
    expect(page.get_by_role("alert")).to_contain_text("does not exist")

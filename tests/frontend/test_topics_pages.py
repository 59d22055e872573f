"""Topic list and topic detail in a real browser: create with configs, validation messages,
add partitions, edit and reset a config, delete with typed confirmation, live rates and the
partition table, and no mutating control for viewers."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from playwright.sync_api import Page, expect

from frontend.live.topics import RateWindow
from tests.controlplane.lag_helpers import commit, now_ms, produce_at
from tests.frontend.dialogs import confirm
from tests.weir.cluster.conftest import Cluster

Shot = Callable[[Page, str], Path]


def topic_row(page: Page, name: str):
    return page.locator(f'#topics-table tr[data-topic="{name}"]')


def test_admin_creates_a_topic_with_configs_and_sees_it_in_the_list_and_its_detail(
    page_as: Callable[[str], Page], unique: Callable[[str], str], shot: Shot
) -> None:
    page = page_as("admin")
    page.goto("/topics/")
    name = unique("orders")
    page.get_by_role("button", name="Create topic").first.click()
    page.fill("#create-name", name)
    page.fill("#create-partitions", "2")
    page.fill("#create-rf", "3")
    page.fill("#create-configs", "retention.ms=3600000\ncleanup.policy=delete")
    page.click("#create-submit")
    confirm(page, f"Create topic {name}?")
    expect(page.locator(".toast.ok")).to_contain_text(f"Topic {name} created")
    row = topic_row(page, name)
    expect(row).to_be_visible()
    expect(row.locator("td").nth(1)).to_have_text("2")
    expect(row.locator("td").nth(2)).to_have_text("3")
    # The socket's rows carry sizes (0 B for a new topic) once the leaders publish them.
    expect(row.locator("td").nth(5)).to_have_text("0 B")
    # Rates need two readings a second apart; an idle topic then shows 0, not a dash.
    expect(row.locator('td[data-col="records_per_s"]')).to_have_text("0 rec/s")
    shot(page, "topics")
    page.fill("#topic-search", name[:-2])
    expect(page.locator("#topics-table tbody tr")).to_have_count(1)
    expect(page.locator("#topic-count")).to_have_text(re.compile(r"^1 topic match"))

    # The broker's validation message for a bad config, and for a name already taken.
    page.click("#create-toggle")
    page.fill("#create-name", unique("bad"))
    page.fill("#create-configs", "retention.ms=abc")
    page.click("#create-submit")
    confirm(page, re.compile("Create topic"))
    error = page.locator("#create-error")
    expect(error).to_contain_text("Invalid value abc for configuration retention.ms")
    expect(page.locator(".toast.error")).to_contain_text("Invalid value abc")
    page.fill("#create-name", name)
    page.fill("#create-configs", "")
    page.click("#create-submit")
    confirm(page, re.compile("Create topic"))
    expect(error).to_contain_text("already exists")
    page.fill("#create-configs", "retention.ms")
    page.click("#create-submit")
    expect(error).to_contain_text('config line 1 ("retention.ms") is not name=value')

    row.locator("a").click()
    expect(page).to_have_url(re.compile(f"/topics/{name}/$"))
    expect(page.locator("#partitions-table tbody tr")).to_have_count(2)
    expect(page.locator('[data-stat="replication_factor"]')).to_have_text("3")
    # HW and size come from the leaders' published state, over the live socket.
    expect(page.locator('#partitions-table tr[data-partition="1"] td[data-col="hw"]')).to_have_text(
        "0"
    )
    retention = page.locator('#configs-table tr[data-config="retention.ms"]')
    expect(retention.locator("td.value")).to_have_text("3600000")
    expect(retention).to_contain_text("topic override")
    expect(page.locator("#delete-topic")).to_be_visible()
    shot(page, "topic-detail")


def test_operator_adds_partitions_and_edits_a_config_with_validation_messages(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("grow"), partitions=1)
    page = page_as("operator")
    page.goto(f"/topics/{name}/")
    expect(page.locator("#partitions-table tbody tr")).to_have_count(1)
    # Operators operate; creating and deleting topics is for admins.
    expect(page.locator("#delete-topic")).to_have_count(0)
    page.fill("#partitions-count", "3")
    page.click("#add-partitions")
    confirm(page, f"Add partitions to {name}?")
    expect(page.locator(".toast.ok")).to_contain_text(f"{name} now has 3 partitions")
    # The live table grows without a reload.
    expect(page.locator("#partitions-table tbody tr")).to_have_count(3)
    expect(page.locator('[data-stat="partitions"]')).to_have_text("3")
    page.fill("#partitions-count", "2")
    page.click("#add-partitions")
    confirm(page, f"Add partitions to {name}?")
    expect(page.locator(".toast.error")).to_contain_text("can only increase")

    retention = page.locator('#configs-table tr[data-config="retention.ms"]')
    retention.get_by_role("button", name="Edit").click()
    retention.locator("input").fill("abc")
    retention.get_by_role("button", name="Save").click()
    confirm(page, "Set retention.ms?")
    expect(retention.locator(".config-error")).to_contain_text(
        "Invalid value abc for configuration retention.ms"
    )
    retention.locator("input").fill("7200000")
    retention.get_by_role("button", name="Save").click()
    confirm(page, "Set retention.ms?")
    expect(page.locator(".toast.ok").last).to_contain_text("retention.ms set to 7200000")
    expect(retention.locator("td.value")).to_have_text("7200000")
    expect(retention).to_contain_text("topic override")
    page.check("#only-overrides")
    expect(page.locator("#configs-table tbody tr")).to_have_count(1)
    retention.get_by_role("button", name="Reset").click()
    confirm(page, "Reset retention.ms?")
    expect(page.locator("#configs-table tbody")).to_contain_text("No config matches")
    page.uncheck("#only-overrides")
    expect(retention).not_to_contain_text("topic override")
    # A change made elsewhere (here a Kafka client) shows up without a reload.
    resource = ConfigResource(
        "topic",
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", "5400000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin = AdminClient({"bootstrap.servers": cp_cluster.bootstrap()})
    admin.incremental_alter_configs([resource])[resource].result(20)
    expect(retention.locator("td.value")).to_have_text("5400000")
    expect(retention).to_contain_text("topic override")


def test_admin_deletes_a_topic_only_after_typing_its_name(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("doomed"))
    page = page_as("admin")
    page.goto(f"/topics/{name}/")
    page.click("#delete-topic")
    dialog = page.locator("#confirm-dialog")
    ok = dialog.locator("button.confirm")
    expect(ok).to_be_disabled()
    dialog.locator("input").fill(name[:-1])
    expect(ok).to_be_disabled()
    dialog.locator("button.cancel").click()
    expect(page.locator(".toast")).to_have_count(0)
    page.click("#delete-topic")
    dialog.locator("input").fill(name)
    expect(ok).to_be_enabled()
    ok.click()
    expect(page.locator(".toast.ok")).to_contain_text(f"Topic {name} deleted")
    expect(page).to_have_url(re.compile(r"/topics/$"))
    expect(page.locator("#topics-table tbody tr").first).to_be_visible()
    expect(topic_row(page, name)).to_have_count(0)
    response = page.goto(f"/topics/{name}/")
    assert response is not None and response.status == 404


def test_topic_list_filters_hides_internal_topics_and_shows_live_rates(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("busy"))
    # A committed offset makes sure an internal topic exists (the group coordinator's).
    commit(cp_cluster, unique("group"), {(name, 0): 0})
    page = page_as("viewer")
    page.goto("/topics/")
    expect(topic_row(page, name)).to_be_visible()
    expect(topic_row(page, "__consumer_offsets")).to_have_count(0)
    page.check("#show-internal")
    expect(topic_row(page, "__consumer_offsets")).to_contain_text("internal")
    page.uncheck("#show-internal")
    page.fill("#topic-search", name)
    expect(page.locator("#topics-table tbody tr")).to_have_count(1)
    # Records produced now show as a rate in the topic's row, pushed by the server.
    produce_at(cp_cluster, name, 0, [now_ms()] * 300, value=b"x" * 500)
    rate = topic_row(page, name).locator('td[data-col="records_per_s"]')
    expect(rate).to_have_text(re.compile(r"^[1-9][\d,.]* rec/s$"))
    expect(topic_row(page, name).locator('td[data-col="bytes_per_s"]')).to_have_text(
        re.compile(r"/s$")
    )
    expect(topic_row(page, name).locator("td").nth(4)).to_have_text("300")


def test_viewer_sees_topics_and_messages_without_any_mutating_control(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    name = cp_cluster.create_topic(unique("readonly"))
    page = page_as("viewer")
    page.goto("/topics/")
    expect(topic_row(page, name)).to_be_visible()
    expect(page.locator("#create-toggle, #create-panel, #create-form")).to_have_count(0)
    page.goto(f"/topics/{name}/")
    expect(page.locator("#partitions-table tbody tr")).to_have_count(1)
    expect(page.locator('#configs-table tr[data-config="retention.ms"]')).to_be_visible()
    expect(
        page.locator("#operations, #delete-topic, #partitions-form, [data-edit], [data-reset]")
    ).to_have_count(0)
    page.goto(f"/topics/{name}/messages/")
    expect(page.locator("#browse-range")).to_contain_text("Partition 0")
    expect(page.locator("#produce, #produce-form")).to_have_count(0)
    # Reading is not mutating: browse and search stay available.
    expect(page.locator("#browse-load")).to_be_visible()
    expect(page.locator("#search-run")).to_be_visible()


def test_unknown_topic_is_a_404_error_page(page_as: Callable[[str], Page]) -> None:
    page = page_as("viewer")
    for path in ("/topics/no-such-topic/", "/topics/no-such-topic/messages/"):
        response = page.goto(path)
        assert response is not None and response.status == 404
        expect(page.get_by_role("alert")).to_contain_text("'no-such-topic' not found")


def test_rate_window_divides_growth_over_a_few_seconds_and_skips_changed_partition_sets() -> None:
    window = RateWindow(window_s=5.0)
    assert window.add(at=0.0, totals={"a": (0, 0, 1)}) == {"a": (None, None)}
    # Leaders publish about once a second: growth spread over the window, not per reading.
    assert window.add(at=1.0, totals={"a": (100, 1000, 1)}) == {"a": (100.0, 1000.0)}
    assert window.add(at=2.0, totals={"a": (100, 1000, 1)}) == {"a": (50.0, 500.0)}
    # A new partition (or one whose leader stopped publishing) changes the sums: no rate.
    assert window.add(at=3.0, totals={"a": (150, 1500, 2), "b": (5, 5, 1)}) == {
        "a": (None, None),
        "b": (None, None),
    }
    # ... until a reading that counted the same partitions is far enough behind.
    assert window.add(at=4.5, totals={"a": (165, 1650, 2), "b": (8, 35, 1)}) == {
        "a": (10.0, 100.0),
        "b": (2.0, 20.0),
    }
    # Readings older than the window are dropped; a shrinking log (retention) is not negative.
    rates = window.add(at=9.0, totals={"a": (120, 900, 2), "b": (65, 605, 1)})
    assert rates == {"a": (0.0, 0.0), "b": (10.0, 100.0)}


def test_the_shared_pager_pages_through_rows_and_keeps_its_page_inside_the_list(
    page_as: Callable[[str], Page],
) -> None:
    """``Weir.pager`` (quotas and topics tables) on the topic list's own pager markup
    (``_pager.html``), with pages of two rows: what each page shows and says, the buttons
    moving a page, and a list that shrank under the page being shown."""
    page = page_as("viewer")
    page.goto("/topics/")
    result = page.evaluate(
        """() => {
          const seen = [];
          const list = ["a", "b", "c", "d", "e"];
          const text = () => document.getElementById("topics-page").textContent;
          const pages = Weir.pager("topics", 2, () => seen.push([pages.rows(list), text()]));
          seen.push([pages.rows(list), text()]);
          document.getElementById("topics-next").click();
          document.getElementById("topics-next").click();
          const last = document.getElementById("topics-next").disabled;
          document.getElementById("topics-prev").click();
          const hiddenWithFew = (pages.rows(["a"]), document.getElementById("topics-pager").hidden);
          return { seen, last, hiddenWithFew, afterShrink: pages.rows(["a", "b", "c"]) };
        }"""
    )
    dash = "\u2013"  # the pager writes ranges with an en dash
    assert result["seen"] == [
        [["a", "b"], f"1{dash}2 of 5"],
        [["c", "d"], f"3{dash}4 of 5"],
        [["e"], f"5{dash}5 of 5"],
        [["c", "d"], f"3{dash}4 of 5"],
    ]
    assert result["last"] is True
    assert result["hiddenWithFew"] is True
    assert result["afterShrink"] == ["a", "b"]  # the list shrank to one row: back to page one

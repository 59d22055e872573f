"""The brokers page: cards, the broker-by-partition heatmap, preferred-leader election.

Real browser against daphne + the monitor in front of the session's 3-broker cluster. A
partition's replica list is reordered behind the page's back (its leader is then no longer
the preferred replica); the page counts it, the heatmap shows who leads, and an operator's
election moves leadership back — the heatmap follows without a reload. Viewers see the
page without the election controls.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from brokers.ops import services
from tests.weir.cluster.conftest import Cluster

# JS: the heatmap's cell state (0 none, 1 not in ISR, 2 follower, 3 leader) for broker row r.
CELL = "document.getElementById('heatmap').data[0].z[{row}][0]"


def test_brokers_page_shows_three_brokers_the_controller_and_the_heatmap(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("heat"), replica_assignment=[[3, 1], [2, 3]])
    page = page_as("viewer")
    page.goto("/brokers/")
    cards = page.locator("#broker-cards .broker-card")
    expect(cards).to_have_count(3)
    expect(page.locator("#broker-cards .badge.controller")).to_have_count(1)
    expect(page.locator("#broker-cards .badge.up")).to_have_count(3)
    expect(page.locator('[data-stat="up"]')).to_have_text("3 / 3")
    expect(cards.first.locator('[data-field="replicas"]')).not_to_have_text("0")
    expect(page.locator("#heatmap .main-svg").first).to_be_visible()
    # Narrowing the heatmap to one topic: two columns, three broker rows, leaders where
    # the replica lists put them (broker 3 leads partition 0 and follows on partition 1).
    page.fill("#heatmap-filter", topic)
    expect(page.locator("#heatmap-shown")).to_have_text(f"2 partitions matching “{topic}”")
    page.wait_for_function(
        "JSON.stringify(document.getElementById('heatmap').data[0].z) === '[[2,0],[0,3],[3,2]]'"
    )
    # Viewers: no election controls at all.
    expect(page.locator("#elect-all, #elect-off-preferred")).to_have_count(0)
    expect(page.locator("#election-panel button")).to_have_count(0)


def test_operator_runs_a_preferred_election_and_sees_the_result(
    page_as: Callable[[str], Page],
    cp_cluster: Cluster,
    unique: Callable[[str], str],
    shot: Callable[[Page, str], Path],
) -> None:
    topic = cp_cluster.create_topic(unique("elect"), replica_assignment=[[1, 2, 3]])
    # A reorder copies nothing and completes at once; broker 1 keeps leading, so the
    # partition's leader is no longer its preferred replica (2).
    services.reassignment_execute(partitions=[(topic, 0, [2, 1, 3])])
    page = page_as("operator")
    page.goto("/brokers/")
    page.fill("#heatmap-filter", topic)
    page.wait_for_function(f"{CELL.format(row=0)} === 3")
    button = page.locator("#elect-off-preferred")
    expect(button).to_be_enabled()
    expect(button).to_contain_text("Elect preferred leaders")
    expect(page.locator("#off-preferred-count")).not_to_have_text("0")
    button.click()
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("back to their preferred replica")
    dialog.locator("button.confirm").click()
    expect(page.locator(".toast.ok")).to_contain_text("Election done")
    result = page.locator("#election-result")
    expect(result.locator("[data-result] .badge.elected")).not_to_have_text("0 elected")
    expect(result.locator("tr", has_text=f"{topic}-0")).to_contain_text("elected")
    # Leadership moved to broker 2; the heatmap shows it without a reload.
    page.wait_for_function(f"{CELL.format(row=1)} === 3 && {CELL.format(row=0)} === 2")
    page.fill("#heatmap-filter", "")
    expect(page.locator("#heatmap-shown")).not_to_contain_text("matching")
    shot(page, "brokers")

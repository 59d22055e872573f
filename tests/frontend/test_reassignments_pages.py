"""The reassignments page: generate, review, throttle, execute, follow, cancel; rebalance.

Real browser against daphne + the monitor (which runs the rebalance executor) in front of
the session's 3-broker cluster. An operator moves a single-replica topic from broker 1 to
brokers 2 and 3: the proposal is a diff of replica sets, the move is throttled so the
progress bar is seen part-way before the row turns done — all pushed over the page's
websocket, without a reload. A slow move is cancelled from its row. A rebalance of skewed
topics is proposed, executed and followed to completion. Viewers get no mutating control.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from brokers.ops import services
from controlplane.cluster import gateway
from tests.frontend.dialogs import confirm_saying as confirm
from tests.weir.cluster.conftest import Cluster, wait_until
from tests.weir.cluster.helpers import produce_ok

KB = b"x" * 1024
BAR = "document.querySelector('tr[data-key=\"{key}\"] [data-progress] > div')"


def replicas(topic: str, partition: int = 0) -> tuple[int, ...]:
    return gateway().image().topics[topic].partitions[partition].replicas


def pick_topic(page: Page, picker: str, topic: str) -> None:
    page.fill(f"{picker} [data-search]", topic)
    page.locator(f"{picker} .topic-option", has_text=topic).locator("input").check()
    expect(page.locator(f"{picker} .chip", has_text=topic)).to_have_count(1)


def test_operator_generates_reviews_and_executes_a_throttled_reassignment_with_live_progress(
    page_as: Callable[[str], Page],
    cp_cluster: Cluster,
    unique: Callable[[str], str],
    shot: Callable[[Page, str], Path],
) -> None:
    topic = cp_cluster.create_topic(unique("move"), replica_assignment=[[1]])
    # ~3 MB at a 300 KB/s throttle: about ten seconds of copying to watch.
    produce_ok(cp_cluster, topic, [b"%d-" % i + KB for i in range(3000)], acks="1")
    page = page_as("operator")
    page.goto("/reassignments/")
    pick_topic(page, "#reassign-topics", topic)
    for broker in (2, 3):
        page.locator(f'#reassign-brokers input[value="{broker}"]').check()
    page.click("#generate")
    proposal = page.locator("#reassign-proposal")
    row = proposal.locator(f'tr[data-key="{topic}/0"]')
    # The diff: broker 1 struck through, the new broker highlighted, one copy.
    expect(row.locator("[data-current] .diff-old")).to_have_text("1")
    expect(row.locator("[data-proposed] .diff-new")).to_have_text(re.compile(r"^[23]$"))
    expect(proposal.locator('[data-summary="moves"]')).to_have_text("1")
    expect(proposal.locator('[data-summary="partitions"]')).to_contain_text("1 of 1")
    expect(proposal.locator('.per-broker tr[data-broker="1"]')).to_contain_text("-1")
    target = int(row.locator("[data-proposed] .diff-new").inner_text())
    proposal.locator("[data-throttle]").fill("300")  # KB/s
    proposal.locator("[data-execute]").click()
    confirm(page, "throttled to 300.0 KB/s")
    expect(page.locator(".toast.ok")).to_contain_text("Reassignment started for 1 partition")
    expect(proposal).to_be_hidden()
    # Progress arrives over the websocket: the bar is seen strictly between 0 and 100 %...
    key = f"{topic}/0"
    line = page.locator(f'#reassignments-table tr[data-key="{key}"]')
    expect(line).to_have_attribute("data-state", "in_progress")
    expect(line.locator(".diff-new")).to_have_text(str(target))
    bar = BAR.format(key=key)
    page.wait_for_function(
        f"{bar} && parseFloat({bar}.style.width) > 0 && parseFloat({bar}.style.width) < 100",
        timeout=30_000,
    )
    expect(line.locator(".progress-text")).to_contain_text(" / ")
    shot(page, "reassignments")
    # ...then the row turns done, still without a reload.
    expect(line).to_have_attribute("data-state", "completed", timeout=45_000)
    assert page.evaluate(f"{bar}.style.width") == "100%"
    expect(line.locator(".badge")).to_have_text("done")
    assert replicas(topic) == (target,)


def test_operator_cancels_an_in_flight_move_from_its_row(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("cancel"), replica_assignment=[[1]])
    produce_ok(cp_cluster, topic, [b"%d-" % i + KB for i in range(2000)], acks="1")
    # 2 MB at 20 kB/s would take well over a minute.
    services.reassignment_execute(partitions=[(topic, 0, [1, 2])], throttle_bytes_per_sec=20_000)
    page = page_as("operator")
    page.goto("/reassignments/")
    line = page.locator(f'#reassignments-table tr[data-key="{topic}/0"]')
    expect(line).to_have_attribute("data-state", "in_progress")
    expect(page.locator("#cancel-all")).to_be_visible()
    line.locator("[data-cancel]").click()
    confirm(page, f"Stop moving {topic} partition 0")
    expect(page.locator(".toast.ok")).to_contain_text(f"Cancelled {topic} partition 0")
    expect(line).to_have_count(0)
    wait_until(lambda: replicas(topic) == (1,), 20, lambda: cp_cluster.describe(topic))


def test_operator_proposes_and_executes_a_rebalance_of_skewed_topics(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    skewed = cp_cluster.create_topic(
        unique("skew"), replica_assignment=[[1, 2], [1, 2], [1, 3], [1, 2]]
    )
    page = page_as("operator")
    page.goto("/reassignments/")
    pick_topic(page, "#rebalance-topics", skewed)
    page.click("#propose")
    proposal = page.locator("#rebalance-proposal")
    expect(proposal.locator(".diff-table tbody tr").first).to_be_visible()
    expect(proposal.locator('.per-broker tr[data-broker="1"]')).to_contain_text("4")
    changing = int(proposal.locator('[data-summary="partitions"]').inner_text())
    assert changing >= 1
    proposal.locator("[data-concurrency]").fill("2")
    proposal.locator("[data-execute]").click()
    confirm(page, "2 at a time")
    expect(page.locator(".toast.ok")).to_contain_text("Rebalance started")
    # The monitor's executor runs the plan; the status panel follows it to the end.
    status = page.locator("#rebalance-status")
    expect(status.locator(".plan-head .badge")).to_have_text("completed", timeout=45_000)
    expect(status.locator(".plan-progress")).to_contain_text(f"{changing} of {changing} partitions")
    image = gateway().image().topics[skewed]
    per_broker = {b: 0 for b in (1, 2, 3)}
    for p in image.partitions.values():
        for b in p.replicas:
            per_broker[b] += 1
    assert max(per_broker.values()) - min(per_broker.values()) <= 1, per_broker


def test_viewer_follows_reassignments_without_any_mutating_control(
    page_as: Callable[[str], Page],
) -> None:
    page = page_as("viewer")
    page.goto("/reassignments/")
    expect(page.locator("#reassignments-table")).to_be_visible()
    expect(page.locator("#rebalance-status")).to_be_visible()
    expect(page.locator(".live-dot.on")).to_have_count(1)
    for control in (
        "#new-reassignment",
        "#generate",
        "#propose",
        "#cancel-all",
        "#rebalance-cancel",
    ):
        expect(page.locator(control)).to_have_count(0)
    expect(page.locator("main section button, main [data-cancel]")).to_have_count(0)

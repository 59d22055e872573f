"""The mirrors page in the browser, fed by what mirror-maker processes publish: a viewer sees the
flow, its processes, lag, checkpoint age and skipped active groups, and the table follows a
new status pushed over the page's socket, with no failover form; an operator gets the form,
and a dry run says plainly that the control plane needs ``WEIR_MIRROR_PROPERTIES`` (the
shared dashboard runs without it; the failover itself is proved in tests/mirrors)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.controlplane_fixtures import Dashboard
from weir.metadata.redis_url import sync_client
from weir.mirror.status import FlowStatus, PartitionStatus, StatusStore, now_ms


@pytest.fixture
def store(dashboard: Dashboard) -> Iterator[StatusStore]:
    client = sync_client(dashboard.env["WEIR_REDIS_URL"], decode_responses=True)
    found = StatusStore(client, dashboard.env["WEIR_CLUSTER_ID"])
    yield found
    for status in found.read_all():
        found.remove(status)
    client.close()


def _status(source: str, lag: int) -> FlowStatus:
    now = now_ms()
    return FlowStatus(
        flow=f"{source}->west",
        source=source,
        target="west",
        process_id="host-1-abc",
        state="running",
        leader=True,
        topics=["orders"],
        partitions=[PartitionStatus("orders", 0, f"{source}.orders", lag_records=lag)],
        record_rate=120.0,
        byte_rate=12_000.0,
        last_checkpoint_ms=now - 3000,
        last_heartbeat_ms=now - 1000,
        skipped_active_groups=["billing"],
    )


def test_viewer_follows_a_flow_and_operator_gets_the_failover_form(
    page_as: Callable[[str], Page], store: StatusStore, shot: Callable[[Page, str], Path]
) -> None:
    source = f"east{uuid.uuid4().hex[:6]}"
    flow = f"{source}->west"
    store.publish(_status(source, lag=7), ttl_s=120)
    page = page_as("viewer")
    page.goto("/")
    page.locator('nav.side a[data-nav="mirrors"]').click()
    expect(page).to_have_url(re.compile(r"/mirrors/$"))
    expect(page.locator(".live-dot.on")).to_have_count(1)
    row = page.locator(f'#flows-table tr[data-flow="{flow}"]')
    expect(row.locator(".badge.running")).to_have_text("running")
    expect(row.locator('[data-col="processes"]')).to_have_text("1")
    expect(row.locator('[data-col="lag"]')).to_have_text("7")
    expect(row.locator('[data-col="checkpoint"]')).to_contain_text(" s")
    expect(row.locator('[data-col="skipped"]')).to_have_text("billing")
    expect(page.locator("#mirror-config-note")).to_contain_text("WEIR_MIRROR_PROPERTIES is not set")
    expect(page.locator("#mirror-lag-chart .main-svg").first).to_be_visible()
    expect(page.locator("#failover-form")).to_have_count(0)

    store.publish(_status(source, lag=42), ttl_s=120)  # pushed, not polled
    expect(row.locator('[data-col="lag"]')).to_have_text("42", timeout=15_000)
    part = page.locator(f'#partitions-table tr[data-flow="{flow}"][data-partition="0"]')
    expect(part.locator('[data-col="lag"]')).to_have_text("42")
    shot(page, "mirrors-viewer")

    operator = page_as("operator")
    operator.goto("/mirrors/")
    operator.select_option("#failover-flow", flow)
    operator.fill("#failover-group", "billing")
    operator.click("#failover-dry-run")
    expect(operator.locator("#failover-error")).to_contain_text("WEIR_MIRROR_PROPERTIES is not set")
    expect(operator.locator("#failover-result")).to_be_hidden()
    shot(operator, "mirrors-operator")

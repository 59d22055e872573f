"""The quotas page in the browser: an operator sets a client quota through the form (a broker
asked directly describes it), a real confluent-kafka producer with that client id goes over
it and the page shows, pushed over its socket, the broker's measured rate and the throttling;
the operator removes the quota; a viewer sees the table but no form and no remove button.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Producer
from playwright.sync_api import Page, expect

from brokers.quotas import quota_describe_request
from tests.frontend.dialogs import confirm
from tests.weir.cluster.conftest import Cluster, raw_request


def _described(cluster: Cluster, client_id: str) -> dict[str, float]:
    response = raw_request(cluster[1].port, quota_describe_request([("clients", client_id)]))
    return {v.key: v.value for entry in response.entries for v in entry.values}


def test_operator_sets_a_quota_sees_a_producer_throttled_and_removes_it(
    page_as: Callable[[str], Page], cp_cluster: Cluster, shot: Callable[[Page, str], Path]
) -> None:
    suffix = uuid.uuid4().hex[:8]
    client_id, topic = f"quota-ui-{suffix}", f"quota-ui-{suffix}"
    cp_cluster.create_topic(topic)
    page = page_as("operator")
    page.goto("/")
    page.locator('nav.side a[data-nav="quotas"]').click()
    expect(page).to_have_url(re.compile(r"/quotas/$"))
    expect(page.locator(".live-dot.on")).to_have_count(1)

    page.fill("#quota-client", client_id)
    page.fill("#quota-producer_byte_rate", "-1")
    page.click("#quota-submit")
    confirm(page, "Save this quota?")
    expect(page.locator("#quota-error")).to_contain_text("must be a positive value")

    page.fill("#quota-producer_byte_rate", "1024")
    page.click("#quota-submit")
    confirm(page, "Save this quota?")
    row = page.locator(f'#quotas-table tr[data-entity="clients/{client_id}"]')
    expect(row.locator('td[data-key="producer_byte_rate"]')).to_have_text("1.0 KB/s")
    assert _described(cp_cluster, client_id) == {"producer_byte_rate": 1024.0}

    # 20 KB at once against 1 KB/s: throttled on its first request (see the REST test).
    producer = Producer({"bootstrap.servers": cp_cluster.bootstrap(), "client.id": client_id})
    for _ in range(20):
        producer.produce(topic, b"x" * 1000)
    assert producer.flush(30) == 0
    usage = row.locator(".usage[data-type=Produce]")
    expect(usage).to_contain_text("throttled", timeout=20_000)
    expect(usage).to_contain_text(re.compile(r"\d+(\.\d)? KB/s"))
    usage_row = page.locator(f'#usage-table tr[data-client="{client_id}"][data-type=Produce]')
    expect(usage_row).to_have_count(1)
    shot(page, "quotas")

    page.fill("#quota-search", "no-such-client-anywhere")
    expect(page.locator("#quota-count")).to_have_text("0 entities match")
    page.fill("#quota-search", client_id)
    expect(page.locator("#quota-count")).to_have_text("1 entity match")

    viewer = page_as("viewer")
    viewer.goto("/quotas/")
    expect(viewer.locator(f'#quotas-table tr[data-entity="clients/{client_id}"]')).to_have_count(1)
    expect(viewer.locator("#quota-form")).to_have_count(0)
    expect(viewer.locator("button.quota-remove")).to_have_count(0)

    row.locator("button.quota-remove").click()
    confirm(page, f"Remove the quotas of clients/{client_id}?")
    expect(row).to_have_count(0)
    assert _described(cp_cluster, client_id) == {}

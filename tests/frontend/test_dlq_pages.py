"""The Dead letters pages in a real browser: DLQ topics found by name and by Kafka Connect's
error headers, a DLQ's records with their parsed error context, filters and paging, an
operator's replay of two picked records (dry run, then the job run by the dashboard's real
Celery worker) read back from the original topic with a confluent-kafka consumer, a purge after
its typed confirmation, and a viewer who gets no replay or purge control."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.controlplane.lag_helpers import produce_records, wait_high_watermarks
from tests.frontend.dialogs import confirm
from tests.weir.cluster.conftest import Cluster

Shot = Callable[[Page, str], Path]
DATA_EXCEPTION = "org.apache.kafka.connect.errors.DataException"
ORIGINAL_PARTITIONS = 3
AT = "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.convertAndTransformRecord"


def connect_headers(topic: str, partition: int, offset: int, message: str) -> list[Any]:
    """The headers Kafka Connect adds with ``errors.deadletterqueue.context.headers.enable``
    (every value a UTF-8 string)."""
    return [
        ("__connect.errors.topic", topic.encode()),
        ("__connect.errors.partition", str(partition).encode()),
        ("__connect.errors.offset", str(offset).encode()),
        ("__connect.errors.exception.class.name", DATA_EXCEPTION.encode()),
        ("__connect.errors.exception.message", message.encode()),
        ("__connect.errors.exception.stacktrace", f"{DATA_EXCEPTION}: {message}\n{AT}".encode()),
    ]


def dead_letter(original: str, i: int) -> dict[str, Any]:
    """Dead letter i: key k<i>, JSON value {"id": i}, from offset 100+i of the original
    topic's partition i % 3; even ones failed with "Unknown magic byte!", odd ones "timeout"."""
    message = "Unknown magic byte!" if i % 2 == 0 else "timeout"
    return {
        "key": f"k{i}".encode(),
        "value": b'{"id": %d}' % i,
        "headers": connect_headers(original, i % ORIGINAL_PARTITIONS, 100 + i, message),
    }


@pytest.fixture
def orders(cp_cluster: Cluster, unique: Callable[[str], str]) -> str:
    """The original topic the dead letters came from (3 partitions, empty)."""
    return cp_cluster.create_topic(unique("orders"), partitions=ORIGINAL_PARTITIONS)


@pytest.fixture
def dlq(cp_cluster: Cluster, orders: str) -> str:
    """``<orders>.DLT``, a DLQ by the default pattern, holding dead letters 0..3 of orders."""
    name = cp_cluster.create_topic(f"{orders}.DLT")
    produce_records(cp_cluster, name, [dead_letter(orders, i) for i in range(4)])
    return name


def offsets_shown(page: Page) -> list[int]:
    return [
        int(x)
        for x in page.locator("#dlq-records tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.offset).filter(Boolean)"
        )
    ]


def test_dlq_list_shows_a_topic_named_by_the_pattern_and_one_carrying_connect_headers(
    page_as: Callable[[str], Page],
    cp_cluster: Cluster,
    unique: Callable[[str], str],
    dlq: str,
    orders: str,
    shot: Shot,
) -> None:
    sink_errors = cp_cluster.create_topic(unique("sink-errors"))
    produce_records(cp_cluster, sink_errors, [dead_letter(orders, 7)])
    plain = cp_cluster.create_topic(unique("plain"))
    produce_records(cp_cluster, plain, [{"value": b"x", "headers": [("trace", b"1")]}])
    # The list counts records, and finds header DLQs, from the states leaders publish.
    wait_high_watermarks({(dlq, 0): 4, (sink_errors, 0): 1, (plain, 0): 1})

    page = page_as("viewer")
    page.goto("/")
    page.locator('nav.side a[data-nav="dlq"]').click()
    expect(page).to_have_url(re.compile(r"/dlq/$"))
    expect(page.locator("header.top h1")).to_have_text("Dead letters")
    expect(page.locator("#dlq-pattern")).to_contain_text("dlq|dlt")

    by_name = page.locator(f'#dlq-table tr[data-topic="{dlq}"]')
    expect(by_name.locator('[data-col="detected-by"]')).to_have_text("name pattern")
    expect(by_name.locator('[data-col="partitions"]')).to_have_text("1")
    expect(by_name.locator('[data-col="records"]')).to_have_text("4")
    by_headers = page.locator(f'#dlq-table tr[data-topic="{sink_errors}"]')
    expect(by_headers.locator('[data-col="detected-by"]')).to_have_text("error headers")
    expect(page.locator(f'#dlq-table tr[data-topic="{plain}"]')).to_have_count(0)
    expect(page.locator(f'#dlq-table tr[data-topic="{orders}"]')).to_have_count(0)
    shot(page, "dlq-list")

    by_headers.locator("a").click()
    expect(page).to_have_url(re.compile(rf"/dlq/{re.escape(sink_errors)}/$"))
    expect(page.locator("#dlq-records tbody tr[data-offset]")).to_have_count(1)


def test_records_show_connect_error_context_filter_and_page_and_a_viewer_gets_no_controls(
    page_as: Callable[[str], Page], dlq: str, orders: str, shot: Shot
) -> None:
    page = page_as("viewer")
    page.goto(f"/dlq/{dlq}/")
    expect(page.locator("#dlq-records tbody tr[data-offset]")).to_have_count(4)
    assert offsets_shown(page) == [0, 1, 2, 3]
    expect(page.locator("#dlq-range")).to_have_text(
        "Partition 0: offsets 0\u20133 (4 records) \u00b7 showing 4"
    )

    first = page.locator('#dlq-records tr[data-offset="1"]')
    expect(first.locator('[data-col="original-topic"]')).to_have_text(orders)
    expect(first.locator('[data-col="original-partition"]')).to_have_text("1")
    expect(first.locator('[data-col="original-offset"]')).to_have_text("101")
    expect(first.locator('[data-col="exception-class"]')).to_have_text("DataException")
    expect(first.locator('[data-col="exception-class"]')).to_have_attribute("title", DATA_EXCEPTION)
    expect(first.locator('[data-col="exception-message"]')).to_have_text("timeout")
    expect(first.locator("td.error .context")).to_have_text("Kafka Connect")
    expect(first.locator("pre.stacktrace")).to_be_hidden()
    first.locator("td.error summary").click()
    expect(first.locator("pre.stacktrace")).to_contain_text("WorkerSinkTask.convertAndTransform")
    expect(first.locator("td.attempts")).to_have_text("\u2013")
    expect(first.locator("td.key")).to_have_text("k1")
    expect(first.locator("td.value pre.json")).to_have_text('{\n  "id": 1\n}')
    shot(page, "dlq-records")

    # The exception filter (case ignored), then paging: two a page, "Load more" for the rest.
    page.fill("#dlq-exception", "MAGIC byte")
    page.click("#dlq-load")
    expect(page.locator("#dlq-range")).to_contain_text("showing 2 matching the filters")
    assert offsets_shown(page) == [0, 2]
    page.fill("#dlq-exception", "")
    page.fill("#dlq-limit", "2")
    page.click("#dlq-load")
    expect(page.locator("#dlq-scanned")).to_have_text("Scanned 2 records; more from offset 2.")
    assert offsets_shown(page) == [0, 1]
    page.click("#dlq-more")
    expect(page.locator("#dlq-records tbody tr[data-offset]")).to_have_count(4)
    expect(page.locator("#dlq-more")).to_be_hidden()

    # A viewer: no record checkboxes, no replay or purge control, not even hidden ones.
    for control in ("#replay-selected", "#replay-matching", "#purge-open", "#replay-panel"):
        expect(page.locator(control)).to_have_count(0)
    expect(page.locator("#dlq-records input[type=checkbox]")).to_have_count(0)
    buttons = page.locator("main button:visible").all_inner_texts()
    assert not [b for b in buttons if re.search(r"replay|purge|dry run", b, re.I)], buttons


def test_operator_replays_two_picked_records_after_a_dry_run_and_the_job_succeeds(
    page_as: Callable[[str], Page], cp_cluster: Cluster, dlq: str, orders: str, shot: Shot
) -> None:
    page = page_as("operator")
    page.goto(f"/dlq/{dlq}/")
    expect(page.locator("#dlq-records tbody tr[data-offset]")).to_have_count(4)
    expect(page.locator("#replay-selected")).to_be_disabled()
    page.check('#dlq-records input[data-pick="0:1"]')
    page.check('#dlq-records input[data-pick="0:2"]')
    expect(page.locator("#replay-selected")).to_have_text("Replay selected (2)")

    page.click("#replay-selected")
    expect(page.locator("#replay-panel")).to_be_visible()
    expect(page.locator("#replay-scope-note")).to_have_text("2 records picked in the table.")
    page.click("#replay-dry-run")
    expect(page.locator("#plan-summary")).to_contain_text("Would replay 2 of 2 records read")
    targets = page.locator("#plan-targets tbody tr")
    expect(targets).to_have_count(2)
    for partition in (1, 2):  # each record back to the partition its headers name
        target = page.locator(
            f'#plan-targets tr[data-target="{orders}"][data-partition="{partition}"]'
        )
        expect(target.locator('[data-col="records"]')).to_have_text("1")
    expect(page.locator("#plan-problems")).to_be_hidden()
    expect(page.locator("#plan-purge")).to_have_text("No purge.")

    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    with page.expect_websocket(lambda socket: socket.url.endswith("/ws/ui/jobs/?kind=dlq-replay")):
        page.click("#replay-submit")
        confirm(page, f"Replay from {dlq}?")
    expect(page.locator("#replay-job-status")).to_have_text("succeeded", timeout=60_000)
    expect(page.locator("#replay-progress")).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#replay-job-message")).to_have_text(
        f"2 records replayed from {dlq}, 0 skipped"
    )
    expect(page.locator("#replay-job-link")).to_have_attribute("href", "/jobs/?kind=dlq-replay")
    shot(page, "dlq-replayed")
    # The progress came over the jobs socket: the page never polled the job.
    assert not [url for url in requested if "/api/jobs/" in url], requested

    # Exactly those two records, each back in the partition its headers named.
    assert [cp_cluster.read_all(orders, p) for p in range(ORIGINAL_PARTITIONS)] == [
        [],
        [(0, b"k1", b'{"id": 1}')],
        [(0, b"k2", b'{"id": 2}')],
    ]
    # The DLQ keeps its records (no purge was asked).
    expect(page.locator("#dlq-records tbody tr[data-offset]")).to_have_count(4)


def test_operator_purges_before_an_offset_after_typing_the_topic_name(
    page_as: Callable[[str], Page], dlq: str
) -> None:
    page = page_as("operator")
    page.goto(f"/dlq/{dlq}/")
    expect(page.locator("#dlq-records tbody tr[data-offset]")).to_have_count(4)
    page.click("#purge-open")
    page.fill("#purge-before", "2")
    page.click("#purge-submit")
    confirm(page, f"Purge {dlq}?", typed=dlq)
    expect(page.locator("#toasts")).to_contain_text("Partition 0 now starts at offset 2")
    expect(page.locator("#purge-panel")).to_be_hidden()
    expect(page.locator("#dlq-range")).to_contain_text("offsets 2\u20133 (2 records)")
    assert offsets_shown(page) == [2, 3]


def test_a_topic_that_is_no_dlq_gets_a_404_page_naming_the_pattern(
    page_as: Callable[[str], Page], orders: str
) -> None:
    page = page_as("viewer")
    answer = page.goto(f"/dlq/{orders}/")
    assert answer is not None and answer.status == 404
    expect(page.locator("main")).to_contain_text("WEIR_DLQ_TOPIC_PATTERN")

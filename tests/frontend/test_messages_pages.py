"""A topic's messages in a real browser: produce JSON and binary records from the form and
browse them (newest first, from an offset, from a time), bad positions shown in the page, a
chunked search whose progress bar reaches 100%, and a live tail that shows a record produced
by a confluent-kafka client without a reload."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.controlplane.lag_helpers import produce_records
from tests.frontend.dialogs import confirm
from tests.weir.cluster.conftest import Cluster

Shot = Callable[[Page, str], Path]
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DASH = "\u2013"  # the en dash of ranges such as 0-19 in the page


def record_row(page: Page, offset: int):
    return page.locator(f'#records-table tr[data-offset="{offset}"]')


def offsets_shown(page: Page) -> list[int]:
    return [
        int(x)
        for x in page.locator("#records-table tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.offset).filter(Boolean)"
        )
    ]


def produce(cluster: Cluster, topic: str, values: list[bytes], timestamps: list[int]) -> None:
    records = [
        {"value": value, "timestamp": stamp}
        for value, stamp in zip(values, timestamps, strict=True)
    ]
    produce_records(cluster, topic, records)


def produce_from_form(page: Page, topic: str, value: str, key: str = "", headers: str = "") -> None:
    """Fill the produce form (in the format selected), submit it and confirm the dialog."""
    page.fill("#produce-key", key)
    page.fill("#produce-value", value)
    page.fill("#produce-headers", headers)
    page.click("#produce-submit")
    confirm(page, f"Produce to {topic}?")


def test_operator_produces_json_and_binary_from_the_form_and_browses_them(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("produce-ui"))
    page = page_as("operator")
    page.goto(f"/topics/{topic}/messages/")
    expect(page.locator("#records-table")).to_contain_text("No records here yet")

    json_value = '{"id": 1, "status": "new", "items": [1, 2]}'
    produce_from_form(page, topic, json_value, key="order-1", headers="source=dashboard")
    expect(page.locator("#produce-result")).to_have_text("Written to partition 0 at offset 0")

    page.select_option("#produce-format", "BINARY")
    produce_from_form(page, topic, "AAEC/w==")
    expect(page.locator("#produce-result")).to_have_text("Written to partition 0 at offset 1")

    # Bad input is refused with the API's message, in the form.
    produce_from_form(page, topic, "not base64!")
    expect(page.locator("#produce-error")).to_contain_text("not valid base64")
    page.select_option("#produce-format", "JSON")
    page.fill("#produce-value", "{oops")
    page.click("#produce-submit")
    expect(page.locator("#produce-error")).to_contain_text("not valid JSON")

    # The browser on the end of partition 0 reloaded after each produce: newest first.
    expect(page.locator("#records-table tbody tr")).to_have_count(2)
    assert offsets_shown(page) == [1, 0]
    binary = record_row(page, 1)
    expect(binary.locator("pre.hex")).to_have_text("00 01 02 ff")
    expect(binary.locator(".badge.fmt")).to_have_text("binary")
    binary.locator("summary").click()
    expect(binary.locator("pre.b64")).to_have_text("AAEC/w==")
    json_row = record_row(page, 0)
    expect(json_row.locator("td.value pre.json")).to_have_text(
        '{\n  "id": 1,\n  "status": "new",\n  "items": [\n    1,\n    2\n  ]\n}'
    )
    expect(json_row.locator("td.key")).to_have_text("order-1")
    expect(json_row.locator("td.hdrs")).to_have_text("source: dashboard")

    page.select_option("#browse-order", "oldest")
    page.click("#browse-load")
    expect(page.locator("#browse-range")).to_contain_text("oldest first")
    assert offsets_shown(page) == [0, 1]

    page.select_option("#browse-from", "offset")
    page.fill("#browse-offset", "1")
    page.click("#browse-load")
    expect(page.locator("#records-table tbody tr")).to_have_count(1)
    expect(record_row(page, 1)).to_be_visible()

    page.fill("#browse-offset", "7")
    page.click("#browse-load")
    expect(page.locator("#browse-error")).to_have_text(
        f"offset 7 is out of range: partition 0 of topic '{topic}' holds offsets 0 to 1"
    )
    page.fill("#browse-limit", "900")
    page.fill("#browse-offset", "0")
    page.click("#browse-load")
    expect(page.locator("#browse-error")).to_contain_text("limit")


def test_browse_from_a_timestamp_and_page_through_older_records(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("by-time"))
    produce(
        cp_cluster,
        topic,
        [f"event-{i}".encode() for i in range(20)],
        [T0 + i * 60_000 for i in range(20)],  # one a minute
    )
    page = page_as("viewer")
    page.goto(f"/topics/{topic}/messages/")
    expect(page.locator("#browse-range")).to_contain_text(f"offsets 0{DASH}19 (20 records)")
    page.select_option("#browse-from", "timestamp")
    # The datetime input takes the browser's local time: 10 minutes after T0, in it.
    local = page.evaluate(
        """ms => { const d = new Date(ms); const p = (n) => String(n).padStart(2, "0");
        return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T`
          + `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; }""",
        T0 + 10 * 60_000,
    )
    page.fill("#browse-timestamp", local)
    page.select_option("#browse-order", "oldest")
    page.fill("#browse-limit", "3")
    page.click("#browse-load")
    expect(page.locator("#browse-range")).to_contain_text(f"showing 3 (10{DASH}12)")
    assert offsets_shown(page) == [10, 11, 12]
    expect(record_row(page, 10).locator("td.ts")).to_contain_text("2026-01-01 00:10:00.000")
    expect(record_row(page, 10).locator("td.ts")).to_contain_text("CreateTime")
    # Newest first from the same time: the records before it.
    page.select_option("#browse-order", "newest")
    page.click("#browse-load")
    expect(page.locator("#browse-range")).to_contain_text(f"showing 3 (7{DASH}9)")
    assert offsets_shown(page) == [9, 8, 7]
    page.click("#page-older")
    expect(page.locator("#browse-range")).to_contain_text(f"showing 3 (4{DASH}6)")
    assert offsets_shown(page) == [6, 5, 4]
    page.click("#page-newer")
    expect(page.locator("#browse-range")).to_contain_text(f"showing 3 (7{DASH}9)")


def test_search_finds_a_value_substring_across_chunks_with_the_progress_bar_at_100(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    topic = cp_cluster.create_topic(unique("haystack"))
    count = 12_000  # more than two chunks of 5,000
    values = [
        b'{"note": "a golden NEEDLE"}' if i in (42, 7_777) else f"hay {i}".encode()
        for i in range(count)
    ]
    produce(cp_cluster, topic, values, [T0 + i for i in range(count)])
    page = page_as("viewer")
    page.goto(f"/topics/{topic}/messages/")
    expect(page.locator("#browse-range")).to_contain_text("(12,000 records)")
    page.fill("#search-q", "golden needle")
    page.click("#search-run")
    bar = page.locator("#search-progress .progress")
    expect(bar).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#search-status")).to_contain_text(
        "scanned 12,000 / 12,000 · Done: 2 matches in 12,000 offsets"
    )
    matches = page.locator("#matches-table tbody tr")
    expect(matches).to_have_count(2)
    expect(matches.nth(0).locator("td.offset")).to_have_text("42")
    expect(matches.nth(1).locator("td.offset")).to_have_text("7777")
    expect(matches.nth(0).locator("pre.json")).to_contain_text('"note": "a golden NEEDLE"')
    expect(page.locator("#search-stop")).to_be_disabled()
    # A bounded range with a bad end is refused with the API's message.
    page.fill("#search-end", "20000")
    page.click("#search-run")
    expect(page.locator("#search-error")).to_contain_text("past the high watermark")


def test_live_tail_shows_a_record_produced_by_a_client_without_reload(
    page_as: Callable[[str], Page], cp_cluster: Cluster, unique: Callable[[str], str], shot: Shot
) -> None:
    topic = cp_cluster.create_topic(unique("tail"))
    produce(cp_cluster, topic, [b'{"n": 1}', b"second"], [T0, T0 + 1])
    page = page_as("operator")
    page.goto(f"/topics/{topic}/messages/")
    expect(page.locator("#records-table tbody tr")).to_have_count(2)
    page.check("#tail-toggle")
    expect(page.locator("#tail-status")).to_have_text("Live: partition 0, next offset 2")
    produce(cp_cluster, topic, [b'{"order": 42, "state": "paid"}'], [T0 + 2])
    fresh = record_row(page, 2)
    expect(fresh.locator("pre.json")).to_contain_text('"state": "paid"')
    expect(page.locator("#tail-status")).to_have_text("Live: partition 0, next offset 3")
    # Newest first: the new record is on top.
    assert offsets_shown(page) == [2, 1, 0]
    shot(page, "messages")
    page.uncheck("#tail-toggle")
    expect(page.locator("#tail-status")).to_be_hidden()
    assert re.search(r"/messages/$", page.url)

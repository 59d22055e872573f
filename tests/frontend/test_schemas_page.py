"""The Schemas pages in a real browser against the shared cluster's registry (daphne's own,
over the ``_schemas`` topic): an operator finds a subject, diffs two versions, is told why an
incompatible schema cannot be registered and registers a compatible one; a viewer reads the
same pages with no control that changes anything. The diff itself is also checked as pure
logic (``side_by_side``), which costs no browser."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from frontend.pages.schemas import DiffRow, pretty, side_by_side
from tests.controlplane_fixtures import Dashboard
from tests.frontend.schemas import avro_order, register

AMOUNT = {"name": "amount", "type": "double", "default": 0}


def test_side_by_side_pairs_equal_lines_and_marks_added_and_removed_ones() -> None:
    rows = side_by_side("a\nb\nc", "a\nB\nc\nd")
    assert rows == [
        DiffRow("equal", 1, "a", 1, "a"),
        DiffRow("replace", 2, "b", 2, "B"),
        DiffRow("equal", 3, "c", 3, "c"),
        DiffRow("insert", None, None, 4, "d"),
    ]
    assert side_by_side("x\ny", "x") == [
        DiffRow("equal", 1, "x", 1, "x"),
        DiffRow("delete", 2, "y", None, None),
    ]


def test_pretty_indents_json_schemas_and_keeps_protobuf_as_written() -> None:
    assert pretty('{"type":"string"}', "AVRO") == '{\n  "type": "string"\n}'
    assert pretty("syntax = 'proto3';", "PROTOBUF") == "syntax = 'proto3';"


@pytest.fixture
def subject(dashboard: Dashboard) -> str:
    """A subject with v1 (an id) and v2 (an id and an amount with a default)."""
    name = f"ui-orders-{uuid.uuid4().hex[:8]}-value"
    register(dashboard, name, avro_order())
    register(dashboard, name, avro_order(AMOUNT))
    return name


def test_operator_diffs_tests_and_registers_and_a_viewer_only_reads(
    page_as: Callable[[str], Page], subject: str, shot: Callable[[Page, str], Path]
) -> None:
    page = page_as("operator")
    page.goto("/")
    page.locator('nav.side a[data-nav="schemas"]').click()
    expect(page).to_have_url(re.compile(r"/schemas/$"))
    expect(page.locator("#global-level")).to_have_text(re.compile(r"[A-Z_]+"))
    expect(page.locator("#global-mode")).to_have_text("READWRITE")
    page.fill("#subject-search", subject)
    expect(page.locator("#subjects-table tbody tr[data-subject]:visible")).to_have_count(1)
    row = page.locator(f'#subjects-table tr[data-subject="{subject}"]')
    expect(row.locator('[data-col="version"]')).to_have_text("2")
    expect(row.locator('[data-col="type"]')).to_have_text("AVRO")
    expect(row.locator('[data-col="compatibility"]')).to_have_text(re.compile(r"^global: "))
    page.fill("#subject-search", subject + "-no-such")
    expect(page.locator("#subjects-table tr.no-match")).to_be_visible()
    page.fill("#subject-search", subject)
    row.locator("a").click()

    expect(page).to_have_url(re.compile(rf"/schemas/{subject}/$"))
    expect(page.locator("#versions-table tbody tr")).to_have_count(2)
    page.select_option("#diff-from", "1")
    page.select_option("#diff-to", "2")
    page.click("#diff-submit")
    expect(page).to_have_url(re.compile(r"from=1&to=2"))
    added = page.locator("#diff-table td.added")
    expect(added.filter(has_text='"amount"')).to_have_count(1)
    expect(added).to_have_count(5)  # "},", "{", and the field's three lines
    expect(page.locator("#diff-table td.removed")).to_have_count(0)
    shot(page, "schema-diff")

    register_button = page.locator("#compat-register")
    currency = {"name": "currency", "type": "string"}  # no default: BACKWARD refuses it
    page.fill("#compat-schema", avro_order(AMOUNT, currency))
    page.click("#compat-test")
    expect(page.locator("#compat-verdict")).to_have_text(re.compile("Incompatible"))
    expect(page.locator("#compat-messages li").first).to_contain_text("currency")
    expect(register_button).to_be_disabled()

    note = {"name": "note", "type": ["null", "string"], "default": None}
    page.fill("#compat-schema", avro_order(AMOUNT, note))
    page.click("#compat-test")
    expect(page.locator("#compat-verdict")).to_have_text(re.compile("^Compatible"))
    expect(register_button).to_be_enabled()
    page.fill("#compat-schema", avro_order(AMOUNT, note) + " ")  # edited: test again first
    expect(register_button).to_be_disabled()
    page.click("#compat-test")
    expect(register_button).to_be_enabled()
    register_button.click()
    expect(page.locator('#versions-table tr[data-version="3"]')).to_be_visible()
    expect(page.locator("#schema-text")).to_contain_text('"note"')

    viewer = page_as("viewer")
    viewer.goto(f"/schemas/{subject}/")
    expect(viewer.locator("#versions-table tbody tr")).to_have_count(3)
    expect(viewer.locator("#compat-panel")).to_have_count(0)
    expect(viewer.locator("#compat-register")).to_have_count(0)
    missing = viewer.goto(f"/schemas/{subject}-missing/")
    assert missing is not None and missing.status == 404
    expect(viewer.locator("main .error-text")).to_contain_text("not found")

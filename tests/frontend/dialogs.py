"""The dashboard's confirmation dialog, as the page tests drive it."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

__all__ = ["confirm", "confirm_saying"]


def confirm(page: Page, title: str | re.Pattern[str], typed: str | None = None) -> None:
    """Accept the dialog titled ``title`` (typing ``typed`` first where it asks for it)."""
    dialog = page.locator("#confirm-dialog")
    expect(dialog.locator("h3")).to_have_text(title)
    if typed is not None:
        dialog.locator("input").fill(typed)
    dialog.locator("button.confirm").click()
    expect(dialog).to_be_hidden()


def confirm_saying(page: Page, says: str) -> None:
    """Accept the dialog once it is open and contains ``says``."""
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(says)
    dialog.locator("button.confirm").click()

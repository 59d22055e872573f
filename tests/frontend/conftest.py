"""Browser fixtures: the dashboard served for real, driven by Playwright in Debian's chromium.

``dashboard`` (in ``tests.controlplane_fixtures``) runs the control plane the way ``make run``
does — daphne and ``manage.py monitor`` as subprocesses in front of the session's 3-broker
``cp_cluster`` — with one user per role. ``browser`` is headless ``/usr/bin/chromium``
(Playwright's Python package drives it through ``executable_path``; no browser is
downloaded). ``page_as("operator")`` opens a page signed in as that role (the login form is
used once per role; its cookies are reused). ``shot`` saves a screenshot under
``$WEIR_TEST_ARTIFACTS/screenshots/`` when that is set (``WEIR_TEST_ARTIFACTS=test-artifacts``
keeps them in the checkout), else in the run's temporary directory, removed when it ends.

Layers and grouping come from the fixtures (``tests/suite/layers.py``): these tests are
``browser`` and ``processes`` and run on one xdist worker with ``dashboard``.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

# Chromium's flags are the dashboard benchmark's: as the machine's notes say, without the
# background-networking flags chromium keeps trying to reach Google's hosts on a closed network.
from benchmarks.dashboard import CHROMIUM_ARGS
from tests.controlplane_fixtures import PASSWORD, Dashboard

CHROMIUM = "/usr/bin/chromium"


# Package scope: Playwright's sync API keeps an event loop running in this thread while it is
# open, so it must be closed before any later test runs an asyncio loop of its own.
@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def login(page: Page, dashboard: Dashboard, username: str, password: str = PASSWORD) -> None:
    page.goto(f"{dashboard.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")


@pytest.fixture
def page_as(browser: Browser, dashboard: Dashboard) -> Iterator[Callable[[str], Page]]:
    """``page_as("viewer")`` → a page signed in as that role, at the overview."""
    contexts = []

    def open_page(role: str) -> Page:
        if role not in dashboard.states:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            login(page, dashboard, role)
            page.wait_for_url(f"{dashboard.url}/")
            dashboard.states[role] = context.storage_state()
            context.close()
        context = browser.new_context(
            storage_state=dashboard.states[role],
            base_url=dashboard.url,
            viewport={"width": 1400, "height": 900},
        )
        # Seconds on a quiet machine; a loaded CI machine running four chains of process
        # tests beside the browser has taken over 15 s for a page's first load.
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where ``shot`` saves: ``$WEIR_TEST_ARTIFACTS/screenshots``, else a temporary folder."""
    kept = os.environ.get("WEIR_TEST_ARTIFACTS")
    return Path(kept) / "screenshots" if kept else tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def shot(screenshots: Path) -> Callable[[Page, str], Path]:
    """``shot(page, "overview")`` → ``<screenshots>/overview.png``."""
    folder = screenshots
    folder.mkdir(parents=True, exist_ok=True)

    def take(page: Page, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """When a browser test fails, say whether daphne still answers (and how fast) and show
    the control plane's log tails: a page that never loads is then told apart from a web app
    that hangs or a browser that does."""
    outcome = yield
    report = outcome.get_result()
    served = getattr(item, "funcargs", {}).get("dashboard")
    if report.when != "call" or not report.failed or not isinstance(served, Dashboard):
        return
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"{served.url}/login/", timeout=10) as answer:
            probe = f"GET /login/ -> {answer.status}"
    except (OSError, urllib.error.URLError) as exc:
        probe = f"GET /login/ failed: {exc!r}"
    probe += f" after {time.monotonic() - started:.2f} s"
    report.sections.append(("web app after the failure", f"{probe}\n{served.log_tail()}"))

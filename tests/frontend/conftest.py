"""Browser fixtures: the dashboard served for real, driven by Playwright in Debian's chromium.

``dashboard`` runs the control plane the way ``make run`` does — daphne serving
``controlplane.asgi:application`` and ``manage.py monitor`` — as subprocesses on a migrated
SQLite file, in front of the session's 3-broker ``cp_cluster``, with one user per role.
``browser`` is headless ``/usr/bin/chromium`` (Playwright's Python package drives it through
``executable_path``; no browser is downloaded). ``page_as("operator")`` opens a page signed
in as that role (the login form is used once per role; its cookies are reused). ``shot``
saves a screenshot under ``test-artifacts/screenshots/`` (``WEIR_TEST_ARTIFACTS`` moves it).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from playwright.sync_api import Browser, Page, sync_playwright

from tests.brokers.clients.conftest import ROOT, free_port
from tests.brokers.cluster.conftest import Cluster
from tests.controlplane_fixtures import PASSWORD

pytestmark = [pytest.mark.integration]

CHROMIUM = "/usr/bin/chromium"
# As the machine's notes say: without the background-networking flags chromium keeps trying
# to reach Google's hosts on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROLES = ("viewer", "operator", "admin")
ARTIFACTS = Path(os.environ.get("WEIR_TEST_ARTIFACTS", ROOT / "test-artifacts"))


@dataclass
class Dashboard:
    url: str
    env: dict[str, str]
    logs: Path
    states: dict[str, Any] = field(default_factory=dict)

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *args],
            cwd=ROOT,
            env=self.env,
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.stdout

    def log_tail(self) -> str:
        return "\n".join(
            f"--- {name}\n" + (self.logs / f"{name}.log").read_text()[-3000:]
            for name in ("daphne", "monitor")
        )


def _wait_for_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on {port} after {timeout}s")


@pytest.fixture(scope="session")
def dashboard(cp_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """daphne + the monitor on loopback, users ``viewer``/``operator``/``admin``."""
    root = tmp_path_factory.mktemp("dashboard")
    env = dict(
        os.environ,
        WEIR_REDIS_URL=settings.WEIR_REDIS_URL,
        WEIR_CLUSTER_ID=settings.WEIR_CLUSTER_ID,
        WEIR_SQLITE_PATH=str(root / "db.sqlite3"),
        DJANGO_SETTINGS_MODULE="controlplane.settings",
        WEIR_LAG_HISTORY_INTERVAL_S="1",
    )
    env.pop("DATABASE_URL", None)
    port = free_port()
    served = Dashboard(url=f"http://127.0.0.1:{port}", env=env, logs=root)
    served.manage("migrate", "--noinput")
    creates = "; ".join(
        f"user_create(username='{role}', password='{PASSWORD}', role='{role}')" for role in ROLES
    )
    served.manage("shell", "-c", f"from controlplane.services import user_create; {creates}")
    logs = {name: open(root / f"{name}.log", "w") for name in ("daphne", "monitor")}  # noqa: SIM115
    daphne = str(Path(sys.executable).parent / "daphne")
    processes = [
        subprocess.Popen(
            [daphne, "-b", "127.0.0.1", "-p", str(port), "controlplane.asgi:application"],
            cwd=ROOT,
            env=env,
            stdout=logs["daphne"],
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "monitor", "--interval", "0.5"],
            cwd=ROOT,
            env=env,
            stdout=logs["monitor"],
            stderr=subprocess.STDOUT,
        ),
    ]
    try:
        _wait_for_port(port, 30)
        yield served
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        for log in logs.values():
            log.close()


@pytest.fixture(scope="session")
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
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


@pytest.fixture
def shot() -> Callable[[Page, str], Path]:
    """``shot(page, "overview")`` → ``test-artifacts/screenshots/overview.png``."""
    folder = ARTIFACTS / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)

    def take(page: Page, name: str) -> Path:
        path = folder / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take

"""The jobs page in a real browser: run a job, follow it live, edit schedules, filter; roles.

Against the ``dashboard`` fixture: daphne, the monitor and a real Celery worker and beat on the
fixture's own database, in front of the session's 3-broker cluster. An operator runs retention
from the page and the row the page receives over ``/ws/ui/jobs/`` goes to ``succeeded`` with
its full bar and the runner's summary, no reload. A job's progress is drawn as the record
changes: the test writes a running job's record the way a worker does (through the ORM, in
the fixture's database) and watches the bar and message follow, then the end. A schedule
edited by an operator is what the API and a reload show. A viewer sees both tables and no
control.
"""

from __future__ import annotations

import base64
import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.controlplane.lag_helpers import now_ms, produce_at, wait_high_watermarks
from tests.controlplane_fixtures import PASSWORD, Dashboard
from tests.frontend.dialogs import confirm_saying as confirm
from tests.weir.cluster.conftest import Cluster

HOUR_MS = 3_600_000


def orm(dashboard: Dashboard, code: str) -> Any:
    """Run ``code`` in the served app's Django (its database); returns ``result`` as JSON."""
    script = (
        "import json\n"
        "from controlplane.models import AnalyticsResult, Job\n"
        f"{code}\n"
        "print('RESULT=' + json.dumps(result, default=str))\n"
    )
    out = dashboard.manage("shell", "-c", script)
    line = next(line for line in out.splitlines() if line.startswith("RESULT="))
    return json.loads(line.removeprefix("RESULT="))


def api(dashboard: Dashboard, method: str, path: str, body: Any = None) -> Any:
    request = urllib.request.Request(
        dashboard.url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(f"operator:{PASSWORD}".encode()).decode(),
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_operator_runs_retention_from_the_page_and_sees_it_succeed_live(
    page_as: Callable[[str], Page],
    dashboard: Dashboard,
    cp_cluster: Cluster,
    unique: Callable[[str], str],
    shot: Callable[[Page, str], Path],
) -> None:
    # Three full segments of hour-old records past a one-minute retention, and the active one.
    topic = cp_cluster.create_topic(
        unique("expiring"), config={"segment.bytes": "1024", "retention.ms": "60000"}
    )
    for _ in range(4):
        produce_at(cp_cluster, topic, 0, [now_ms() - HOUR_MS], value=b"x" * 600)
    wait_high_watermarks({(topic, 0): 4})
    page = page_as("operator")
    page.goto("/jobs/")
    expect(page.locator(".live-dot.on")).to_have_count(1)
    with page.expect_response(lambda r: r.url.endswith("/api/jobs/")) as posted:
        page.click('#run-now [data-run="retention"]')
        confirm(page, "retention")
    job = posted.value.json()
    assert posted.value.status == 202 and job["scheduled_by"] == "user:operator"
    expect(page.locator(".toast.ok")).to_contain_text(f"Job {job['id']} (retention) queued")
    # The worker runs it; the row arrives and changes over the socket, without a reload.
    row = page.locator(f'#jobs-table tr[data-job="{job["id"]}"]')
    expect(row).to_have_attribute("data-status", "succeeded", timeout=60_000)
    expect(row.locator('[data-col="status"]')).to_have_text("succeeded")
    expect(row.locator("[data-progress]")).to_have_attribute("aria-valuenow", "100")
    expect(row.locator("[data-message]")).to_contain_text(re.compile(r"[1-9]\d* of \d+ partitions"))
    expect(row.locator('[data-col="bytes"]')).to_have_text(re.compile(r"^[1-9][\d.]* (B|KB)$"))
    expect(row).to_contain_text("operator")
    shot(page, "jobs")


@pytest.fixture
def running_job(dashboard: Dashboard) -> Iterator[int]:
    """A compaction job record in the ``running`` state, as a worker leaves it mid-run."""
    job_id = orm(
        dashboard,
        "from django.utils import timezone\n"
        "job = Job.objects.create(kind='compaction', name='compaction', status='running',"
        " scheduled_by='beat:weir compaction', started_at=timezone.now(), progress=0.25,"
        " message='orders-3 compacted')\n"
        "result = job.pk",
    )
    yield job_id
    orm(dashboard, f"Job.objects.filter(pk={job_id}).delete(); result = 0")


def test_progress_and_the_end_of_a_running_job_are_pushed_to_the_page(
    page_as: Callable[[str], Page], dashboard: Dashboard, running_job: int
) -> None:
    page = page_as("viewer")
    page.goto("/jobs/?kind=compaction&status=running")
    expect(page.locator("#kind-filter")).to_have_value("compaction")
    row = page.locator(f'#jobs-table tr[data-job="{running_job}"]')
    expect(row).to_have_attribute("data-status", "running")
    expect(row.locator("[data-progress]")).to_have_attribute("aria-valuenow", "25")
    expect(row.locator("[data-message]")).to_have_text("25 % · orders-3 compacted")
    expect(row).to_contain_text("schedule weir compaction")
    # Only running compaction jobs are listed.
    for status in page.locator("#jobs-table tr[data-job]").evaluate_all(
        "rows => rows.map(r => r.dataset.status + ' ' + r.dataset.name)"
    ):
        assert status == "running compaction"

    orm(
        dashboard,
        f"Job.objects.filter(pk={running_job}).update(progress=0.75, message='orders-9 compacted')"
        "\nresult = 0",
    )
    expect(row.locator("[data-progress]")).to_have_attribute("aria-valuenow", "75")
    expect(row.locator("[data-message]")).to_have_text("75 % · orders-9 compacted")

    # The filter follows the socket: with "any status" the job stays listed as it finishes.
    page.select_option("#status-filter", "")
    expect(page).to_have_url(re.compile(r"/jobs/\?kind=compaction$"))
    orm(
        dashboard,
        "from django.utils import timezone\n"
        f"Job.objects.filter(pk={running_job}).update(status='failed', progress=0.75,"
        " finished_at=timezone.now(), error='broker 2 did not answer\\nmore detail')\n"
        "result = 0",
    )
    expect(row).to_have_attribute("data-status", "failed")
    expect(row.locator(".job-error")).to_have_text("broker 2 did not answer")
    expect(page.locator('[data-stat="running"]')).to_have_text(re.compile(r"^\d+$"))


@pytest.fixture
def record_sizes_schedule(dashboard: Dashboard) -> Iterator[dict[str, Any]]:
    """The record-sizes schedule, put back as it was afterwards."""
    schedules = api(dashboard, "GET", "/api/schedules/")["schedules"]
    schedule = next(s for s in schedules if s["job"] == "analytics:record-sizes")
    yield schedule
    api(
        dashboard,
        "PATCH",
        f"/api/schedules/{schedule['id']}/",
        {"interval_s": schedule["interval_s"], "enabled": schedule["enabled"]},
    )


def test_operator_edits_a_schedule_and_a_reload_shows_it(
    page_as: Callable[[str], Page],
    dashboard: Dashboard,
    record_sizes_schedule: dict[str, Any],
    shot: Callable[[Page, str], Path],
) -> None:
    schedule_id = record_sizes_schedule["id"]
    new_interval = record_sizes_schedule["interval_s"] + 1800
    page = page_as("operator")
    page.goto("/jobs/")
    row = page.locator(f'#schedules-table tr[data-schedule="{schedule_id}"]')
    save = row.locator("[data-save]")
    expect(save).to_be_disabled()
    row.locator("[data-interval]").fill(str(new_interval))
    row.locator("[data-enabled]").uncheck()
    expect(save).to_be_enabled()
    save.click()
    confirm(page, "switch it off")
    expect(page.locator(".toast.ok")).to_contain_text("analytics:record-sizes now runs every")
    expect(save).to_be_disabled()

    stored = api(dashboard, "GET", f"/api/schedules/{schedule_id}/")
    assert (stored["interval_s"], stored["enabled"]) == (new_interval, False)
    page.reload()
    expect(row.locator("[data-interval]")).to_have_value(str(new_interval))
    expect(row.locator("[data-enabled]")).not_to_be_checked()
    expect(row.locator('[data-col="every"]')).to_contain_text("every")
    shot(page, "jobs-schedules")


def test_a_bad_interval_is_refused_in_the_page_and_nothing_is_sent(
    page_as: Callable[[str], Page], record_sizes_schedule: dict[str, Any]
) -> None:
    page = page_as("operator")
    page.goto("/jobs/")
    row = page.locator(f'#schedules-table tr[data-schedule="{record_sizes_schedule["id"]}"]')
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.method))
    row.locator("[data-interval]").fill("0")
    row.locator("[data-save]").click()
    expect(page.locator(".toast.error")).to_contain_text("at least 1")
    assert "PATCH" not in requests


def test_viewer_sees_jobs_and_schedules_but_no_run_or_edit_control(
    page_as: Callable[[str], Page], dashboard: Dashboard
) -> None:
    page = page_as("viewer")
    page.goto("/jobs/")
    expect(page.locator("#schedules-table tr[data-schedule]").first).to_be_visible()
    expect(page.locator("#jobs-table tbody tr").first).to_be_visible()
    for control in ("#run-now", "[data-run]", "[data-save]", "[data-interval]", "[data-enabled]"):
        expect(page.locator(control)).to_have_count(0)
    expect(page.locator("main section button")).to_have_count(0)

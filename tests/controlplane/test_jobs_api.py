"""Jobs through ``/api/``: run one now, follow it to its end, edit the schedules beat obeys.

The end-to-end cases talk HTTP to the ``dashboard`` fixture (daphne + a real Celery worker and
beat on the fixture's database); validation cases use the in-process client.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from rest_framework.test import APIClient

from controlplane.jobs import ANALYTICS_JOBS, DEFAULT_SCHEDULES
from tests.controlplane_fixtures import PASSWORD, ROOT, Dashboard

pytestmark = [pytest.mark.integration, pytest.mark.django_db]


def _call(
    dashboard: Dashboard, method: str, path: str, body: Any = None, user: str = "operator"
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(dashboard.url + path, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    token = base64.b64encode(f"{user}:{PASSWORD}".encode()).decode()
    request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _wait_job(dashboard: Dashboard, job_id: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status, seen = _call(dashboard, "GET", f"/api/jobs/{job_id}/")
        assert status == 200, seen
        if seen["status"] in ("succeeded", "failed"):
            return seen
        time.sleep(0.3)
    raise AssertionError(
        f"job {job_id} did not finish in {timeout} s: {seen}\n{dashboard.log_tail()}"
    )


def _schedule(dashboard: Dashboard, job: str) -> dict[str, Any]:
    status, body = _call(dashboard, "GET", "/api/schedules/")
    assert status == 200, body
    return next(s for s in body["schedules"] if s["job"] == job)


def test_retention_run_from_the_api_is_queued_run_by_the_worker_and_recorded(
    dashboard: Dashboard,
) -> None:
    status, job = _call(dashboard, "POST", "/api/jobs/", {"name": "retention"})
    assert status == 202, job
    assert (job["status"], job["kind"], job["scheduled_by"]) == (
        "queued",
        "retention",
        "user:operator",
    )
    done = _wait_job(dashboard, job["id"])
    assert done["status"] == "succeeded", done
    assert done["progress"] == 1.0 and done["started_at"] and done["finished_at"]
    assert done["detail"]["partitions_examined"] >= 0
    status, listed = _call(dashboard, "GET", "/api/jobs/?kind=retention&limit=5", user="viewer")
    assert status == 200 and job["id"] in [j["id"] for j in listed["jobs"]]


def test_default_schedules_exist_and_an_edited_interval_makes_beat_run_the_job(
    dashboard: Dashboard,
) -> None:
    status, body = _call(dashboard, "GET", "/api/schedules/", user="viewer")
    assert status == 200
    assert {s["job"] for s in body["schedules"]} == set(DEFAULT_SCHEDULES)
    retention = _schedule(dashboard, "retention")
    assert retention["interval_s"] == DEFAULT_SCHEDULES["retention"] and retention["enabled"]

    status, changed = _call(
        dashboard, "PATCH", f"/api/schedules/{retention['id']}/", {"interval_s": 2}
    )
    assert status == 200 and changed["interval_s"] == 2, changed
    try:
        # Beat reloads changed schedules (django-celery-beat) and runs it every 2 s.
        deadline = time.monotonic() + 45
        beat_jobs: list[dict[str, Any]] = []
        while time.monotonic() < deadline and len(beat_jobs) < 2:
            _, listed = _call(dashboard, "GET", "/api/jobs/?name=retention&limit=50")
            beat_jobs = [j for j in listed["jobs"] if j["scheduled_by"] == "beat:weir retention"]
            time.sleep(0.5)
        assert len(beat_jobs) >= 2, (
            f"beat ran retention {len(beat_jobs)} times\n{dashboard.log_tail()}"
        )
        assert _wait_job(dashboard, beat_jobs[-1]["id"])["status"] == "succeeded"
    finally:
        status, restored = _call(
            dashboard,
            "PATCH",
            f"/api/schedules/{retention['id']}/",
            {"interval_s": DEFAULT_SCHEDULES["retention"]},
        )
        assert status == 200, restored
    assert _schedule(dashboard, "retention")["interval_s"] == DEFAULT_SCHEDULES["retention"]

    status, off = _call(
        dashboard, "PATCH", f"/api/schedules/{retention['id']}/", {"enabled": False}
    )
    assert status == 200 and off["enabled"] is False
    status, on = _call(dashboard, "PATCH", f"/api/schedules/{retention['id']}/", {"enabled": True})
    assert status == 200 and on["enabled"] is True


def test_viewers_cannot_run_jobs_or_edit_schedules(dashboard: Dashboard) -> None:
    status, body = _call(dashboard, "POST", "/api/jobs/", {"name": "retention"}, user="viewer")
    assert status == 403 and "operator" in body["message"], body
    schedule = _schedule(dashboard, "compaction")
    status, body = _call(
        dashboard, "PATCH", f"/api/schedules/{schedule['id']}/", {"enabled": False}, user="viewer"
    )
    assert status == 403, body


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"name": "vacuum"}, "no job named 'vacuum'"),
        ({"name": "analytics:nope"}, "no job named 'analytics:nope'"),
        ({}, "name"),
        ({"name": "retention", "topics": "orders"}, "topics"),
        ({"name": "analytics:traffic", "since_hours": -1}, "since_hours"),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_job_requests_get_a_json_error_naming_the_problem(
    operator: APIClient, body: Any, fragment: str
) -> None:
    response = operator.post("/api/jobs/", body, format="json")
    assert response.status_code == 400, response.content
    assert fragment in response.json()["message"]


@pytest.mark.parametrize(
    ("path", "status", "fragment"),
    [
        ("/api/jobs/?kind=backup", 400, "kind must be one of"),
        ("/api/jobs/?status=done", 400, "status must be one of"),
        ("/api/jobs/?limit=0", 400, "limit"),
        ("/api/jobs/?limit=x", 400, "limit"),
        ("/api/jobs/987654/", 404, "no job 987654"),
        ("/api/schedules/987654/", 404, "no job schedule 987654"),
        ("/api/analytics/nope/", 404, "no analytics job named 'nope'"),
        ("/api/analytics/traffic/", 404, "has not produced a result yet"),
    ],
)
def test_bad_reads_get_a_json_error(
    viewer: APIClient, path: str, status: int, fragment: str
) -> None:
    response = viewer.get(path)
    assert response.status_code == status, response.content
    assert fragment in response.json()["message"]


@pytest.mark.parametrize("body", [{"interval_s": 0}, {"interval_s": "often"}, {}, {"enabled": 3}])
def test_bad_schedule_edits_are_refused(operator: APIClient, body: dict[str, Any]) -> None:
    from controlplane.jobs import schedule_list

    schedule = schedule_list()[0]
    response = operator.patch(f"/api/schedules/{schedule['id']}/", body, format="json")
    assert response.status_code == 400, response.content
    assert schedule_list()[0] == schedule


def test_the_analytics_job_names_are_the_spark_jobs() -> None:
    from spark_jobs.jobs import JOBS

    assert set(ANALYTICS_JOBS) == set(JOBS)


def test_a_restarting_worker_fails_the_runs_it_left_behind(dashboard: Dashboard) -> None:
    """A worker killed mid-run leaves its job 'running'; when it starts again it marks it
    failed (jobs of other workers are left alone)."""
    name = f"orphans-{time.monotonic_ns() % 10**6}"
    hostname = f"{name}@{socket.gethostname()}"
    created = dashboard.manage(
        "shell",
        "-c",
        "from controlplane.models import Job; "
        f"a = Job.objects.create(kind='retention', name='retention', scheduled_by='cli', "
        f"status='running', worker='{hostname}'); "
        "b = Job.objects.create(kind='retention', name='retention', scheduled_by='cli', "
        "status='running', worker='someone-else@host'); "
        "print(a.pk, b.pk)",
    )
    mine, theirs = (int(x) for x in created.split()[-2:])  # after the shell's banner
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "controlplane", "worker", "-n", hostname],
        cwd=ROOT,
        env=dashboard.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        done = _wait_job(dashboard, mine, timeout=60)
        assert done["status"] == "failed" and "stopped before the job finished" in done["error"]
        _, other = _call(dashboard, "GET", f"/api/jobs/{theirs}/")
        assert other["status"] == "running"
    finally:
        worker.terminate()
        worker.wait(20)
        dashboard.manage(
            "shell",
            "-c",
            f"from controlplane.models import Job; Job.objects.filter(pk={theirs}).delete()",
        )

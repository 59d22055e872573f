"""Dashboard page loads with 1,000 topics and 100 consumer groups, in headless Chromium.

    python -m benchmarks.dashboard [--topics 1000] [--groups 100] [--runs 5] [--screenshots DIR]

Starts a private Redis and three Weir brokers, creates ``--topics`` topics (one partition,
RF 1, spread over the brokers; the first ``--groups`` get 20 records each) and ``--groups``
groups with committed offsets (each 15 records behind), then the control plane as
``make run`` starts it (daphne + ``manage.py monitor``) and Debian's chromium through
Playwright. For each page it prints the medians over ``--runs`` loads of:

* ``ttfb``  — time to the first byte of the HTML (server rendering),
* ``load``  — the browser's load event (HTML, CSS, JS including Plotly parsed and run),
* ``ready`` — until the page's tables have rows (the first render from its data),

and, as the peer in the same process tree, the time of the JSON API call that returns the same
list (``/kafka/v3/.../topics``, ``/api/groups/``), with the ratio ready / API. The target is
a page ready in under a second. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from benchmarks.common import admin_client
from benchmarks.peers import REPO_ROOT, free_port, install_signal_handlers, start_weir

PASSWORD = "bench-password-1"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
BEHIND = 15


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--screenshots", type=Path, help="save a screenshot of each page into this folder"
    )
    args = parser.parse_args(argv)
    if args.topics < 1 or args.groups < 0 or args.groups > args.topics or args.runs < 1:
        parser.error("need --topics >= 1, 0 <= --groups <= --topics and --runs >= 1")
    return args


def populate(bootstrap: str, topics: list[str], groups: int) -> None:
    admin = admin_client(bootstrap)
    for start in range(0, len(topics), 100):
        batch = [NewTopic(t, num_partitions=1, replication_factor=1) for t in topics[start:][:100]]
        for future in admin.create_topics(batch, operation_timeout=60).values():
            future.result(timeout=120)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        listed = admin.list_topics(timeout=10).topics
        if all(t in listed and listed[t].partitions[0].leader >= 0 for t in topics):
            break
        time.sleep(0.5)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for topic in topics[:groups]:
        for i in range(BEHIND + 5):
            producer.produce(topic, value=f'{{"n": {i}}}'.encode(), key=f"k{i}".encode())
    producer.flush(60)
    for index, topic in enumerate(topics[:groups]):
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"bench-group-{index:03d}"}
        )
        consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        consumer.close()


def start_control_plane(env: dict[str, str], workdir: Path, port: int) -> list[Any]:
    python = sys.executable
    env = dict(env, WEIR_SQLITE_PATH=str(workdir / "db.sqlite3"), DJANGO_DEBUG="0")

    def manage(*args: str) -> None:
        subprocess.run(
            [python, "manage.py", *args], cwd=REPO_ROOT, env=env, check=True, capture_output=True
        )

    manage("migrate", "--noinput")
    manage(
        "shell",
        "-c",
        "from controlplane.services import user_create; "
        f"user_create(username='bench', password='{PASSWORD}', role='viewer')",
    )
    logs = [open(workdir / f"{name}.log", "w") for name in ("daphne", "monitor")]  # noqa: SIM115
    daphne = str(Path(python).parent / "daphne")
    processes = [
        subprocess.Popen(
            [daphne, "-b", "127.0.0.1", "-p", str(port), "controlplane.asgi:application"],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs[0],
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(
            [python, "manage.py", "monitor"],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs[1],
            stderr=subprocess.STDOUT,
        ),
    ]
    return processes


def background_traffic(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """~2 MB/s into ``topic`` (for screenshots: traffic on the charts, a group's lag rising)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    while not stop.is_set():
        for i in range(200):
            producer.produce(topic, value=b"x" * 1000, key=f"k{i % 17}".encode())
        producer.poll(0)
        stop.wait(0.1)
    producer.flush(10)


def background_consumer(bootstrap: str, topic: str, stop: threading.Event) -> None:
    """A live group reading ``topic`` (bytes out on the charts, a group with a member)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "live-readers", "auto.offset.reset": "latest"}
    )
    consumer.subscribe([topic])
    while not stop.is_set():
        consumer.consume(500, timeout=0.2)
    consumer.close()


def take_screenshots(
    page: Any, base: str, pages: dict[str, str], folder: Path, traffic: list[threading.Thread]
) -> None:
    """Each page after half a minute of traffic, so the charts have something to show."""
    for thread in traffic:
        thread.start()
    page.goto(base + "/")
    page.wait_for_timeout(30_000)
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in pages.items():
        page.goto(base + path)
        page.wait_for_timeout(3_000)  # a few live ticks drawn
        page.screenshot(path=str(folder / f"{name.replace(' ', '-')}.png"))


def api_seconds(url: str, runs: int) -> float:
    token = base64.b64encode(f"bench:{PASSWORD}".encode()).decode()
    times = []
    for _ in range(runs + 1):
        request = urllib.request.Request(url, headers={"Authorization": f"Basic {token}"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:])


def measure_page(page: Any, url: str, runs: int) -> dict[str, float]:
    figures: dict[str, list[float]] = {"ttfb": [], "load": [], "ready": []}
    for run in range(runs + 1):  # the first load warms caches and is not counted
        started = time.perf_counter()
        page.goto(url, wait_until="load")
        page.wait_for_function(
            "document.querySelectorAll('main tbody tr, main .broker-card').length > 0",
            timeout=30_000,
        )
        ready = time.perf_counter() - started
        timing = page.evaluate(
            "(() => { const n = performance.getEntriesByType('navigation')[0];"
            " return [n.responseStart, n.loadEventEnd]; })()"
        )
        if run:
            figures["ttfb"].append(timing[0] / 1000)
            figures["load"].append(timing[1] / 1000)
            figures["ready"].append(ready)
    return {name: statistics.median(values) for name, values in figures.items()}


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    args = parse_args(argv)
    install_signal_handlers()
    topics = [f"bench-topic-{i:04d}" for i in range(args.topics)]
    with tempfile.TemporaryDirectory(prefix="weir-bench-ui-") as data_dir:
        handle = start_weir(free_port(), data_dir, brokers=3)
        processes: list[Any] = []
        stop = threading.Event()
        try:
            started = time.perf_counter()
            populate(handle.bootstrap, topics, args.groups)
            print(
                f"[weir] {args.topics} topics, {args.groups} groups in "
                f"{time.perf_counter() - started:.0f} s"
            )
            traffic = [
                threading.Thread(target=work, args=(handle.bootstrap, topics[0], stop), daemon=True)
                for work in (background_traffic, background_consumer)
            ]
            port = free_port()
            processes = start_control_plane(handle.env, Path(data_dir), port)
            base = f"http://127.0.0.1:{port}"
            cluster = handle.env["WEIR_CLUSTER_ID"]
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
                )
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                deadline = time.monotonic() + 60
                while True:  # daphne up
                    try:
                        page.goto(f"{base}/login/")
                        break
                    except Exception:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
                page.fill("#id_username", "bench")
                page.fill("#id_password", PASSWORD)
                page.click("button[type=submit]")
                page.wait_for_url(f"{base}/")
                # The monitor's first ticks: the groups list comes from its snapshots.
                page.wait_for_function(
                    f"document.querySelector('[data-stat=groups]').textContent === '{args.groups}'",
                    timeout=120_000,
                )
                group = "bench-group-000"
                pages = {
                    "overview": "/",
                    "brokers": "/brokers/",
                    "topics": "/topics/",
                    "topic detail": f"/topics/{topics[0]}/",
                    "messages": f"/topics/{topics[0]}/messages/",
                    "groups": "/groups/",
                    "group detail": f"/groups/{group}/",
                    "reassignments": "/reassignments/",
                }
                peers = {
                    "topics": f"/kafka/v3/clusters/{cluster}/topics",
                    "groups": "/api/groups/",
                }
                print(
                    f"\npage loads, {args.topics} topics, {args.groups} groups, 3 brokers, "
                    f"medians of {args.runs} (after one warm-up), headless chromium"
                )
                print(f"  {'page':<14}{'ttfb':>9}{'load':>9}{'ready':>9}   peer (JSON API)")
                for name, path in pages.items():
                    try:
                        result = measure_page(page, base + path, args.runs)
                    except Exception as exc:
                        print(f"  {name:<14} failed: {exc}".splitlines()[0])
                        continue
                    line = (
                        f"  {name:<14}{result['ttfb'] * 1000:7.0f}ms{result['load'] * 1000:7.0f}ms"
                        f"{result['ready'] * 1000:7.0f}ms"
                    )
                    if name in peers:
                        peer = api_seconds(base + peers[name], args.runs)
                        line += f"   {peer * 1000:6.0f}ms, ready/API {result['ready'] / peer:.1f}x"
                    print(line)
                if args.screenshots:
                    take_screenshots(page, base, pages, args.screenshots, traffic)
                browser.close()
        finally:
            stop.set()
            for process in processes:
                process.terminate()
                process.wait(10)
            handle.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

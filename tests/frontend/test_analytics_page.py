"""The analytics page in a real browser: every job's stored result drawn with Plotly.

Results are written straight into the served app's database (the ``dashboard`` fixture's, via
``manage.py shell``) in the shapes ``spark_jobs.analytics`` stores, so the page is tested on
known figures without waiting for Spark: each section draws its charts, the hot partition and
the hot key are flagged with the advice, percentiles and lag slopes are tabled. A job with no
result shows an empty state with "Run now" for operators, and its first result appears without
a reload when its job record says it succeeded (pushed over ``/ws/ui/jobs/``). Viewers get no
run button.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.controlplane_fixtures import Dashboard
from tests.frontend.test_jobs_pages import orm

MINUTES = [f"2026-01-01T00:0{m}:00.000+00:00" for m in range(4)]

TRAFFIC = {
    "summary": {
        "topics": 2,
        "records": 460,
        "bytes": 46_000,
        "per_topic": [
            {
                "topic": "orders",
                "partitions": 3,
                "records": 400,
                "bytes": 40_000,
                "first_minute": MINUTES[0],
                "last_minute": MINUTES[3],
                "peak_minute": MINUTES[2],
                "peak_records_per_minute": 200,
                "avg_records_per_minute": 100.0,
                "avg_bytes_per_second": 166.667,
            },
            {
                "topic": "clicks",
                "partitions": 1,
                "records": 60,
                "bytes": 6_000,
                "first_minute": MINUTES[0],
                "last_minute": MINUTES[3],
                "peak_minute": MINUTES[0],
                "peak_records_per_minute": 30,
                "avg_records_per_minute": 15.0,
                "avg_bytes_per_second": 25.0,
            },
        ],
    },
    "data": {
        "per_topic": {
            "orders": {
                "minute": MINUTES,
                "records": [50, 100, 200, 50],
                "bytes": [5000, 10000, 20000, 5000],
            },
            "clicks": {
                "minute": MINUTES,
                "records": [30, 10, 10, 10],
                "bytes": [3000, 1000, 1000, 1000],
            },
        },
        "per_partition": {},
        "charts": [],
    },
}

HOT_PARTITIONS = {
    "summary": {
        "rule": "a partition is hot when it has at least 100 records and its share of the "
        "topic's records or bytes exceeds min(2/n, (1 + 1/n)/2) for n partitions",
        "topics": [
            {
                "topic": "skewed",
                "partitions": 4,
                "records": 1000,
                "bytes": 100_000,
                "distinct_keys": 12,
                "max_share": 0.7,
                "skew": 2.8,
                "hot_partitions": [2],
                "hot_keys": ["user-42"],
            },
            {
                "topic": "even",
                "partitions": 2,
                "records": 400,
                "bytes": 40_000,
                "distinct_keys": 40,
                "max_share": 0.5,
                "skew": 1.0,
                "hot_partitions": [],
                "hot_keys": [],
            },
        ],
        "hot_partitions": [
            {
                "topic": "skewed",
                "partition": 2,
                "records": 700,
                "bytes": 70_000,
                "share": 0.7,
                "byte_share": 0.7,
                "fair_share": 0.25,
                "threshold": 0.5,
            },
        ],
        "hot_keys": [
            {"topic": "skewed", "key": "user-42", "records": 650, "bytes": 65_000, "share": 0.65},
        ],
        "advice": [
            "Key 'user-42' carries 65% of topic 'skewed': salt the key or use a compound key.",
            "Adding partitions spreads new keys but remaps existing ones.",
        ],
    },
    "data": {
        "partitions": {
            "skewed": {
                "partition": [0, 1, 2, 3],
                "records": [100, 100, 700, 100],
                "bytes": [10_000, 10_000, 70_000, 10_000],
                "share": [0.1, 0.1, 0.7, 0.1],
                "byte_share": [0.1, 0.1, 0.7, 0.1],
                "hot": [False, False, True, False],
                "fair_share": 0.25,
                "threshold": 0.5,
            },
            "even": {
                "partition": [0, 1],
                "records": [200, 200],
                "bytes": [20_000, 20_000],
                "share": [0.5, 0.5],
                "byte_share": [0.5, 0.5],
                "hot": [False, False],
                "fair_share": 0.5,
                "threshold": 0.75,
            },
        },
        "keys": {},
        "charts": [],
    },
}

RECORD_SIZES = {
    "summary": {
        "topics": [
            {
                "topic": "orders",
                "records": 400,
                "bytes": 40_000,
                "min": 20,
                "mean": 100.0,
                "p50": 90,
                "p90": 180,
                "p99": 950,
                "max": 1200,
            },
        ],
        "advice": [],
    },
    "data": {
        "histograms": {
            "orders": {
                "bucket": ["0-63 B", "64-255 B", "256-1023 B", "1-4 KB"],
                "lower_bytes": [0, 64, 256, 1024],
                "records": [100, 250, 45, 5],
            },
        },
        "charts": [],
    },
}

LAG_TRENDS = {
    "summary": {
        "rule": "a group's lag is growing when its fitted slope is positive over the window",
        "samples": 8,
        "groups": [
            {
                "group": "billing",
                "topic": "orders",
                "partitions": 3,
                "samples": 4,
                "from": MINUTES[0],
                "to": MINUTES[3],
                "first_lag": 10,
                "last_lag": 400,
                "max_lag": 400,
                "mean_lag": 190.0,
                "last_lag_seconds": 42.0,
                "slope_per_hour": 7800.0,
                "fitted_rise": 390.0,
                "growing": True,
            },
            {
                "group": "audit",
                "topic": "orders",
                "partitions": 3,
                "samples": 4,
                "from": MINUTES[0],
                "to": MINUTES[3],
                "first_lag": 5,
                "last_lag": 5,
                "max_lag": 6,
                "mean_lag": 5.25,
                "last_lag_seconds": 0.5,
                "slope_per_hour": 0.0,
                "fitted_rise": 0.0,
                "growing": False,
            },
        ],
        "growing": [
            {"group": "billing", "topic": "orders", "slope_per_hour": 7800.0, "last_lag": 400},
        ],
    },
    "data": {
        "series": {
            "billing": {
                "orders": {
                    "at": MINUTES,
                    "lag": [10, 100, 250, 400],
                    "lag_seconds": [1.0, 10.0, 25.0, 42.0],
                }
            },
            "audit": {
                "orders": {"at": MINUTES, "lag": [5, 6, 5, 5], "lag_seconds": [0.5, 0.5, 0.5, 0.5]}
            },
        },
        "charts": [],
    },
}

RESULTS = {
    "traffic": TRAFFIC,
    "hot-partitions": HOT_PARTITIONS,
    "record-sizes": RECORD_SIZES,
    "lag-trends": LAG_TRENDS,
}


def store_results(dashboard: Dashboard, outputs: dict[str, dict[str, Any]]) -> dict[str, int]:
    """Succeeded analytics jobs and their results, as the worker leaves them; the jobs' ids.

    All in one ``manage.py shell`` (a Django start costs seconds)."""
    return orm(
        dashboard,
        "from django.utils import timezone\n"
        f"outputs = json.loads({json.dumps(outputs)!r})\n"
        "result = {}\n"
        "for name, output in outputs.items():\n"
        "    job = Job.objects.create(kind='analytics', name=f'analytics:{name}',"
        " status='succeeded', scheduled_by='user:operator', started_at=timezone.now(),"
        " finished_at=timezone.now(), progress=1.0, message='done', rows_produced=10)\n"
        "    AnalyticsResult.objects.create(job=job, name=name, summary=output['summary'],"
        " data=output['data'])\n"
        "    result[name] = job.pk",
    )


def forget(dashboard: Dashboard, name: str) -> None:
    """No result (and no run) of job ``name`` any more."""
    orm(dashboard, f"Job.objects.filter(name='analytics:{name}').delete(); result = 0")


@pytest.fixture
def stored(dashboard: Dashboard) -> Iterator[dict[str, int]]:
    yield store_results(dashboard, RESULTS)


def plotted(page: Page, chart: str) -> Any:
    """The traces Plotly drew in ``chart`` (a CSS selector)."""
    return page.locator(chart).evaluate(
        "div => div.data.map(t => ({name: t.name, x: t.x, y: t.y,"
        " color: t.marker ? t.marker.color : null}))"
    )


def test_every_analytics_job_is_drawn_from_its_stored_result(
    page_as: Callable[[str], Page], stored: dict[str, int], shot: Callable[[Page, str], Path]
) -> None:
    page = page_as("viewer")
    page.goto("/analytics/")
    for name, job_id in stored.items():
        section = page.locator(f'[data-analytics="{name}"]')
        expect(section).to_have_attribute("data-state", "result")
        expect(section).to_have_attribute("data-job", str(job_id))
        expect(section.locator(".js-plotly-plot").first).to_be_visible()
    expect(page.locator("[data-run]")).to_have_count(0)

    # Traffic: records and bytes per minute, one line per topic.
    traffic = page.locator('[data-analytics="traffic"]')
    expect(traffic.locator('[data-figure="records"] .value')).to_have_text("460")
    records = plotted(page, '[data-analytics="traffic"] [data-chart="records"]')
    assert {t["name"]: t["y"] for t in records} == {
        "orders": [50, 100, 200, 50],
        "clicks": [30, 10, 10, 10],
    }
    by_bytes = plotted(page, '[data-analytics="traffic"] [data-chart="bytes"]')
    assert by_bytes[0]["y"] == [5000, 10000, 20000, 5000]

    # Hot partitions: partition 2 of "skewed" flagged and red, the hot key and the advice.
    hot = page.locator('[data-analytics="hot-partitions"]')
    expect(hot.locator('[data-hot="skewed/2"]')).to_contain_text("70.0 %")
    expect(hot.locator(".hot-keys")).to_contain_text("user-42")
    expect(hot.locator("[data-advice]")).to_contain_text("salt the key")
    bars = plotted(page, '[data-analytics="hot-partitions"] [data-chart="share-0"]')
    assert bars[0]["x"] == ["0", "1", "2", "3"]
    assert bars[0]["y"] == pytest.approx([10, 10, 70, 10])
    colors = bars[0]["color"]
    assert colors[2] != colors[0] and colors[0] == colors[1] == colors[3]
    expect(hot.locator("table.skew tr.hot")).to_have_count(1)

    # Record sizes: the histogram and the percentiles.
    sizes = page.locator('[data-analytics="record-sizes"]')
    histogram = plotted(page, '[data-analytics="record-sizes"] [data-chart="histogram"]')
    assert histogram[0]["y"] == [100, 250, 45, 5]
    expect(sizes.locator("table.percentiles")).to_contain_text("950 B")

    # Lag trends: one line per group and topic, the growing one flagged with its slope.
    lag = page.locator('[data-analytics="lag-trends"]')
    expect(lag.locator("[data-growing]")).to_contain_text("billing / orders")
    expect(lag.locator("[data-growing]")).to_contain_text("+7,800/h")
    lines = plotted(page, '[data-analytics="lag-trends"] [data-chart="lag"]')
    assert lines[0] == {
        "name": "billing / orders",
        "x": MINUTES,
        "y": [10, 100, 250, 400],
        "color": None,
    }
    expect(lag.locator("table.trends tr.hot")).to_contain_text("billing")
    shot(page, "analytics")


def test_a_job_without_result_shows_an_empty_state_until_its_first_result_arrives_live(
    page_as: Callable[[str], Page], dashboard: Dashboard, shot: Callable[[Page, str], Path]
) -> None:
    forget(dashboard, "record-sizes")
    page = page_as("operator")
    page.goto("/analytics/")
    section = page.locator('[data-analytics="record-sizes"]')
    expect(section).to_have_attribute("data-state", "empty")
    expect(section.locator("[data-empty]")).to_contain_text("No result yet")
    expect(section.locator('[data-run="analytics:record-sizes"]')).to_be_visible()
    expect(page.locator(".live-dot.on")).to_have_count(1)
    shot(page, "analytics-empty")

    with page.expect_response("**/api/analytics/record-sizes/") as fetched:
        job_id = store_results(dashboard, {"record-sizes": RECORD_SIZES})["record-sizes"]
    assert fetched.value.ok
    expect(section).to_have_attribute("data-state", "result")
    expect(section).to_have_attribute("data-job", str(job_id))
    expect(section.locator("table.percentiles")).to_contain_text("orders")


def test_operator_runs_a_job_from_the_page_and_its_result_replaces_the_shown_one(
    page_as: Callable[[str], Page], dashboard: Dashboard
) -> None:
    page = page_as("operator")
    page.goto("/analytics/")
    section = page.locator('[data-analytics="lag-trends"]')
    run = section.locator('[data-run="analytics:lag-trends"]')
    # Cancelling the confirmation sends nothing.
    requests: list[str] = []
    page.on("request", lambda r: requests.append(f"{r.method} {r.url}"))
    run.click()
    page.locator("#confirm-dialog button.cancel").click()
    assert not [r for r in requests if r.startswith("POST")]
    with page.expect_response(lambda r: r.url.endswith("/api/jobs/")) as posted:
        run.click()
        page.locator("#confirm-dialog button.confirm").click()
    job = posted.value.json()
    assert (posted.value.status, job["name"]) == (202, "analytics:lag-trends")
    expect(page.locator(".toast.ok")).to_contain_text(f"Job {job['id']} (analytics:lag-trends)")
    # The worker runs it on Spark; its result replaces the section's, without a reload.
    expect(section).to_have_attribute("data-job", str(job["id"]), timeout=120_000)
    expect(section.locator("[data-figure=samples]")).to_be_visible()

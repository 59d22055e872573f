"""The dashboard's reads of stored lag history: chart series and the status timeline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from groups.lag import lag_chart, status_timeline
from groups.models import GroupStatusSample, LagSample
from groups.selectors import webhook_list
from groups.services import webhook_create

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 24, 6, 0, 0, tzinfo=UTC)


def _tick(group: str, second: int, status: str, lags: dict[tuple[str, int], int]) -> None:
    at = T0 + timedelta(seconds=second)
    GroupStatusSample.objects.create(
        group=group, at=at, status=status, total_lag=sum(lags.values()), max_lag_seconds=0.0
    )
    for (topic, partition), lag in lags.items():
        LagSample.objects.create(
            group=group,
            topic=topic,
            partition=partition,
            at=at,
            committed_offset=0,
            high_watermark=lag,
            lag=lag,
            lag_seconds=0.0,
        )


def test_lag_chart_has_the_total_and_one_series_per_partition_oldest_first() -> None:
    _tick("g", 0, "OK", {("t", 0): 1, ("t", 1): 0})
    _tick("g", 5, "WARN", {("t", 0): 4, ("t", 1): 2})
    _tick("other", 5, "OK", {("t", 0): 100})
    chart = lag_chart(group="g", since=T0 - timedelta(minutes=1))
    assert chart["total"] == {
        "x": ["2026-11-24T06:00:00Z", "2026-11-24T06:00:05Z"],
        "y": [1, 6],
    }
    assert [(s["topic"], s["partition"], s["y"]) for s in chart["partitions"]] == [
        ("t", 0, [1, 4]),
        ("t", 1, [0, 2]),
    ]
    later = lag_chart(group="g", since=T0 + timedelta(seconds=1))
    assert later["total"]["y"] == [6] and len(later["partitions"][0]["x"]) == 1


def test_status_timeline_merges_equal_statuses_into_spans_that_meet() -> None:
    for second, status, lag in [
        (0, "OK", 0),
        (1, "OK", 3),
        (2, "ERR", 9),
        (3, "ERR", 5),
        (4, "OK", 0),
    ]:
        _tick("g", second, status, {("t", 0): lag})
    spans = status_timeline(group="g", since=T0)
    assert [(s["status"], s["samples"], s["peak_lag"]) for s in spans] == [
        ("OK", 2, 3),
        ("ERR", 2, 9),
        ("OK", 1, 0),
    ]
    # Each span ends where the next begins, so a timeline has no gaps.
    assert spans[0]["end"] == spans[1]["start"] == "2026-11-24T06:00:02Z"
    assert spans[1]["end"] == spans[2]["start"] == "2026-11-24T06:00:04Z"
    assert status_timeline(group="g", since=T0, limit=1) == spans[-1:]


def test_webhook_list_of_a_group_includes_the_all_groups_ones() -> None:
    mine = webhook_create(url="http://127.0.0.1:9/a", group="g")
    everyone = webhook_create(url="http://127.0.0.1:9/b")
    webhook_create(url="http://127.0.0.1:9/c", group="other")
    assert webhook_list(group="g") == [mine, everyone]
    assert len(webhook_list()) == 3

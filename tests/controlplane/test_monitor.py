"""The lag monitor on the shared real cluster: lag numbers, status, history, webhooks.

Records are produced with chosen timestamps and offsets committed at known positions with
confluent-kafka; one monitor tick must then report lag = HW - committed and lag in seconds =
the age of the first unconsumed record. Status changes are driven with the monitor's clock
(``tick(now_ms=...)``) instead of sleeping.
"""

from __future__ import annotations

import hashlib
import hmac
import http.server
import json
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from controlplane.cluster import gateway
from groups import lag
from groups.models import GroupStatusSample, LagSample, WebhookConfig
from groups.monitor import GroupLag, Monitor
from groups.services import lag_history_downsample
from tests.controlplane.lag_helpers import LaggingGroup, commit, lagging_group, now_ms
from tests.weir.cluster.conftest import Cluster, wait_until

pytestmark = [pytest.mark.integration]


def find(groups: list[GroupLag], name: str) -> GroupLag:
    found = [g for g in groups if g.group == name]
    assert found, f"group {name} not in {[g.group for g in groups]}"
    return found[0]


@pytest.fixture
def monitor(cp_cluster: Cluster) -> Iterator[Monitor]:
    found = Monitor(gateway(), history_interval_ms=0)
    yield found
    found.close()


@pytest.fixture
def lagging(cp_cluster: Cluster, unique: Callable[[str], str]) -> LaggingGroup:
    """A group 7 records behind on partition 0 (records 1 s apart, the oldest 60 s old) and
    caught up on partition 1."""
    return lagging_group(cp_cluster, topic=unique("lag"), group=unique("lag-group"))


@pytest.mark.django_db
def test_one_tick_measures_lag_in_offsets_and_seconds(
    monitor: Monitor, lagging: LaggingGroup
) -> None:
    before = now_ms()
    found = find(monitor.tick(), lagging.group)
    p0, p1 = found.partitions
    assert p0.topic == lagging.topic
    assert (p0.partition, p0.committed, p0.high_watermark, p0.lag) == (0, 3, 10, 7)
    # The first unconsumed record is offset 3, written at base + 3 s.
    expected_age = (before - (lagging.base + 3_000)) / 1000
    assert expected_age - 0.5 <= p0.lag_seconds <= expected_age + 5
    assert (p1.committed, p1.high_watermark, p1.lag, p1.lag_seconds) == (4, 4, 0, 0.0)
    assert found.total_lag == 7 and found.state == "Empty" and found.members == 0
    assert found.status == "OK" and found.complete == 0.0
    # The snapshot is kept for the API and new websocket subscribers ...
    snapshot = lag.group_snapshot(group=lagging.group)
    assert snapshot is not None and snapshot["total_lag"] == 7
    assert [p["lag"] for p in snapshot["partitions"]] == [7, 0]
    # ... and the history has one row per partition plus the group's status.
    rows = list(LagSample.objects.filter(group=lagging.group).values_list("partition", "lag"))
    assert sorted(rows) == [(0, 7), (1, 0)]
    assert GroupStatusSample.objects.get(group=lagging.group).total_lag == 7


@pytest.mark.django_db
def test_groups_on_one_partition_each_get_the_age_of_their_own_first_unconsumed_record(
    monitor: Monitor, lagging: LaggingGroup, cp_cluster: Cluster, unique: Callable[[str], str]
) -> None:
    ahead = unique("ahead")
    commit(cp_cluster, ahead, {(lagging.topic, 0): 8})
    before = now_ms()
    groups = monitor.tick()
    # Offsets 3 and 8 were written at base + 3 s and base + 8 s: five seconds apart.
    ages = {name: find(groups, name).partitions[0].lag_seconds for name in (lagging.group, ahead)}
    assert ages[lagging.group] >= (before - (lagging.base + 3_000)) / 1000 - 0.5
    assert ages[ahead] <= (now_ms() - (lagging.base + 8_000)) / 1000 + 0.5
    assert ages[lagging.group] - ages[ahead] == pytest.approx(5.0, abs=0.01)


@pytest.mark.django_db
def test_a_group_that_stopped_committing_with_lag_goes_stop_then_recovers(
    monitor: Monitor, lagging: LaggingGroup, cp_cluster: Cluster
) -> None:
    start = now_ms()
    assert find(monitor.tick(now_ms=start), lagging.group).status == "OK"
    later = find(monitor.tick(now_ms=start + 5_000), lagging.group)
    assert later.status == "ERR"
    assert [p.status for p in later.partitions] == ["STOP", "OK"]
    # The consumer catches up: lag 0 is always OK.
    commit(cp_cluster, lagging.group, {(lagging.topic, 0): 10})
    assert find(monitor.tick(now_ms=start + 6_000), lagging.group).status == "OK"


@pytest.mark.django_db
def test_rewound_offsets_are_rewind(
    monitor: Monitor, lagging: LaggingGroup, cp_cluster: Cluster
) -> None:
    start = now_ms()
    monitor.tick(now_ms=start)
    commit(cp_cluster, lagging.group, {(lagging.topic, 0): 1})
    found = find(monitor.tick(now_ms=start + 2_000), lagging.group)
    assert found.partitions[0].status == "REWIND" and found.status == "ERR"
    assert found.partitions[0].lag == 9


@pytest.mark.django_db
def test_downsampling_keeps_one_sample_per_minute_after_an_hour_and_drops_old_ones() -> None:
    now = timezone.now().replace(second=30, microsecond=0)

    def sample(at: Any, lag_value: int) -> LagSample:
        return LagSample(
            group="g-history",
            topic="t",
            partition=0,
            at=at,
            committed_offset=0,
            high_watermark=lag_value,
            lag=lag_value,
            lag_seconds=0.0,
        )

    two_hours_ago = (now - timedelta(hours=2)).replace(second=0)
    old = [sample(two_hours_ago + timedelta(seconds=s), s) for s in (0, 10, 20, 65, 70)]
    recent = [sample(now - timedelta(minutes=5, seconds=s), 1000 + s) for s in (0, 10, 20)]
    expired = [sample(now - timedelta(days=8), 5)]
    LagSample.objects.bulk_create(old + recent + expired)
    GroupStatusSample.objects.bulk_create(
        [
            GroupStatusSample(group="g-history", at=a, status="OK", total_lag=1)
            for a in (two_hours_ago, two_hours_ago + timedelta(seconds=5))
        ]
    )
    deleted = lag_history_downsample(now=now)
    left = list(LagSample.objects.filter(group="g-history").values_list("lag", flat=True))
    # Minute one keeps its last sample (20), minute two its last (70), recent ones all stay.
    assert sorted(left) == [20, 70, 1000, 1010, 1020]
    assert GroupStatusSample.objects.filter(group="g-history").count() == 1
    assert deleted == 5
    assert lag_history_downsample(now=now) == 0  # idempotent


@pytest.mark.django_db
def test_manage_py_monitor_once_runs_one_tick(lagging: LaggingGroup) -> None:
    call_command("monitor", "--once")
    snapshot = lag.group_snapshot(group=lagging.group)
    assert snapshot is not None and snapshot["total_lag"] == 7


class _Receiver(http.server.BaseHTTPRequestHandler):
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[tuple[dict[str, str], bytes]]]]:
    received: list[tuple[dict[str, str], bytes]] = []
    handler = type("Receiver", (_Receiver,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.django_db(transaction=True)
def test_webhook_receives_a_signed_status_change_alert(
    monitor: Monitor,
    lagging: LaggingGroup,
    operator: APIClient,
    viewer: APIClient,
    receiver: tuple[str, list[tuple[dict[str, str], bytes]]],
) -> None:
    url, received = receiver
    assert viewer.post("/api/webhooks/", {"url": url}, format="json").status_code == 403
    created = operator.post(
        "/api/webhooks/",
        {"url": url, "group": lagging.group, "min_status": "ERR", "secret": "s3cret"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    assert created.json()["has_secret"] is True and "secret" not in created.json()
    webhook_id = created.json()["id"]
    start = now_ms()
    monitor.tick(now_ms=start)
    monitor.tick(now_ms=start + 5_000)  # OK -> ERR (partition 0 stopped)
    wait_until(lambda: received, 10, "no webhook delivery")
    headers, body = received[0]
    alert = json.loads(body)
    assert alert["group"] == lagging.group
    assert (alert["status"], alert["previous_status"], alert["total_lag"]) == ("ERR", "OK", 7)
    worst = alert["worst_partitions"][0]
    assert (worst["partition"], worst["lag"], worst["status"]) == (0, 7, "STOP")
    expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert headers["X-Weir-Signature"] == expected

    def recorded() -> WebhookConfig | None:
        config = WebhookConfig.objects.get(id=webhook_id)
        return config if config.last_delivery_status == 204 else None

    wait_until(recorded, 10, "delivery status not recorded")
    detail = viewer.get(f"/api/webhooks/{webhook_id}/").json()
    assert detail["last_delivery_status"] == 204
    patched = operator.patch(f"/api/webhooks/{webhook_id}/", {"enabled": False}, format="json")
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    bad = operator.post("/api/webhooks/", {"url": "not a url"}, format="json")
    assert bad.status_code == 400 and "url" in bad.json()["message"]
    assert operator.delete(f"/api/webhooks/{webhook_id}/").status_code == 204
    assert viewer.get(f"/api/webhooks/{webhook_id}/").status_code == 404

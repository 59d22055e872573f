"""The replication throttle's token bucket and throttled-replica lists."""

from __future__ import annotations

from weir.replication.quota import UNLIMITED, ReplicationQuota, is_throttled


def test_bucket_starts_full_and_refills_at_the_rate() -> None:
    quota = ReplicationQuota()
    assert quota.remaining(rate=1000, now_s=10.0) == 1000
    quota.record(1500, rate=1000, now_s=10.0)  # one whole batch may overdraw
    assert quota.remaining(rate=1000, now_s=10.0) == -500
    assert not quota.available(rate=1000, now_s=10.4)
    assert quota.remaining(rate=1000, now_s=11.0) == 500
    # At most one second of burst accumulates.
    assert quota.remaining(rate=1000, now_s=100.0) == 1000


def test_no_rate_means_unlimited() -> None:
    quota = ReplicationQuota()
    quota.record(10**12, rate=UNLIMITED, now_s=0.0)
    assert quota.remaining(rate=UNLIMITED, now_s=0.0) == UNLIMITED


def test_throttled_replica_lists() -> None:
    assert is_throttled(("0:1", "1:2"), 0, 1)
    assert not is_throttled(("0:1", "1:2"), 0, 2)
    assert is_throttled(("*",), 7, 3)
    assert not is_throttled((), 0, 1)

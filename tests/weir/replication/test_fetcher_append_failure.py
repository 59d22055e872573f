"""A fetched batch the follower's log refuses: back off, log once, recover by itself.

The case that found it: a topic's ``segment.bytes`` lowered below the size of a batch the
leader already holds. Kafka's follower refuses that append too (``UnifiedLog.append`` checks
``segment.bytes`` for every append); Weir's fetcher then waits ``replica.fetch.backoff.ms``
before fetching the partition again (not a hot loop) and logs the failure once per reason,
and appends again once the cause is gone. Driven on a fake clock, without a leader.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.weir.log.conftest import FakeClock, make_batch
from weir.log.log import Log, LogConfig
from weir.partition import Partition
from weir.replication.fetcher import FetchSettings, _Followed

from .test_fetcher_configs import fetcher_from_1

SMALL = LogConfig(segment_bytes=600)


@pytest.fixture
def followed(tmp_path: Path) -> Iterator[_Followed]:
    log = Log.open(tmp_path / "t-0", config=SMALL, time_ms=FakeClock())
    partition = Partition(broker_id=2, topic="t", index=0, topic_id="x", log=log)
    yield _Followed(partition=partition, leader_epoch=0, truncated=True)
    log.close()


def fetched(records: bytes) -> SimpleNamespace:
    """One partition of a leader's Fetch answer."""
    return SimpleNamespace(error_code=0, records=records, high_watermark=1, log_start_offset=0)


def test_an_oversized_batch_is_retried_after_the_backoff_and_logged_once(
    followed: _Followed, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    fetcher = fetcher_from_1(clock, FetchSettings(backoff_ms=300))
    big = make_batch(count=4, value_size=1000, leader_epoch=0)
    assert len(big) > SMALL.segment_bytes
    with caplog.at_level(logging.DEBUG, logger="weir"):
        for _ in range(3):
            fetcher._apply(followed, fetched(big))
            assert followed.delayed_until_ms == clock.now + 300  # not fetched again before
            assert followed.truncated  # nothing diverged: no new epoch round trip
            clock.advance(300)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "exceeds segment.bytes 600" in errors[0], errors
    assert followed.partition.log_end_offset == 0

    caplog.clear()
    followed.partition.update_config(LogConfig())  # segment.bytes raised again
    with caplog.at_level(logging.INFO, logger="weir"):
        fetcher._apply(followed, fetched(big))
    assert followed.partition.log_end_offset == 4
    assert [r.getMessage() for r in caplog.records] == ["t-0: follower appends again"]
    assert followed.append_failure == ""

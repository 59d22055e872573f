"""Kafka's flush policy: ``flush.messages`` on append, ``flush.ms`` through ``flush_if_due``.

The recovery point is what a flush moves (every offset below it is fsynced), so each test
reads it to tell whether the log was flushed.
"""

from __future__ import annotations

from pathlib import Path

from weir.log.log import Log, LogConfig

from .conftest import FakeClock, LogFactory, append, make_batch, slice_bytes


def test_default_policy_never_flushes_on_append_or_with_time(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(LogConfig())
    for _ in range(50):
        append(log, make_batch(count=2))
    clock.advance(365 * 24 * 3600 * 1000)
    log.flush_if_due()
    assert log.recovery_point == 0


def test_flush_messages_flushes_once_that_many_offsets_are_unflushed(
    open_log: LogFactory,
) -> None:
    log = open_log(LogConfig(flush_messages=5))
    append(log, make_batch(count=2))
    append(log, make_batch(count=2))
    assert log.recovery_point == 0
    append(log, make_batch(count=1))  # 5 unflushed: flush
    assert log.recovery_point == log.log_end_offset == 5
    append(log, make_batch(count=4))
    assert log.recovery_point == 5


def test_flush_messages_applies_to_follower_appends(
    open_log: LogFactory, tmp_path: Path, clock: FakeClock
) -> None:
    leader = open_log(LogConfig())
    for _ in range(3):
        append(leader, make_batch(count=2))
    follower = Log.open(tmp_path / "follower-0", config=LogConfig(flush_messages=4), time_ms=clock)
    try:
        data = bytearray(slice_bytes(leader.read(0, 10**6)))
        follower.append_as_follower(data)
        assert follower.recovery_point == follower.log_end_offset == 6
    finally:
        follower.close()


def test_flush_ms_flushes_a_log_not_flushed_for_that_long(
    open_log: LogFactory, clock: FakeClock
) -> None:
    log = open_log(LogConfig(flush_ms=1_000))
    append(log, make_batch(count=3))
    clock.advance(999)
    log.flush_if_due()
    assert log.recovery_point == 0
    clock.advance(1)
    log.flush_if_due()
    assert log.recovery_point == 3
    assert log.last_flush_ms == clock.now
    # The time counts from the last flush, not from the last check.
    append(log, make_batch(count=1))
    clock.advance(500)
    log.flush_if_due()
    assert log.recovery_point == 3


def test_a_changed_config_applies_to_the_next_append(open_log: LogFactory) -> None:
    log = open_log(LogConfig())
    append(log, make_batch(count=3))
    log.update_config(LogConfig(flush_messages=1))  # log.flush.interval.messages is dynamic
    append(log, make_batch(count=1))
    assert log.recovery_point == 4

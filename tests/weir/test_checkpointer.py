"""The checkpointer's schedules on a fake clock, and the broker wiring their configs.

The replica manager is a recorder of which checkpoint was asked for: what each checkpoint
writes is ``ReplicaManager``'s business (tests/weir/log); here the point is *when*.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.weir.inprocess import build_settings
from tests.weir.log.conftest import FakeClock, append, idempotent_batch
from weir.broker import Broker
from weir.checkpointer import (
    HW_CHECKPOINT_INTERVAL_MS,
    LOG_START_CHECKPOINT_INTERVAL_MS,
    RECOVERY_CHECKPOINT_INTERVAL_MS,
    Checkpointer,
)
from weir.log.log import Log, LogConfig


@dataclass
class FlushRecorder:
    """A partition whose log records ``flush_if_due`` calls."""

    calls: list[str]
    topic: str = "t"
    index: int = 0

    @property
    def log(self) -> FlushRecorder:
        return self

    @property
    def producer_state(self) -> FlushRecorder:
        return self

    def time_ms(self) -> int:
        return 0

    def flush_if_due(self) -> None:
        self.calls.append(f"flush-check {self.topic}-{self.index}")

    def flush(self, *, only_if_due: bool = False) -> None:
        """``Partition.flush``: the checkpointer asks only for due flushes."""
        assert only_if_due
        self.flush_if_due()

    def remove_expired_producers(self, now_ms: int, max_age_ms: int) -> None:
        self.calls.append(f"expire {self.topic}-{self.index} older than {max_age_ms}")


@dataclass
class CheckpointRecorder:
    calls: list[str] = field(default_factory=list)
    fail: bool = False
    hosted: int = 0

    def partitions(self) -> list[FlushRecorder]:
        return [FlushRecorder(self.calls, index=i) for i in range(self.hosted)]

    def checkpoint(self, *, flush: bool = False, log_starts: bool = True) -> None:
        # The periodic checkpoint leaves the log starts to their own schedule.
        assert not log_starts
        self.calls.append("full" if flush else "plain")

    def checkpoint_log_starts(self) -> None:
        self.calls.append("log-starts")

    def checkpoint_high_watermarks(self) -> None:
        if self.fail:
            raise OSError(28, "No space left on device")
        self.calls.append("hw")


# Every periodic task off; a test turns on the ones it is about.
OFF = {
    "high_watermark_interval_ms": 0,
    "recovery_interval_ms": 0,
    "log_start_interval_ms": 0,
    "flush_check_interval_ms": 0,
    "producer_expiration_check_interval_ms": 0,
}


def only(replicas: object, clock: FakeClock, **options: Any) -> Checkpointer:
    """A checkpointer on ``clock`` running only the tasks ``options`` give a period."""
    return Checkpointer(replicas, time_ms=clock, **{**OFF, **options})  # type: ignore[arg-type]


def run_until(checkpointer: Checkpointer, clock: FakeClock, end_ms: int) -> None:
    """What ``run`` does, on the fake clock: tick at every due time up to ``end_ms``."""
    while (due := checkpointer.next_due_ms()) is not None and due <= end_ms:
        clock.now = due
        checkpointer.tick(due)


def test_default_writes_high_watermarks_every_5_s_and_flushes_once_a_minute() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = Checkpointer(replicas, time_ms=clock)  # type: ignore[arg-type]
    start = clock.now
    run_until(checkpointer, clock, start + RECOVERY_CHECKPOINT_INTERVAL_MS)
    ticks = RECOVERY_CHECKPOINT_INTERVAL_MS // HW_CHECKPOINT_INTERVAL_MS
    assert LOG_START_CHECKPOINT_INTERVAL_MS == RECOVERY_CHECKPOINT_INTERVAL_MS
    assert replicas.calls == ["hw"] * (ticks - 1) + ["full", "log-starts"]


def test_log_start_interval_sets_the_log_start_checkpoint_period() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = only(replicas, clock, log_start_interval_ms=4_000)
    start = clock.now
    assert checkpointer.next_due_ms() == start + 4_000
    run_until(checkpointer, clock, start + 12_000)
    assert replicas.calls == ["log-starts"] * 3


def test_log_starts_and_recovery_points_keep_their_own_periods() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = only(replicas, clock, recovery_interval_ms=3_000, log_start_interval_ms=2_000)
    run_until(checkpointer, clock, clock.now + 6_000)
    assert replicas.calls == ["log-starts", "full", "log-starts", "full", "log-starts"]


def test_high_watermark_interval_sets_the_hw_checkpoint_period() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = only(replicas, clock, high_watermark_interval_ms=2_000)
    start = clock.now
    assert checkpointer.next_due_ms() == start + 2_000
    checkpointer.tick(start + 1_999)
    assert replicas.calls == []
    run_until(checkpointer, clock, start + 10_000)
    assert replicas.calls == ["hw"] * 5


def test_non_positive_interval_means_no_periodic_hw_checkpoint() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = Checkpointer(
        replicas,  # type: ignore[arg-type]
        time_ms=clock,
        high_watermark_interval_ms=0,
    )
    assert checkpointer.next_due_ms() == clock.now + RECOVERY_CHECKPOINT_INTERVAL_MS
    run_until(checkpointer, clock, clock.now + 2 * RECOVERY_CHECKPOINT_INTERVAL_MS)
    assert replicas.calls == ["full", "log-starts"] * 2


def test_a_stalled_loop_writes_once_and_counts_on_from_now() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = only(replicas, clock, high_watermark_interval_ms=1_000)
    late = clock.now + 30_500
    checkpointer.tick(late)
    assert replicas.calls == ["hw"]
    assert checkpointer.next_due_ms() == late + 1_000


def test_a_failed_write_is_retried_at_the_next_due_time() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder(fail=True)
    checkpointer = only(replicas, clock, high_watermark_interval_ms=1_000)
    run_until(checkpointer, clock, clock.now + 1_000)  # logged, not raised
    replicas.fail = False
    run_until(checkpointer, clock, clock.now + 1_000)
    assert replicas.calls == ["hw"]


def test_recovery_interval_sets_the_flush_and_recovery_checkpoint_period() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder()
    checkpointer = only(replicas, clock, recovery_interval_ms=3_000)
    run_until(checkpointer, clock, clock.now + 9_000)
    assert replicas.calls == ["full"] * 3


def test_flusher_asks_every_log_whether_flush_ms_is_due() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder(hosted=2)
    checkpointer = only(replicas, clock, flush_check_interval_ms=500)
    run_until(checkpointer, clock, clock.now + 1_000)
    assert replicas.calls == ["flush-check t-0", "flush-check t-1"] * 2


def test_producer_expiration_runs_at_its_interval_with_the_current_max_age() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder(hosted=1)
    max_age = [5_000]
    checkpointer = only(
        replicas,
        clock,
        producer_expiration_check_interval_ms=1_000,
        producer_expiration_ms=lambda: max_age[0],
    )
    run_until(checkpointer, clock, clock.now + 1_000)
    max_age[0] = 7_000  # producer.id.expiration.ms is dynamic
    run_until(checkpointer, clock, clock.now + 1_000)
    assert replicas.calls == ["expire t-0 older than 5000", "expire t-0 older than 7000"]


def test_producers_idle_longer_than_the_expiration_are_forgotten(tmp_path: Path) -> None:
    wall = FakeClock()  # the log's clock; record timestamps are on it
    log = Log.open(tmp_path / "t-0", config=LogConfig(), time_ms=wall)
    try:
        append(log, idempotent_batch(7, 0, 0, base_timestamp=wall.now))
        wall.advance(3_000)
        append(log, idempotent_batch(8, 0, 0, base_timestamp=wall.now))
        replicas = SimpleNamespace(partitions=lambda: [SimpleNamespace(log=log)])
        clock = FakeClock()
        checkpointer = only(
            replicas,
            clock,
            producer_expiration_check_interval_ms=1_000,
            producer_expiration_ms=lambda: 5_000,
        )
        wall.advance(2_000)  # producer 7 idle for 5 s, producer 8 for 2 s
        run_until(checkpointer, clock, clock.now + 1_000)
        assert set(log.producer_state.producers) == {8}
    finally:
        log.close()


def test_default_flusher_never_runs() -> None:
    clock, replicas = FakeClock(), CheckpointRecorder(hosted=1)
    checkpointer = Checkpointer(replicas, time_ms=clock)  # type: ignore[arg-type]
    run_until(checkpointer, clock, clock.now + 24 * 3600 * 1000)
    assert not any(call.startswith("flush-check") for call in replicas.calls)


def test_nothing_periodic_leaves_nothing_due() -> None:
    checkpointer = only(CheckpointRecorder(), FakeClock(), flush_check_interval_ms=-1)
    assert checkpointer.next_due_ms() is None


@pytest.mark.parametrize(
    ("hw", "recovery", "flusher", "log_starts", "expected"),
    [
        (1234, 60_000, 2**63 - 1, 60_000, 1234),
        (0, 700, 2**63 - 1, 60_000, 700),
        (0, 0, 900, 60_000, 900),
        (0, 0, 2**63 - 1, 800, 800),
    ],
)
def test_broker_schedules_what_its_configs_say(
    tmp_path: Path, hw: int, recovery: int, flusher: int, log_starts: int, expected: int
) -> None:
    settings = build_settings(
        broker_id=1,
        data_dir=tmp_path / "broker-1",
        redis_url="redis://127.0.0.1:1",  # never connected: the broker is only built
        cluster_id="checkpointer-wiring",
        configs=[
            f"replica.high.watermark.checkpoint.interval.ms={hw}",
            f"log.flush.offset.checkpoint.interval.ms={recovery}",
            f"log.flush.scheduler.interval.ms={flusher}",
            f"log.flush.start.offset.checkpoint.interval.ms={log_starts}",
        ],
    )
    before = time.monotonic_ns() // 1_000_000
    broker = Broker(settings)
    after = time.monotonic_ns() // 1_000_000
    due = broker.checkpointer.next_due_ms()
    assert due is not None and before + expected <= due <= after + expected

"""ReplicaManager: one partition whose log cannot be opened, or whose disk fails while it
serves, goes offline alone; damaged checkpoints cost a longer recovery, never the broker;
logs open on the recovery threads."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from weir.log.checkpoint import read_offset_checkpoint
from weir.log.errors import KafkaStorageError
from weir.log.loader import CLEAN_SHUTDOWN_FILE
from weir.log.log import LogConfig
from weir.protocol.records import iter_batches
from weir.replica_manager import RECOVERY_POINT_FILE, Assignment, ReplicaManager

from .log.conftest import FakeClock, append, corrupt_batch_at, make_batch, payload


def assignment(topic: str, index: int) -> Assignment:
    return Assignment(
        topic=topic,
        index=index,
        topic_id=f"id-{topic}",
        leader=1,
        leader_epoch=0,
        partition_epoch=0,
        replicas=(1,),
        isr=(1,),
    )


def test_a_partition_that_cannot_be_opened_goes_offline_and_the_rest_serve(
    tmp_path: Path, caplog
) -> None:
    broken = tmp_path / "orders-1"
    broken.mkdir()
    (broken / "12.log").write_bytes(b"")  # not a segment name the loader can trust
    manager = ReplicaManager(
        broker_id=1, data_dir=tmp_path, time_ms=FakeClock(), log_config_for=lambda _: LogConfig()
    )
    wanted = [assignment("orders", 0), assignment("orders", 1), assignment("audit", 0)]
    with caplog.at_level(logging.ERROR):
        manager.reconcile(wanted, {"orders", "audit"}, now_ms=0)
    assert manager.get("orders", 1) is None
    assert manager.get("orders", 0).is_leader and manager.get("audit", 0).is_leader
    (cause,) = manager.offline_partitions().values()
    assert "12.log" in cause
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "orders-1 is offline on broker 1" in line and "12.log" in line
    # Later metadata updates do not retry (nor log again) until a restart...
    caplog.clear()
    manager.reconcile(wanted, {"orders", "audit"}, now_ms=0)
    assert not caplog.records and manager.get("orders", 1) is None
    # ...and a partition that moves away is forgotten.
    manager.reconcile(wanted[::2], {"orders", "audit"}, now_ms=0)
    assert manager.offline_partitions() == {}
    manager.close()


def test_a_partition_whose_disk_fails_while_serving_goes_offline_and_is_reported(
    tmp_path: Path, caplog
) -> None:
    """A corrupt batch met by a read (a real one, written to the file) takes only that
    partition offline: it leaves the hosted partitions, its waiters wake to a lost
    leadership, ``on_offline`` reports it, and it is closed as a crash would leave it."""
    config = LogConfig(index_interval_bytes=100)

    def new_manager(reported: list[tuple[str, int]]) -> ReplicaManager:
        return ReplicaManager(
            broker_id=1,
            data_dir=tmp_path,
            time_ms=FakeClock(),
            log_config_for=lambda _: config,
            on_offline=reported.append,
        )

    wanted = [assignment("orders", 0), assignment("audit", 0)]
    first = new_manager([])
    first.reconcile(wanted, {"orders", "audit"}, now_ms=0)
    for _ in range(6):
        buf, batches = payload(make_batch(count=2, value_size=200))
        first.get("orders", 0).append(buf, batches)
    segment = first.get("orders", 0).log.active_segment
    second_batch = [p for p, _ in segment.iter_headers()][1]
    first.close()
    corrupt_batch_at(segment.log_path, second_batch)

    reported: list[tuple[str, int]] = []
    manager = new_manager(reported)
    manager.reconcile(wanted, {"orders", "audit"}, now_ms=0)
    orders = manager.get("orders", 0)
    woken: list[bool] = []
    orders.add_waiter(lambda: woken.append(orders.is_leader))
    with caplog.at_level(logging.ERROR), pytest.raises(KafkaStorageError, match="CRC-32C"):
        orders.read(0, 1 << 20, max_offset=None)
    assert manager.get("orders", 0) is None and manager.is_offline("orders", 0)
    assert reported == [("orders", 0)] and woken == [False]
    assert "CRC-32C" in manager.offline_partitions()[("orders", 0)]
    (line,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert line.startswith("orders-0 is offline on broker 1") and "position" in line
    assert manager.get("audit", 0).is_leader  # the other partition serves on
    manager.reconcile(wanted, {"orders", "audit"}, now_ms=0)  # not reopened before a restart
    assert manager.get("orders", 0) is None
    manager.close()
    # Closed as a crash leaves it (the next start recovers it), its checkpoints kept.
    assert not (tmp_path / "orders-0" / CLEAN_SHUTDOWN_FILE).exists()
    assert ("orders", 0) in read_offset_checkpoint(tmp_path / RECOVERY_POINT_FILE)


def manager_for(
    data_dir: Path, log_config_for=lambda _: LogConfig(), threads: int = 1
) -> ReplicaManager:
    return ReplicaManager(
        broker_id=1,
        data_dir=data_dir,
        time_ms=FakeClock(),
        log_config_for=log_config_for,
        recovery_threads=lambda: threads,
    )


def test_logs_are_opened_on_num_recovery_threads_at_once(tmp_path: Path) -> None:
    """With 2 recovery threads two logs are opened concurrently: each open waits at a
    barrier for the other (with 1 thread the barrier would time out and break)."""
    barrier = threading.Barrier(2, timeout=20)
    threads: set[str] = set()

    def config_waiting_for_a_second_open(topic: str) -> LogConfig:
        threads.add(threading.current_thread().name)
        barrier.wait()
        return LogConfig()

    manager = manager_for(tmp_path, config_waiting_for_a_second_open, threads=2)
    manager.reconcile([assignment("orders", 0), assignment("orders", 1)], {"orders"}, now_ms=0)
    assert manager.get("orders", 0) and manager.get("orders", 1)
    assert len(threads) == 2 and all(n.startswith("log-recovery") for n in threads), threads
    manager.close()


def test_one_recovery_thread_opens_logs_one_after_another_in_the_caller(tmp_path: Path) -> None:
    threads: set[str] = set()

    def config(topic: str) -> LogConfig:
        threads.add(threading.current_thread().name)
        return LogConfig()

    manager = manager_for(tmp_path, config, threads=1)
    manager.reconcile([assignment("orders", i) for i in range(3)], {"orders"}, now_ms=0)
    assert threads == {threading.current_thread().name}
    manager.close()


def test_unreadable_checkpoints_cost_a_full_recovery_not_the_broker(tmp_path: Path, caplog) -> None:
    config = LogConfig(segment_bytes=2000, index_interval_bytes=200)
    manager = manager_for(tmp_path, lambda _: config)
    manager.reconcile([assignment("orders", 0)], {"orders"}, now_ms=0)
    log = manager.get("orders", 0).log
    for _ in range(30):
        append(log, make_batch(count=2, value_size=60), epoch=0)
    end = log.log_end_offset
    manager.close()  # clean: markers and checkpoints on disk
    segment = sorted((tmp_path / "orders-0").glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    position, header = list(iter_batches(data))[1]
    data[position + 70] ^= 0xFF  # a bit flipped below the last index entry after the close
    segment.write_bytes(bytes(data))
    for name in (
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
    ):
        (tmp_path / name).write_text("0\n3\norders 0\n")
    with caplog.at_level(logging.WARNING):
        manager = manager_for(tmp_path, lambda _: config)
        manager.reconcile([assignment("orders", 0)], {"orders"}, now_ms=0)
    lines = [r.getMessage() for r in caplog.records if r.name == "weir.replicas"]
    assert len(lines) == 3 and all("ignoring unreadable" in line for line in lines), lines
    assert "CRC-scanning every log from its start" in lines[0]
    # The clean-shutdown marker was not trusted: the flipped bit was found and cut.
    assert 0 < manager.get("orders", 0).log.log_end_offset == header.base_offset < end
    manager.close()


def test_a_missing_segment_takes_its_partition_offline(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=2000, index_interval_bytes=200)
    manager = manager_for(tmp_path, lambda _: config)
    manager.reconcile([assignment("orders", 0), assignment("orders", 1)], {"orders"}, now_ms=0)
    for index in (0, 1):
        for _ in range(30):
            append(manager.get("orders", index).log, make_batch(value_size=100), epoch=0)
    manager.close()
    middle = sorted((tmp_path / "orders-1").glob("*.log"))[1]
    middle.unlink()
    manager = manager_for(tmp_path, lambda _: config)
    manager.reconcile([assignment("orders", 0), assignment("orders", 1)], {"orders"}, now_ms=0)
    assert manager.get("orders", 0).log.log_end_offset == 30
    assert manager.get("orders", 1) is None
    (cause,) = manager.offline_partitions().values()
    assert "are missing" in cause and "delete the partition directory" in cause
    manager.close()


def test_the_flush_checkpoint_leaves_log_starts_to_their_own_schedule(tmp_path: Path) -> None:
    """``log.flush.start.offset.checkpoint.interval.ms`` is its own task in Kafka: the
    recovery-point checkpoint does not write ``log-start-offset-checkpoint``."""
    manager = manager_for(tmp_path)
    manager.reconcile([assignment("orders", 0)], {"orders"}, now_ms=0)
    log = manager.get("orders", 0).log
    for _ in range(5):
        append(log, make_batch(), epoch=0)
    manager.checkpoint_log_starts()
    log.delete_records_before(3)
    manager.checkpoint(flush=True, log_starts=False)
    starts = tmp_path / "log-start-offset-checkpoint"
    assert read_offset_checkpoint(starts) == {("orders", 0): 0}
    assert read_offset_checkpoint(tmp_path / RECOVERY_POINT_FILE) == {("orders", 0): 5}
    manager.checkpoint_log_starts()
    assert read_offset_checkpoint(starts) == {("orders", 0): 3}
    manager.close()

"""ReplicaManager: one partition whose log cannot be opened never stops the others."""

from __future__ import annotations

import logging
from pathlib import Path

from weir.log.log import LogConfig
from weir.replica_manager import Assignment, ReplicaManager

from .log.conftest import FakeClock


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

"""``log.cleaner.enable``: a broker whose cleaner is off never compacts its own logs.

Kafka does not start the log cleaner on such a broker (its compacted topics grow); Weir's
``compact`` command skips every partition there (an answer, not an error: the other replicas
are still compacted) and the inventory tells the driver. Housekeeping on a real replica
manager and log, without a cluster: the switch is the broker's alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.weir.log.conftest import FakeClock, append, make_batch
from tests.weir.test_replica_manager import assignment
from weir.config import BrokerConfig, effective_topic_config
from weir.housekeeping import Housekeeping
from weir.log.log import LogConfig
from weir.replica_manager import ReplicaManager

TOPIC = effective_topic_config(BrokerConfig(broker_id=1), {"cleanup.policy": "compact"})


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[ReplicaManager]:
    manager = ReplicaManager(
        broker_id=1,
        data_dir=tmp_path,
        time_ms=FakeClock(),
        log_config_for=lambda _: LogConfig(segment_bytes=400),
    )
    manager.reconcile([assignment("orders", 0)], {"orders"}, now_ms=0)
    partition = manager.get("orders", 0)
    for n in range(20):  # one key, overwritten: almost everything is dirty
        append(partition.log, make_batch([b"v%02d" % n], keys=[b"k"], value_size=0), epoch=0)
    partition.leader_state.maybe_advance_hw(partition.log.log_end_offset)
    yield manager
    manager.close()


@pytest.mark.parametrize("enabled", [True, False])
async def test_compact_runs_only_where_the_cleaner_is_enabled(
    replicas: ReplicaManager, enabled: bool
) -> None:
    housekeeping = Housekeeping(
        replicas, topic_config=lambda _: TOPIC, time_ms=FakeClock(), cleaner_enabled=enabled
    )
    log = replicas.get("orders", 0).log
    size = log.size_bytes
    assert housekeeping.inventory(None)["cleaner_enabled"] is enabled
    answer = await housekeeping.compact({"topic": "orders", "partition": 0})
    if enabled:
        assert answer["stats"]["records_kept"] < answer["stats"]["records_read"]
        assert log.size_bytes < size
    else:
        assert answer["stats"] is None
        assert answer["skipped"] == "log.cleaner.enable=false on this broker"
        assert log.size_bytes == size
        assert replicas.cleaner_checkpoint("orders", 0) is None

"""``manage.py mirror-maker`` as a user runs it: real processes with one properties file.

Two processes share a flow between two in-process Weir clusters while a producer writes to
the source; one is killed with SIGKILL mid-stream. Every record the source acknowledged must
be on the target (duplicates are allowed only for what the dead process had copied but not
committed), the survivor takes over the dead one's partitions after the source group's
session timeout, and SIGTERM stops the survivor cleanly. Also: a bad file stops the command
with a message naming the key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.weir.inprocess import ThreadedBroker
from tests.weir.mirror.conftest import mirror_cluster
from tests.weir.mirror.test_maker import read_values, target_count, wait_for
from weir.metadata.redis_url import sync_client
from weir.mirror.status import StatusStore

ROOT = Path(__file__).resolve().parents[2]
PARTITIONS = 4


@pytest.fixture
def east(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with mirror_cluster("east", redis_server, tmp_path) as broker:
        yield broker


@pytest.fixture
def west(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with mirror_cluster("west", redis_server, tmp_path) as broker:
        yield broker


def mirror_maker(
    properties: Path, log: Path, redis_url: str, cluster_id: str, *args: str
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WEIR_REDIS_URL": redis_url, "WEIR_CLUSTER_ID": cluster_id}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "mirror-maker", str(properties), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )


def process_id(log: Path) -> str:
    """The process id a mirror-maker prints first (``mirror-maker <id>: <flows>``)."""
    for line in log.read_text().splitlines():
        if line.startswith("mirror-maker "):
            return line.split()[1].rstrip(":")
    raise AssertionError(f"no process id in {log}")


class Load:
    """An idempotent acks=all producer writing 0, 1, 2 ... until stopped; what was acked."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
        )
        self.acked: set[int] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        i = 0
        while not self.stop.is_set():
            for _ in range(5):  # about 500 records/s
                value = i

                def done(err: object, _msg: object, value: int = value) -> None:
                    if err is None:
                        self.acked.add(value)

                self.producer.produce(
                    "orders",
                    value=str(value).encode(),
                    partition=value % PARTITIONS,
                    on_delivery=done,
                )
                i += 1
            self.producer.poll(0.01)
        self.producer.flush(30)

    def finish(self) -> set[int]:
        self.stop.set()
        self.thread.join(60)
        return self.acked


def test_a_killed_process_loses_nothing_and_the_other_takes_over(
    east: ThreadedBroker, west: ThreadedBroker, redis_server: str, tmp_path: Path
) -> None:
    admin = AdminClient({"bootstrap.servers": east.bootstrap})
    admin.create_topics([NewTopic("orders", PARTITIONS, 1)])["orders"].result(30)
    properties = tmp_path / "connect-mirror-maker.properties"
    properties.write_text(
        "\n".join(
            [
                "clusters = east, west",
                f"east.bootstrap.servers = {east.bootstrap}",
                f"west.bootstrap.servers = {west.bootstrap}",
                "east->west.enabled = true",
                "east->west.topics = orders",
                "refresh.topics.interval.seconds = 1",
                "replication.factor = 1",
                "offset-syncs.topic.replication.factor = 1",
                "checkpoints.topic.replication.factor = 1",
                "heartbeats.topic.replication.factor = 1",
                "emit.checkpoints.enabled = false",
                "emit.heartbeats.enabled = false",
                # The broker's minimum: a dead process's partitions move after 6 s.
                "east.consumer.session.timeout.ms = 6000",
            ]
        )
        + "\n"
    )
    cluster_id = f"mirror-proc-{os.getpid()}"
    store = StatusStore(sync_client(redis_server), cluster_id)
    logs = [tmp_path / "mm-1.log", tmp_path / "mm-2.log"]
    procs = [mirror_maker(properties, log, redis_server, cluster_id) for log in logs]
    load = Load(east.bootstrap)
    try:

        def owners() -> dict[str, set[int]]:
            return {
                s.process_id: {p.partition for p in s.partitions}
                for s in store.read_all()
                if s.flow == "east->west"
            }

        wait_for(
            lambda: len(owners()) == 2 and all(owners().values()),
            "both processes to own partitions",
        )
        wait_for(lambda: target_count(west.bootstrap, "east.orders", PARTITIONS) > 500, "copies")
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait(10)
        # The survivor owns every partition once the dead member's session expired.
        survivor = process_id(logs[1])
        wait_for(
            lambda: owners().get(survivor) == set(range(PARTITIONS)),
            "the survivor to take every partition",
            timeout=60,
        )
        time.sleep(1)
        acked = load.finish()
        values: list[int] = []

        def caught_up() -> bool:
            values[:] = read_values(west.bootstrap, "east.orders", PARTITIONS)
            return acked <= set(values)

        try:
            wait_for(caught_up, "every acknowledged record on the target", timeout=30)
        except AssertionError:
            missing = sorted(acked - set(values))
            raise AssertionError(
                f"{len(missing)} acknowledged records missing: {missing[:10]}"
            ) from None
        assert len(acked) > 1500
        # Only the dead process's uncommitted batch can repeat: a few batches at most.
        assert len(values) - len(set(values)) <= 4 * 500
        procs[1].send_signal(signal.SIGTERM)
        assert procs[1].wait(60) == 0
        assert "mirror-maker stopped" in logs[1].read_text()
        assert survivor not in owners()  # a clean stop removes its status at once
    finally:
        load.stop.set()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def test_a_bad_properties_file_names_the_key(tmp_path: Path) -> None:
    properties = tmp_path / "mm2.properties"
    properties.write_text("clusters = east, west\neast.bootstrap.servers = 127.0.0.1:1\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "mirror-maker", str(properties)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 1
    assert "west.bootstrap.servers: required for cluster 'west'" in done.stderr

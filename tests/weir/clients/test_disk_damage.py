"""A real broker restarted over a damaged data directory (issue 16): each kind of damage is
repaired per partition with one warning line, every partition serves what is valid to a real
Kafka client, and the process never stops.

Process tests because the point is the real ``runbroker`` start path (the replica manager's
recovery threads, checkpoints read from the data directory root, the clean-shutdown markers
a SIGTERM leaves). One broker per shutdown kind serves the whole module: it writes one topic
per damage kind, is stopped (SIGTERM, or kill -9), has each topic's files damaged, and is
started once; each test then checks one kind. Torn and garbage tails are covered by
``test_crash_recovery``; a missing segment (the partition goes offline) by
``tests/weir/cluster/test_missing_segment``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.weir.clients.conftest import BrokerProcess
from tests.weir.clients.helpers import consume_confluent, create_topic
from tests.weir.clients.test_crash_recovery import (
    CRASH_CONFIGS,
    read_partition,
    restart_after_crash,
    watermarks,
)
from weir.protocol.records import iter_batches

pytestmark = pytest.mark.integration

BATCHES, PER_BATCH = 10, 10
RECORDS = BATCHES * PER_BATCH
# Several segments of two or three batches, and an index entry for most batches.
TOPIC_CONFIG = {"segment.bytes": "700", "index.interval.bytes": "100"}


def segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def batch_positions(path: Path) -> list[tuple[int, int]]:
    """``(position, base offset)`` of each batch of a segment file."""
    return [(pos, header.base_offset) for pos, header in iter_batches(path.read_bytes())]


def flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))


# Each damage gets a topic's partition directory after the stop and returns how many records
# (from offset 0) must survive, and text the one warning line about it must contain.
Damage = Callable[[Path], tuple[int, str | None]]


def index_missing(d: Path) -> tuple[int, str]:
    for path in d.glob("*.index"):
        path.unlink()
    return RECORDS, "rebuilt the indexes"


def index_garbage(d: Path) -> tuple[int, str]:
    segments(d)[0].with_suffix(".index").write_bytes(b"\x7f" * 13)  # not whole entries
    return RECORDS, "rebuilt the indexes"


def timeindex_missing(d: Path) -> tuple[int, str]:
    segments(d)[1].with_suffix(".timeindex").unlink()
    return RECORDS, "rebuilt the indexes"


def timeindex_garbage(d: Path) -> tuple[int, str]:
    # Timestamps that go backwards: not a time index.
    segments(d)[0].with_suffix(".timeindex").write_bytes(b"\x00" * 11 + b"\x09" + b"\x00" * 12)
    return RECORDS, "rebuilt the indexes"


def epochs_missing(d: Path) -> tuple[int, str]:
    (d / "leader-epoch-checkpoint").unlink()
    return RECORDS, "leader-epoch-checkpoint is missing; rebuilt"


def epochs_garbage(d: Path) -> tuple[int, str]:
    (d / "leader-epoch-checkpoint").write_bytes(b"\x00garbage\xff")
    return RECORDS, "leader-epoch-checkpoint"


def snapshot_truncated(d: Path) -> tuple[int, str]:
    latest = sorted(d.glob("*.snapshot"))[-1]
    latest.write_bytes(latest.read_bytes()[:9])
    return RECORDS, "deleting unreadable producer snapshot"


def leftovers(d: Path) -> tuple[int, str]:
    first, second = segments(d)[:2]
    (d / (first.name + ".deleted")).write_bytes(b"old")
    (d / (second.name + ".cleaned")).write_bytes(b"half written")
    # A compaction that renamed its output to .swap and crashed: the swap is finished.
    (d / (first.name + ".swap")).write_bytes(first.read_bytes() + second.read_bytes())
    return RECORDS, "finished an interrupted delete or compaction"


def torn_middle_segment(d: Path) -> tuple[int, str]:
    middle = segments(d)[2]
    position, base = batch_positions(middle)[-1]
    with open(middle, "r+b") as f:
        f.truncate(position + 30)  # a restored copy cut this segment short
    return base, "later segment(s)"


def crc_in_an_old_segment_tail(d: Path) -> tuple[int, str]:
    """After a clean shutdown only what follows each segment's last index entry is checked
    (Kafka checks nothing): a bad CRC in an old segment's last batch is found."""
    old = segments(d)[1]
    position, base = batch_positions(old)[-1]
    flip_byte(old, position + 70)
    return base, "failed its CRC-32C check"


def crc_in_an_old_segment(d: Path) -> tuple[int, str]:
    """Below the last index entry: found only because the unreadable recovery-point
    checkpoint makes the broker CRC-scan every log from its start."""
    old = segments(d)[1]
    position, base = batch_positions(old)[0]
    flip_byte(old, position + 70)
    return base, "failed its CRC-32C check"


COMMON: dict[str, Damage] = {
    "index-missing": index_missing,
    "index-garbage": index_garbage,
    "timeindex-missing": timeindex_missing,
    "timeindex-garbage": timeindex_garbage,
    "epochs-missing": epochs_missing,
    "epochs-garbage": epochs_garbage,
    "snapshot-truncated": snapshot_truncated,
    "leftovers": leftovers,
    "torn-middle": torn_middle_segment,
    "crc-old-segment": crc_in_an_old_segment_tail,
}


def unremarked(damage: Damage) -> Damage:
    """After a crash the CRC scan from the recovery point (here: from the start) rebuilds
    every index as a matter of course, and the producer state is replayed from offset 0
    without reading the damaged snapshot: repaired or harmless, nothing to report."""

    def damaged(d: Path) -> tuple[int, str | None]:
        return damage(d)[0], None

    return damaged


DAMAGES: dict[str, dict[str, Damage]] = {
    "clean": COMMON,
    # kill -9 and unreadable checkpoints in the data directory root as well.
    "unclean": {
        **COMMON,
        **{
            kind: unremarked(COMMON[kind])
            for kind in (
                "index-missing",
                "index-garbage",
                "timeindex-missing",
                "timeindex-garbage",
                "snapshot-truncated",
            )
        },
        "crc-old-segment": crc_in_an_old_segment,
    },
}
ROOT_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
)


@dataclass
class Restarted:
    broker: BrokerProcess
    shutdown: str
    # topic -> (records that must survive, text of its warning line; None: no line)
    expected: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    # Where the broker's log file stood at the restart.
    log_from: int = 0

    @property
    def log(self) -> str:
        """What the broker logged from the restart on, read now: logs are loaded (and their
        repairs logged) on the recovery threads, possibly after the listener is up."""
        return self.broker.log_text()[self.log_from :]

    def warnings_about(self, topic: str) -> list[str]:
        return [
            line for line in self.log.splitlines() if " WARNING " in line and f"/{topic}-0" in line
        ]


def write(broker: BrokerProcess, topic: str) -> None:
    """Ten batches of ten records ``record-<offset>``, from an idempotent producer (so the
    producer snapshots have something in them)."""
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 50, "enable.idempotence": True}
    )
    for b in range(BATCHES):
        for i in range(PER_BATCH):
            producer.produce(topic, value=b"record-%d" % (b * PER_BATCH + i), partition=0)
        assert producer.flush(20) == 0


@pytest.fixture(scope="module", params=["clean", "unclean"])
def restarted(
    request: pytest.FixtureRequest, redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Restarted]:
    shutdown: str = request.param
    root = tmp_path_factory.mktemp(f"damage-{shutdown}")
    broker = BrokerProcess(
        broker_id=1,
        data_dir=root / "broker-1",
        redis_url=redis_server,
        cluster_id=f"test-{uuid.uuid4().hex[:12]}",
        # Two recovery threads: the damaged logs are opened side by side.
        configs=[*CRASH_CONFIGS, "num.recovery.threads.per.data.dir=2"],
        log_path=root / "broker-1.log",
    )
    broker.start()
    try:
        damages = DAMAGES[shutdown]
        for topic in damages:
            create_topic(broker.bootstrap, topic, **TOPIC_CONFIG)
            write(broker, topic)
        create_topic(broker.bootstrap, "intact", partitions=2, **TOPIC_CONFIG)
        write(broker, "intact")
        if shutdown == "clean":
            assert broker.stop() == 0
        else:
            broker.kill9()
        restarted = Restarted(broker, shutdown)
        for topic, damage in damages.items():
            directory = broker.data_dir / f"{topic}-0"
            assert len(segments(directory)) >= 4, f"{topic}: too few segments to damage"
            restarted.expected[topic] = damage(directory)
        if shutdown == "unclean":
            for name in ROOT_CHECKPOINTS:
                (broker.data_dir / name).write_bytes(b"0\n7\ntorn")
        restarted.log_from = len(broker.log_text())
        if shutdown == "clean":
            broker.start()
        else:
            restart_after_crash(broker)
        yield restarted
    finally:
        broker.stop()


@pytest.mark.parametrize("topic", sorted(COMMON))
def test_damaged_partition_serves_what_is_valid_after_one_warning(
    restarted: Restarted, topic: str
) -> None:
    broker = restarted.broker
    survivors, text = restarted.expected[topic]
    assert broker.alive()
    assert watermarks(broker.bootstrap, topic, 0) == (0, survivors)
    assert read_partition(broker.bootstrap, topic, 0) == [
        (i, b"record-%d" % i) for i in range(survivors)
    ]
    lines = restarted.warnings_about(topic)
    if text is None:
        assert lines == []
    else:
        (line,) = lines
        assert text in line, line
    # The repaired log takes new writes right after what survived.
    write(broker, topic)
    after = consume_confluent(broker.bootstrap, topic, 3, start=survivors)
    assert [o for o, _ in after][:3] == [survivors, survivors + 1, survivors + 2]


def test_undamaged_partitions_serve_untouched(restarted: Restarted) -> None:
    for partition in (0, 1):
        assert read_partition(restarted.broker.bootstrap, "intact", partition) == (
            [(i, b"record-%d" % i) for i in range(RECORDS)] if partition == 0 else []
        )
    assert restarted.warnings_about("intact") == []


def test_unreadable_root_checkpoints_are_one_warning_each(restarted: Restarted) -> None:
    lines = [line for line in restarted.log.splitlines() if "ignoring unreadable" in line]
    if restarted.shutdown == "clean":
        assert lines == []
        return
    assert len(lines) == len(ROOT_CHECKPOINTS)
    for name in ROOT_CHECKPOINTS:
        assert any(name in line for line in lines), name

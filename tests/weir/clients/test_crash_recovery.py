"""Crash and restart of a real broker process under a real producer.

* ``kill -9`` mid-stream (acks=1, acks=all, idempotent): every record whose delivery the
  client saw acknowledged is readable after the restart at the offset it was acknowledged
  with, offsets stay dense, and the log takes new writes.
* A torn or garbled tail of the active segment (written while the broker is down) is cut
  at the last whole, CRC-valid batch; everything before it is served.
* The same after a clean shutdown (SIGTERM): a tail torn while the broker is down (a disk
  that lied about a write, a restored copy) does not keep it from starting; the damaged
  partition serves what precedes the cut and every other partition is untouched.
* SIGTERM leaves the clean-shutdown markers and checkpoints Kafka leaves, and a restart
  serves everything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.weir.clients.conftest import BrokerProcess
from tests.weir.clients.helpers import (
    consume_confluent,
    create_topic,
    make_records,
    produce_confluent,
)
from weir.metadata.keys import KeyLayout
from weir.protocol.records import iter_batches

pytestmark = pytest.mark.integration

StartBroker = Callable[..., BrokerProcess]


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


def watermarks(bootstrap: str, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        consumer.close()


class BackgroundProducer:
    """A confluent-kafka producer thread that writes ``seq-<n>`` values until stopped and
    records the offset of every acknowledged delivery."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, **config: object) -> None:
        self.topic = topic
        self.partitions = partitions
        self.acked: dict[tuple[int, int], bytes] = {}
        self.failed: list[KafkaError] = []
        self.duplicate_acks: list[tuple[tuple[int, int], bytes, bytes]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "linger.ms": 2,
                "message.timeout.ms": 30000,
                "retry.backoff.ms": 20,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                **config,
            }
        )
        self._thread = threading.Thread(target=self._guarded_run, name=f"producer-{topic}")
        self._error: BaseException | None = None

    def _delivered(self, err: KafkaError | None, msg: object) -> None:
        with self._lock:
            if err is not None:
                self.failed.append(err)
                return
            key = (msg.partition(), msg.offset())  # type: ignore[attr-defined]
            value = msg.value()  # type: ignore[attr-defined]
            if key in self.acked and self.acked[key] != value:
                self.duplicate_acks.append((key, self.acked[key], value))
            self.acked[key] = value

    def _guarded_run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # re-raised by stop() in the test's thread
            self._error = exc

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            if len(self._producer) > 2000:  # bound what is queued and in flight
                self._producer.poll(0.005)
                continue
            try:
                self._producer.produce(
                    self.topic,
                    value=b"seq-%d" % n,
                    partition=n % self.partitions,
                    on_delivery=self._delivered,
                )
            except BufferError:
                self._producer.poll(0.005)
                continue
            n += 1
            self._producer.poll(0)
        remaining = self._producer.flush(40)
        assert remaining == 0, f"{remaining} records neither delivered nor failed"

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self._thread.is_alive()
        if self._error is not None:
            raise self._error


def read_partition(bootstrap: str, topic: str, partition: int) -> list[tuple[int, bytes]]:
    low, high = watermarks(bootstrap, topic, partition)
    assert low == 0
    received = consume_confluent(bootstrap, topic, high, partition=partition)
    return [(offset, rec.value) for offset, rec in received]  # type: ignore[misc]


# A short session, so a restarted broker does not wait 9 s for its predecessor's lease.
CRASH_CONFIGS = ["broker.session.timeout.ms=2000", "broker.heartbeat.interval.ms=400"]


def restart_after_crash(broker: BrokerProcess) -> None:
    """Start a killed broker again once the dead process's registration lease expired.

    (A restart within the lease is refused today: see
    ``test_broker_restarted_right_after_kill9_comes_back``.)
    """
    lease = KeyLayout(broker.cluster_id).broker_lease(broker.broker_id)
    client = redis.Redis.from_url(broker.redis_url)
    try:
        wait_for(lambda: not client.exists(lease), 15, "the dead broker's lease to expire")
    finally:
        client.close()
    broker.start()


PRODUCER_CONFIGS = {
    "crash-acks1": {"acks": 1, "enable.idempotence": False},
    "crash-acksall": {"acks": -1, "enable.idempotence": False},
    "crash-idempotent": {"acks": -1, "enable.idempotence": True},
}


def test_acknowledged_writes_survive_kill9_mid_stream(start_broker: StartBroker) -> None:
    broker = start_broker(configs=CRASH_CONFIGS)
    producers = {}
    for topic, config in PRODUCER_CONFIGS.items():
        create_topic(broker.bootstrap, topic, partitions=2)
        producers[topic] = BackgroundProducer(broker.bootstrap, topic, 2, **config)
    for producer in producers.values():
        producer.start()
    try:
        for topic, producer in producers.items():
            wait_for(lambda p=producer: p.acked_count() >= 2000, 30, f"{topic}: 2000 acks")
        broker.kill9()  # mid-stream: batches of all three producers are in flight
        at_kill = {topic: p.acked_count() for topic, p in producers.items()}
        restart_after_crash(broker)  # same data dir and port; producers retry
        for topic, producer in producers.items():
            wait_for(
                lambda p=producer, n=at_kill[topic]: p.acked_count() >= n + 2000,
                30,
                f"{topic}: acks after the restart",
            )
    finally:
        for producer in producers.values():
            producer.stop()

    # Crash once more with nothing in flight: recovery alone must make every acknowledged
    # record readable again (the high watermark comes back without new writes).
    broker.kill9()
    restart_after_crash(broker)
    for topic, producer in producers.items():
        assert not producer.duplicate_acks, (topic, producer.duplicate_acks[:5])
        for partition in (0, 1):
            where = f"{topic}[{partition}]"
            log = read_partition(broker.bootstrap, topic, partition)
            assert [offset for offset, _ in log] == list(range(len(log))), where  # dense
            stored = dict(log)
            acked = {o: v for (p, o), v in producer.acked.items() if p == partition}
            assert acked, f"{where}: the producer never got an acknowledgement"
            missing = sorted(o for o in acked if o not in stored)
            assert not missing, f"{where}: acknowledged offsets lost: {missing[:10]}"
            wrong = sorted(o for o, v in acked.items() if stored[o] != v)
            assert not wrong, f"{where}: offsets hold other records than acked: {wrong[:10]}"
            if PRODUCER_CONFIGS[topic]["enable.idempotence"]:
                # Retries across the crash neither duplicated nor reordered anything.
                values = [int(v.split(b"-")[1]) for _, v in log]
                assert values == sorted(set(values)), f"{where}: duplicates or reordering"

            # The recovered log takes new writes right after its end.
            after = make_records("after", 3)
            offsets = produce_confluent(broker.bootstrap, topic, after, partition=partition)
            assert offsets == [len(log), len(log) + 1, len(log) + 2], where


def test_broker_restarted_right_after_kill9_comes_back(start_broker: StartBroker) -> None:
    """A supervisor restarts a crashed broker at once; the dead process's lease is still
    alive. Kafka (KRaft) keeps retrying the registration until the old session expires;
    the broker must not give up and exit."""
    broker = start_broker(configs=CRASH_CONFIGS)
    create_topic(broker.bootstrap, "quick")
    produce_confluent(broker.bootstrap, "quick", make_records("q", 10))
    broker.kill9()
    broker.start(timeout=30)
    assert [r.value for _, r in consume_confluent(broker.bootstrap, "quick", 10)] == [
        r.value for r in make_records("q", 10)
    ]


def segment_file(broker: BrokerProcess, topic: str) -> Path:
    (segment,) = sorted((broker.data_dir / f"{topic}-0").glob("*.log"))
    return segment


def write_batches(broker: BrokerProcess, topic: str, batches: int, per_batch: int) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 50})
    for b in range(batches):
        for i in range(per_batch):
            producer.produce(topic, value=b"record-%d" % (b * per_batch + i), partition=0)
        assert producer.flush(20) == 0


def recovery_point(broker: BrokerProcess, topic: str) -> int:
    path = broker.data_dir / "recovery-point-offset-checkpoint"
    if not path.exists():
        return 0
    for line in path.read_text().splitlines()[2:]:
        name, partition, offset = line.split()
        if (name, partition) == (topic, "0"):
            return int(offset)
    return 0


# topic -> how its active segment is damaged while the broker is down, and how many records
# (ten batches of ten) survive recovery.
DAMAGE = {
    "torn-tail": 90,  # a torn write: the last batch is cut short
    "bad-crc-last": 90,  # a flipped byte in the last batch
    "bad-crc-middle": 50,  # everything from the first bad batch on goes
    "zero-tail": 100,  # preallocated zeros after the last batch
    "garbage-tail": 100,  # bytes that do not even parse as a batch header
}


def test_recovery_truncates_a_damaged_tail_and_serves_what_precedes_it(
    start_broker: StartBroker,
) -> None:
    broker = start_broker(configs=CRASH_CONFIGS)
    for topic in DAMAGE:
        create_topic(broker.bootstrap, topic)
        write_batches(broker, topic, batches=10, per_batch=10)
    broker.kill9()  # no clean-shutdown marker: the next start must CRC-scan

    valid_sizes = {}
    for topic in DAMAGE:
        segment = segment_file(broker, topic)
        data = bytearray(segment.read_bytes())
        positions = {header.base_offset: pos for pos, header in iter_batches(data)}
        assert sorted(positions) == list(range(0, 100, 10)), f"{topic}: not ten batches"
        assert recovery_point(broker, topic) <= 50, f"{topic}: damage below the recovery point"
        valid_sizes[topic] = positions.get(DAMAGE[topic], len(data))
        if topic == "torn-tail":
            del data[len(data) - 7 :]
        elif topic == "bad-crc-last":
            data[positions[90] + 70] ^= 0xFF
        elif topic == "bad-crc-middle":
            data[positions[50] + 70] ^= 0xFF
        elif topic == "zero-tail":
            data += bytes(4096)
        elif topic == "garbage-tail":
            data += bytes(range(256)) * 4
        segment.write_bytes(bytes(data))

    restart_after_crash(broker)
    for topic, survivors in DAMAGE.items():
        assert watermarks(broker.bootstrap, topic, 0) == (0, survivors), topic
        expected = [(i, b"record-%d" % i) for i in range(survivors)]
        assert read_partition(broker.bootstrap, topic, 0) == expected, topic
        # The damaged bytes are gone from the file, and the log continues at the cut.
        assert len(segment_file(broker, topic).read_bytes()) == valid_sizes[topic], topic
        write_batches(broker, topic, batches=1, per_batch=5)
        after = consume_confluent(broker.bootstrap, topic, 5, start=survivors)
        assert [(o, r.value) for o, r in after] == [
            (survivors + i, b"record-%d" % i) for i in range(5)
        ], topic


def test_torn_tail_after_a_clean_shutdown_is_cut_and_other_partitions_serve(
    start_broker: StartBroker,
) -> None:
    """Issue 16: the broker used to exit at start with ``runs past position N``. A process
    test because the point is that the real ``runbroker`` starts and serves."""
    broker = start_broker(configs=CRASH_CONFIGS)
    create_topic(broker.bootstrap, "torn-clean")
    create_topic(broker.bootstrap, "intact", partitions=2)
    write_batches(broker, "torn-clean", batches=10, per_batch=10)
    intact = {p: make_records(f"intact-{p}", 30) for p in (0, 1)}
    for partition, records in intact.items():
        produce_confluent(broker.bootstrap, "intact", records, partition=partition)
    assert broker.stop() == 0
    segment = segment_file(broker, "torn-clean")
    assert (segment.parent / ".clean_shutdown").exists()
    data = segment.read_bytes()
    last_position = list(iter_batches(data))[-1][0]
    segment.write_bytes(data[: len(data) - 7])  # the last batch (offsets 90-99) is torn

    broker.start()
    assert broker.alive()
    assert watermarks(broker.bootstrap, "torn-clean", 0) == (0, 90)
    assert read_partition(broker.bootstrap, "torn-clean", 0) == [
        (i, b"record-%d" % i) for i in range(90)
    ]
    assert len(segment.read_bytes()) == last_position
    for partition, records in intact.items():
        received = consume_confluent(broker.bootstrap, "intact", 30, partition=partition)
        assert [rec.value for _, rec in received] == [r.value for r in records]
    lines = [line for line in broker.log_text().splitlines() if str(segment) in line]
    assert len(lines) == 1 and "truncated" in lines[0], lines
    write_batches(broker, "torn-clean", batches=1, per_batch=5)
    after = consume_confluent(broker.bootstrap, "torn-clean", 5, start=90)
    assert [o for o, _ in after] == list(range(90, 95))


def test_sigterm_leaves_clean_shutdown_markers_and_checkpoints(
    start_broker: StartBroker,
) -> None:
    broker = start_broker(configs=CRASH_CONFIGS)
    create_topic(broker.bootstrap, "clean", partitions=3)
    expected = {}
    for partition in range(3):
        records = make_records(f"p{partition}", 40 + partition)
        produce_confluent(broker.bootstrap, "clean", records, partition=partition)
        expected[partition] = records
    assert broker.stop() == 0

    for partition in range(3):
        directory = broker.data_dir / f"clean-{partition}"
        assert (directory / ".clean_shutdown").exists()
        assert (directory / "leader-epoch-checkpoint").exists()
        assert (directory / f"{40 + partition:020d}.snapshot").exists()
    checkpoints = {}
    for name in (
        "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
    ):
        lines = (broker.data_dir / name).read_text().splitlines()
        assert lines[0] == "0"
        assert int(lines[1]) == len(lines) - 2
        checkpoints[name] = {
            (t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])
        }
    for partition in range(3):
        key = ("clean", partition)
        assert checkpoints["recovery-point-offset-checkpoint"][key] == 40 + partition
        assert checkpoints["log-start-offset-checkpoint"][key] == 0
        assert checkpoints["replication-offset-checkpoint"][key] == 40 + partition

    broker.start()
    for partition in range(3):
        received = consume_confluent(broker.bootstrap, "clean", 40 + partition, partition=partition)
        assert [rec for _, rec in received] == expected[partition]
        # Opening the log consumed the marker, so a later crash is recovered again.
        assert not (broker.data_dir / f"clean-{partition}" / ".clean_shutdown").exists()

"""What the Redis failover tests observe: the coordination history, and checks over it.

Two independent witnesses of who was the controller, so a failover that breaks the fencing
shows up in one or the other:

* ``EpochSampler`` reads ``controller`` (the lease ``<broker>:<epoch>``) and
  ``controller_epoch`` every ~100 ms from *the server the sentinels call primary* (asked
  afresh each time, so a demoted or isolated old primary is never read by mistake) while a
  fault runs. ``check_samples`` requires the epoch counter never to go back and each lease
  epoch to belong to one broker, with epochs strictly increasing from holder to holder.
* The brokers' own logs (``parse_logs``): the election lines of ``weir.controller_lease``
  ("broker N is the controller (epoch E)"), the controller's successful metadata writes
  (``weir.controller``: "<why>: <topic>-<p> leader=.. isr=.." and "<topic>-<p> ISR is now
  [..]", each logged right after Redis accepted the fenced write), broker registrations and
  topic creations. ``check_single_controller`` says what "acting" means observably: a write
  a controller *logged as done* after another broker had already logged its election with a
  higher epoch is two controllers acting at once (the fence in Redis should have refused
  it). ``check_nothing_forgotten`` compares every metadata write a broker was told had
  succeeded with the metadata log Redis holds at the end: a write acknowledged by a primary
  that was then lost in a failover (asynchronous replication) is missing there.

``ConfigWriter`` adds a metadata load a client sees acknowledged: sequential, increasing
``retention.ms`` changes of one topic, whose last acknowledged value must still be in Redis
at the end.

Log lines carry the wall clock of one machine (all processes run on loopback), with
millisecond resolution; a tie counts as no violation.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import redis
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from tests.sentinel import SentinelDeployment
from weir.metadata.keys import KeyLayout
from weir.metadata.quorum import WAIT_TIMEOUT_MS

SAMPLE_INTERVAL_S = 0.1

_LINE = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) broker-(?P<broker>\d+) \w+ [\w.]+: "
    r"(?P<msg>.*)$"
)
_ELECTED = re.compile(r"^broker (?P<broker>\d+) is the controller \(epoch (?P<epoch>\d+)\)$")
_REGISTERED = re.compile(r"^broker (?P<broker>\d+) registered with epoch (?P<epoch>\d+)$")
_CREATED = re.compile(r"^created topic (?P<topic>\S+) with \d+ partitions")
# weir.controller._write: "<why>: <topic>-<p> leader=<id|unchanged> isr=<[..]|unchanged>"
_PARTITION_WRITE = re.compile(
    r"^(?P<why>[a-z ]+): (?P<topic>\S+)-(?P<partition>\d+) "
    r"leader=(?P<leader>-?\d+|unchanged) isr=(?P<isr>\[[\d, ]*\]|unchanged)$"
)
# weir.controller.alter_isr: "<topic>-<p> ISR is now [..]"
_ISR_WRITE = re.compile(r"^(?P<topic>\S+)-(?P<partition>\d+) ISR is now (?P<isr>\[[\d, ]*\])$")


# -- sampling Redis ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Sample:
    at: float  # time.time()
    primary_port: int
    lease: str | None  # the ``controller`` key: "<broker>:<epoch>"
    epoch: int | None  # the ``controller_epoch`` counter


class EpochSampler(threading.Thread):
    """Reads the controller lease and epoch from the sentinels' primary every ~100 ms."""

    def __init__(self, deployment: SentinelDeployment, keys: KeyLayout) -> None:
        super().__init__(name="epoch-sampler", daemon=True)
        self.deployment = deployment
        self.keys = keys
        self.samples: list[Sample] = []
        self.misses = 0  # rounds with no primary to read (the failover window)
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(SAMPLE_INTERVAL_S):
            sample = self._sample()
            if sample is None:
                self.misses += 1
            else:
                self.samples.append(sample)

    def _sample(self) -> Sample | None:
        port = self.deployment.primary_port()
        if port is None:
            return None
        # A short timeout: a paused primary the sentinels still name must not stall us.
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=0.3)
        try:
            pipe = client.pipeline(transaction=True)
            pipe.info("replication")
            pipe.get(self.keys.controller)
            pipe.get(self.keys.controller_epoch)
            info, lease, epoch = pipe.execute()
        except redis.RedisError:
            return None
        finally:
            client.close()
        if info["role"] != "master":  # the sentinels' view lags a demotion: not a primary
            return None
        return Sample(
            at=time.time(),
            primary_port=port,
            lease=lease.decode() if lease else None,
            epoch=int(epoch) if epoch else None,
        )

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)


def check_samples(samples: list[Sample]) -> list[str]:
    """Violations in the sampled history: the epoch counter going back, one lease epoch
    held by two brokers, lease epochs not strictly increasing from holder to holder."""
    problems = []
    previous: Sample | None = None
    for sample in samples:
        if (
            previous is not None
            and previous.epoch is not None
            and (sample.epoch is None or sample.epoch < previous.epoch)
        ):
            problems.append(
                f"controller_epoch went back from {previous.epoch} (primary "
                f":{previous.primary_port}) to {sample.epoch} (primary :{sample.primary_port})"
            )
        if sample.epoch is not None:
            previous = sample
    holders: dict[int, set[int]] = {}
    tenures: list[tuple[int, int]] = []  # (broker, epoch), consecutive duplicates collapsed
    for sample in samples:
        if sample.lease is None:
            continue
        broker, _, epoch_text = sample.lease.partition(":")
        broker_id, epoch = int(broker), int(epoch_text)
        holders.setdefault(epoch, set()).add(broker_id)
        if sample.epoch is not None and epoch > sample.epoch:
            problems.append(f"lease {sample.lease} ahead of controller_epoch {sample.epoch}")
        if not tenures or tenures[-1] != (broker_id, epoch):
            tenures.append((broker_id, epoch))
    for epoch, brokers in sorted(holders.items()):
        if len(brokers) > 1:
            problems.append(f"controller epoch {epoch} held by brokers {sorted(brokers)}")
    epochs = [epoch for _, epoch in tenures]
    if any(b <= a for a, b in itertools.pairwise(epochs)):
        problems.append(f"lease epochs not strictly increasing: holders {tenures}")
    return problems


# -- broker logs ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PartitionWrite:
    """A controller write a broker logged as done (``leader``/``isr`` None: unchanged)."""

    at: datetime
    broker: int
    why: str  # "broker liveness", "preferred leader election", ..., "ISR change"
    topic: str
    partition: int
    leader: int | None
    isr: tuple[int, ...] | None
    line: str

    @property
    def key(self) -> tuple[str, int, int | None, tuple[int, ...] | None]:
        return (self.topic, self.partition, self.leader, self.isr)


@dataclass(slots=True)
class BrokerHistory:
    """What the brokers' logs say happened (every broker's log, merged)."""

    elections: list[tuple[datetime, int, int]] = field(default_factory=list)  # at, broker, epoch
    registrations: list[tuple[datetime, int, int]] = field(default_factory=list)
    created_topics: list[str] = field(default_factory=list)
    writes: list[PartitionWrite] = field(default_factory=list)


def _isr(text: str) -> tuple[int, ...] | None:
    return None if text == "unchanged" else tuple(json.loads(text))


def parse_logs(logs: dict[int, Path]) -> BrokerHistory:
    history = BrokerHistory()
    for path in logs.values():
        for raw in path.read_text(errors="replace").splitlines():
            line = _LINE.match(raw)
            if line is None:
                continue
            at = datetime.strptime(line["ts"], "%Y-%m-%d %H:%M:%S,%f")
            writer = int(line["broker"])
            msg = line["msg"]
            if m := _ELECTED.match(msg):
                history.elections.append((at, int(m["broker"]), int(m["epoch"])))
            elif m := _REGISTERED.match(msg):
                history.registrations.append((at, int(m["broker"]), int(m["epoch"])))
            elif m := _CREATED.match(msg):
                history.created_topics.append(m["topic"])
            elif m := _PARTITION_WRITE.match(msg):
                leader = None if m["leader"] == "unchanged" else int(m["leader"])
                history.writes.append(
                    PartitionWrite(
                        at,
                        writer,
                        m["why"],
                        m["topic"],
                        int(m["partition"]),
                        leader,
                        _isr(m["isr"]),
                        raw,
                    )
                )
            elif m := _ISR_WRITE.match(msg):
                history.writes.append(
                    PartitionWrite(
                        at,
                        writer,
                        "ISR change",
                        m["topic"],
                        int(m["partition"]),
                        None,
                        _isr(m["isr"]),
                        raw,
                    )
                )
    history.elections.sort()
    history.registrations.sort()
    history.writes.sort(key=lambda w: w.at)
    return history


def check_single_controller(history: BrokerHistory) -> list[str]:
    """Violations of "one controller at a time, epochs strictly increasing" in the logs.

    Every controller epoch is elected once, elections come in increasing epoch order, and
    a controller write is logged only by a broker that was elected and only while no
    broker had yet logged its election with a higher epoch.
    """
    problems = []
    problems += _increasing("controller", history.elections)
    for write in history.writes:
        own = [e for t, b, e in history.elections if b == write.broker and t <= write.at]
        if not own:
            problems.append(f"broker {write.broker} wrote without being elected: {write.line}")
            continue
        newer = [(t, b, e) for t, b, e in history.elections if e > own[-1] and t < write.at]
        if newer:
            t, b, e = newer[0]
            problems.append(
                f"broker {write.broker} (controller epoch {own[-1]}) acted after broker {b} "
                f"became the controller with epoch {e} at {t}: {write.line}"
            )
    return problems + _increasing("broker", history.registrations)


def _increasing(what: str, events: list[tuple[datetime, int, int]]) -> list[str]:
    """Epochs (``(at, broker, epoch)``, sorted by time) handed out once each and in
    increasing order. Brokers log an epoch once the write that took it is confirmed (up to
    the quorum's WAIT later), so two takes logged less than that apart may have overlapped
    and are not ordered."""
    problems = [
        f"{what} epoch {epoch} handed out {n} times: {[e for e in events if e[2] == epoch]}"
        for epoch, n in Counter(epoch for _, _, epoch in events).items()
        if n > 1
    ]
    for i, (t2, b2, e2) in enumerate(events):
        earlier = [
            (t1, b1, e1)
            for t1, b1, e1 in events[:i]
            if (t2 - t1).total_seconds() > OVERLAP_S and e1 >= e2
        ]
        if earlier:
            t1, b1, e1 = earlier[0]
            problems.append(
                f"{what} epochs went back: broker {b2} got {e2} at {t2}, after broker {b1} "
                f"got {e1} at {t1}"
            )
    return problems


# Two epoch takes logged closer than this may have run at the same time (a write's confirm
# waits up to WAIT_TIMEOUT_MS for the replicas).
OVERLAP_S = WAIT_TIMEOUT_MS / 1000 + 0.5


@dataclass(frozen=True, slots=True)
class StoredMetadata:
    """The cluster's metadata as the final primary holds it."""

    controller_epoch: int
    broker_epoch: int
    topics: dict[str, str]  # name -> topic id
    registered: dict[int, int]  # broker id -> epoch, from the ``brokers`` hash
    partition_changes: Counter[tuple[str, int, int | None, tuple[int, ...] | None]]
    registrations: set[tuple[int, int]]  # (broker, epoch) of RegisterBroker records


def read_metadata(client: redis.Redis, keys: KeyLayout) -> StoredMetadata:
    topics = {
        name.decode(): json.loads(value)["topic_id"]
        for name, value in client.hgetall(keys.topics).items()
    }
    names = {topic_id: name for name, topic_id in topics.items()}
    changes: Counter[tuple[str, int, int | None, tuple[int, ...] | None]] = Counter()
    registrations = set()
    for _, entry in client.xrange(keys.metadata_log):
        kind, data = entry[b"type"].decode(), json.loads(entry[b"data"])
        if kind == "PartitionChange":
            isr = tuple(data["isr"]) if data.get("isr") is not None else None
            name = names.get(data["topic_id"], data["topic_id"])
            changes[(name, data["partition"], data.get("leader"), isr)] += 1
        elif kind == "RegisterBroker":
            registrations.add((data["broker_id"], data["epoch"]))
    return StoredMetadata(
        controller_epoch=int(client.get(keys.controller_epoch) or 0),
        broker_epoch=int(client.get(keys.broker_epoch) or 0),
        topics=topics,
        registered={
            int(b): json.loads(v)["epoch"] for b, v in client.hgetall(keys.brokers).items()
        },
        partition_changes=changes,
        registrations=registrations,
    )


def check_nothing_forgotten(history: BrokerHistory, stored: StoredMetadata) -> list[str]:
    """Metadata writes the brokers were told had succeeded that Redis no longer has."""
    problems = []
    logged = Counter(w.key for w in history.writes)
    for key, count in logged.items():
        if stored.partition_changes[key] < count:
            lines = [w.line for w in history.writes if w.key == key]
            problems.append(
                f"{count} logged controller write(s) {key}, {stored.partition_changes[key]} in "
                f"Redis' metadata log: {lines[-1]}"
            )
    lost_topics = sorted(set(history.created_topics) - set(stored.topics))
    if lost_topics:
        problems.append(f"created topics missing from Redis: {lost_topics}")
    lost = [(b, e) for _, b, e in history.registrations if (b, e) not in stored.registrations]
    if lost:
        problems.append(f"broker registrations (broker, epoch) missing from Redis: {lost}")
    top = max((e for _, _, e in history.elections), default=0)
    if stored.controller_epoch < top:
        problems.append(
            f"controller_epoch is {stored.controller_epoch}, a broker was elected with {top}"
        )
    top = max((e for _, _, e in history.registrations), default=0)
    if stored.broker_epoch < top:
        problems.append(f"broker_epoch is {stored.broker_epoch}, brokers registered with {top}")
    return problems


# -- a metadata load ----------------------------------------------------------------------------
CONFIG_NAME = "retention.ms"
CONFIG_BASE = 10**12  # values far above any retention the test could notice


class ConfigWriter(threading.Thread):
    """Acknowledged metadata changes through the Kafka API, one after another.

    Sets ``retention.ms`` of ``topic`` to ``CONFIG_BASE + n`` for n = 1, 2, ...
    (IncrementalAlterConfigs: a fenced controller write). The writes are sequential and
    increasing, so the value Redis holds at the end must be the last one acknowledged, or one
    whose request failed without an answer (it may have been applied late): anything else
    lower is an acknowledged metadata change lost.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="config-writer", daemon=True)
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.topic = topic
        self.acked = 0
        self.attempts = 0
        self.errors: list[str] = []
        # Attempts that failed (timed out, no controller): each may still take effect, and
        # later than a newer one (a forwarded request the controller handles late), as in
        # Kafka; a Jepsen checker may order such an operation anywhere after it began.
        self.indeterminate: set[int] = set()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.attempts += 1
            value = str(CONFIG_BASE + self.attempts)
            change = ConfigResource(
                "topic",
                self.topic,
                incremental_configs=[
                    ConfigEntry(CONFIG_NAME, value, incremental_operation=AlterConfigOpType.SET)
                ],
            )
            try:
                self.admin.incremental_alter_configs([change], request_timeout=5)[change].result(10)
            except KafkaException as exc:  # not acknowledged: it may or may not have happened
                self.errors.append(str(exc))
                self.indeterminate.add(self.attempts)
            else:
                self.acked = self.attempts
            self._stop_event.wait(0.05)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(30)

    def problems(self, client: redis.Redis, keys: KeyLayout) -> list[str]:
        stored = client.hget(keys.configs("topic", self.topic), CONFIG_NAME)
        have = int(stored) - CONFIG_BASE if stored else 0
        if self.acked == 0:
            return [f"no config change was acknowledged ({self.errors[-3:]})"]
        if have < self.acked and have not in self.indeterminate:
            return [
                f"acknowledged config change lost: {CONFIG_NAME} #{self.acked} of "
                f"{self.attempts} was acknowledged, Redis holds #{have} (failed attempts: "
                f"{sorted(self.indeterminate)[-5:]})"
            ]
        return []

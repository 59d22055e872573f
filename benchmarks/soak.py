"""Soak: one Weir broker under hours-style churn, watched for growth in memory and descriptors.

A broker that runs for a month must not grow with what it has seen, only with what it holds.
This benchmark starts one broker (private Redis, ``benchmarks.peers.start_weir``) and, for
``--duration`` seconds (default 1800), drives five kinds of churn at once from worker threads:

* **short-lived idempotent producers**: each connects, sends ``--records-per-producer``
  records to one partition of a long-lived topic, flushes and closes (a new producer id
  every time, so producer state grows unless ``producer.id.expiration.ms`` expires it);
* **connections**: raw TCP connections that send one ApiVersions request, read the answer
  and close, alternating with connections that close without a byte;
* **consumer-group members**: consumers join one of ``--groups`` groups (cycled), read a
  few records, commit and leave (generations and members churn, group ids are reused);
* **topics**: a topic with 3 partitions is created, written to and deleted, over and over;
* a **steady producer** (acks=all, idempotent) at ``--steady-rate`` records/s, so segments
  roll (``log.segment.bytes`` is small) and old ones are deleted by retention, which runs
  every ``--retention-interval`` seconds exactly as Celery beat runs it in production
  (``brokers.ops.housekeeping.run_retention`` over the broker command channel). Without it
  a broker keeps every segment, as Kafka without its retention thread would, and open files
  grow with the log.

Every ``--sample-interval`` seconds it samples the broker process: RSS and open descriptors
from ``/proc/<pid>``, and from the broker's own metrics snapshot (``weir.process_stats``)
its live asyncio tasks and the idempotent producer ids it remembers. It prints the samples,
then compares the end of the run with the first sample after ``--warmup`` seconds (when
caches, pools and the expiration window have filled) against the stated bounds:

* RSS: end <= warm-up sample x 1.15 + 16 MiB;
* open files, split by what they are for: a broker rightly holds a segment's data file and
  its two indexes (an index file is opened once its segment passes
  ``log.index.interval.bytes``, so the 50 ``__consumer_offsets`` partitions open theirs one
  by one as offsets are committed), so segment files are bounded by 3 x the segments on disk
  at that moment, whatever the history; sockets and every other descriptor: end <= warm-up
  sample + 16 (connections in flight at the moment of a sample account for a few); files
  deleted but still open (kept for ``file.delete.delay.ms``, one minute): at most 32;
* asyncio tasks: end <= warm-up sample + 16;
* remembered producer ids: never above what ``producer.id.expiration.ms`` allows (the
  producers started in one expiration window plus one check interval), with a 20 % margin.

Nothing is asserted about speed; the verdict says which figure, if any, left its bound, and
the exit status is 1 then. ``docs/benchmarks.md`` keeps the figures of a 30-minute run.

    python -m benchmarks.soak                       # 30 minutes, the documented run
    python -m benchmarks.soak --duration 120 --warmup 30 --json /tmp/soak.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import redis
from confluent_kafka import Consumer, KafkaException, Producer
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from benchmarks.common import (
    admin_client,
    benchmark_parser,
    create_topic,
    delete_topic,
    format_table,
    machine_note,
    parse_checked,
    settings_from,
    unique_topic,
    write_json,
)
from benchmarks.peers import (
    PeerHandle,
    free_port,
    install_signal_handlers,
    quiet_logger,
    start_weir,
)
from weir.client import encode_request
from weir.metadata.keys import KeyLayout
from weir.metadata.redis_url import sync_client
from weir.metrics import broker_metrics_key, read_broker_metrics

MIB = 1024 * 1024
RSS_FACTOR, RSS_SLACK = 1.15, 16 * MIB
COUNT_SLACK = 16
UNLINKED_BOUND = 32
SEGMENT_FILE_KINDS = (".log", ".index", ".timeindex")
PRODUCER_ID_MARGIN = 1.2


@dataclass(frozen=True)
class SoakSettings:
    duration: float = 1800.0
    warmup: float = 300.0
    sample_interval: float = 30.0
    producer_rate: float = 3.0  # short-lived idempotent producers started per second
    records_per_producer: int = 5
    connection_rate: float = 20.0  # raw connections opened per second
    group_rate: float = 1.0  # consumer-group members joining per second
    groups: int = 50
    topic_interval: float = 10.0  # seconds between topic create/delete cycles
    retention_interval: float = 60.0  # seconds between retention runs (Celery's job)
    steady_rate: float = 200.0  # records/s of the steady idempotent producer
    producer_id_expiration_ms: int = 120_000
    producer_id_check_interval_ms: int = 10_000
    segment_bytes: int = 1 * MIB
    retention_ms: int = 120_000


@dataclass
class Sample:
    elapsed_s: float
    rss_bytes: int
    open_fds: int
    open_sockets: int
    open_unlinked: int  # files deleted on disk but still held open
    # Open descriptors by kind: socket, unlinked, .log, .index, .timeindex, other.
    fd_kinds: dict[str, int]
    segments_on_disk: int  # *.log files in the data directory
    asyncio_tasks: int | None
    producer_ids: int | None


@dataclass
class Counters:
    """What the churn threads did (each field only grows; one writer per field)."""

    producers: int = 0
    records: int = 0
    connections: int = 0
    group_members: int = 0
    topics: int = 0
    steady_records: int = 0
    retention_runs: int = 0
    segments_deleted: int = 0
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


def broker_pid(handle: PeerHandle) -> int:
    return handle.procs[-1].pid  # start_weir starts Redis first, the broker last


def _proc_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _fd_kind(target: str) -> str:
    if target.startswith("socket:"):
        return "socket"
    if target.endswith(" (deleted)"):  # a file deleted while open stays open
        return "unlinked"
    for suffix in (".log", ".index", ".timeindex"):
        if target.endswith(suffix) and "/weir-soak-" in target:
            return suffix
    return "other"


def _proc_fds(pid: int) -> dict[str, int]:
    """Open descriptors of ``pid`` by kind (see ``_fd_kind``)."""
    kinds: dict[str, int] = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed while we looked
            kind = _fd_kind(os.readlink(fd))
            kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def take_sample(
    handle: PeerHandle, redis_client: redis.Redis, started: float, data_dir: Path
) -> Sample:
    pid = broker_pid(handle)
    snapshots = read_broker_metrics(redis_client.hgetall(_metrics_key(handle)))
    process = snapshots.get(1, {}).get("process", {})
    kinds = _proc_fds(pid)
    return Sample(
        elapsed_s=round(time.monotonic() - started, 1),
        rss_bytes=_proc_rss(pid),
        open_fds=sum(kinds.values()),
        open_sockets=kinds.get("socket", 0),
        open_unlinked=kinds.get("unlinked", 0),
        fd_kinds=kinds,
        segments_on_disk=sum(1 for _ in data_dir.glob("*/*.log")),
        asyncio_tasks=process.get("asyncio_tasks"),
        producer_ids=process.get("producer_ids"),
    )


def _metrics_key(handle: PeerHandle) -> str:
    return broker_metrics_key(KeyLayout(handle.env["WEIR_CLUSTER_ID"]))


def _paced(rate: float, stop: threading.Event, work: Callable[[], None]) -> None:
    """Call ``work`` ``rate`` times a second (never faster; slower if ``work`` is slow)."""
    interval = 1.0 / rate
    next_at = time.monotonic()
    while not stop.is_set():
        work()
        next_at += interval
        delay = next_at - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_at = time.monotonic()  # fell behind: do not burst to catch up


class Churn:
    """The five churn workloads against one broker (see the module docstring)."""

    def __init__(
        self, bootstrap: str, settings: SoakSettings, topic: str, env: dict[str, str]
    ) -> None:
        self.bootstrap = bootstrap
        self.env = env
        self.settings = settings
        self.topic = topic
        self.counters = Counters()
        self.stop = threading.Event()
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self._address = (host, int(port))
        self._api_versions = encode_request(
            ApiVersionsRequest(client_software_name="weir-soak", client_software_version="1"),
            correlation_id=1,
            client_id="weir-soak",
        )

    def _client(self, **extra: object) -> dict[str, object]:
        return {"bootstrap.servers": self.bootstrap, "logger": quiet_logger(), **extra}

    def short_lived_producer(self) -> None:
        producer = Producer(self._client(**{"enable.idempotence": True, "linger.ms": 1}))
        partition = random.randrange(3)
        for i in range(self.settings.records_per_producer):
            producer.produce(self.topic, value=b"p" * 100, key=str(i).encode(), partition=partition)
        if producer.flush(30) == 0:
            self.counters.producers += 1
            self.counters.records += self.settings.records_per_producer
        else:
            self.counters.error("producer flush")

    def connection(self) -> None:
        try:
            with socket.create_connection(self._address, timeout=5) as sock:
                if self.counters.connections % 2 == 0:
                    sock.sendall(self._api_versions)
                    size = int.from_bytes(_recv_exactly(sock, 4), "big")
                    _recv_exactly(sock, size)
            self.counters.connections += 1
        except OSError:
            self.counters.error("connection")

    def group_member(self) -> None:
        group = f"soak-group-{self.counters.group_members % self.settings.groups}"
        consumer = Consumer(
            self._client(
                **{
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                    "session.timeout.ms": 6000,
                }
            )
        )
        try:
            consumer.subscribe([self.topic])
            deadline = time.monotonic() + 15
            got = []
            while not got and time.monotonic() < deadline and not self.stop.is_set():
                got = [m for m in consumer.consume(10, timeout=1.0) if m.error() is None]
            if got:
                consumer.commit(asynchronous=False)
                self.counters.group_members += 1
            else:
                self.counters.error("group member read nothing")
        except KafkaException:
            self.counters.error("group member")
        finally:
            consumer.close()

    def topic_cycle(self) -> None:
        name = unique_topic("soak-churn")
        try:
            create_topic(self.bootstrap, name, partitions=3)
            producer = Producer(self._client(**{"linger.ms": 5}))
            for i in range(30):
                producer.produce(name, value=b"t" * 100, partition=i % 3)
            producer.flush(15)
        except (KafkaException, TimeoutError):
            self.counters.error("topic create/produce")
        finally:
            delete_topic(self.bootstrap, name)
        self.counters.topics += 1

    def retention(self) -> None:
        """One retention run, the control plane's job (Django is set up on first use)."""
        from brokers.ops.housekeeping import run_retention
        from controlplane.cluster import gateway

        try:
            result = run_retention(gw=gateway(), timeout_s=30)
        except Exception:  # a run that fails is counted, the next one tries again
            self.counters.error("retention")
            return
        self.counters.retention_runs += 1
        self.counters.segments_deleted += result.segments_deleted

    def setup_control_plane(self) -> None:
        """Point this process's Django settings at the soak's cluster and set Django up."""
        import django

        for name in ("WEIR_REDIS_URL", "WEIR_CLUSTER_ID"):
            os.environ[name] = self.env[name]
        os.environ["WEIR_BOOTSTRAP_SERVERS"] = self.bootstrap
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
        django.setup()

    def steady(self) -> None:
        producer = Producer(
            self._client(**{"enable.idempotence": True, "acks": "all", "linger.ms": 20})
        )
        value = b"s" * 512
        try:
            _paced(
                self.settings.steady_rate / 20,
                self.stop,
                lambda: self._steady_burst(producer, value),
            )
        finally:
            producer.flush(30)

    def _steady_burst(self, producer: Producer, value: bytes) -> None:
        for _ in range(20):
            producer.produce(self.topic, value=value, partition=self.counters.steady_records % 3)
            self.counters.steady_records += 1
        producer.poll(0)

    def threads(self) -> list[threading.Thread]:
        s = self.settings
        loops: list[tuple[str, Callable[[], None]]] = [
            ("producers", lambda: _paced(s.producer_rate, self.stop, self.short_lived_producer)),
            ("connections", lambda: _paced(s.connection_rate, self.stop, self.connection)),
            ("groups", lambda: _paced(s.group_rate, self.stop, self.group_member)),
            ("topics", lambda: _paced(1.0 / s.topic_interval, self.stop, self.topic_cycle)),
            ("steady", self.steady),
            ("retention", lambda: _paced(1.0 / s.retention_interval, self.stop, self.retention)),
        ]
        return [
            threading.Thread(target=target, name=f"soak-{name}", daemon=True)
            for name, target in loops
        ]


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise OSError("connection closed mid-response")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def producer_id_bound(settings: SoakSettings) -> int:
    """Producer ids a broker may remember: those started in one expiration window plus one
    check interval (short-lived producers and the steady one), with a margin."""
    window_s = (settings.producer_id_expiration_ms + settings.producer_id_check_interval_ms) / 1000
    return int((settings.producer_rate * window_s + 1) * PRODUCER_ID_MARGIN) + 1


def verdict(baseline: Sample, end: Sample, peak_ids: int, settings: SoakSettings) -> list[str]:
    """Each figure that left its bound (empty: everything stayed flat)."""
    broken = []
    rss_bound = baseline.rss_bytes * RSS_FACTOR + RSS_SLACK
    if end.rss_bytes > rss_bound:
        broken.append(f"RSS {end.rss_bytes / MIB:.0f} MiB > bound {rss_bound / MIB:.0f} MiB")
    segment_files = sum(end.fd_kinds.get(k, 0) for k in SEGMENT_FILE_KINDS)
    if segment_files > 3 * end.segments_on_disk:
        broken.append(
            f"open segment files {segment_files} > 3 x {end.segments_on_disk} segments on disk"
        )
    for kind in ("socket", "other"):
        then, now = baseline.fd_kinds.get(kind, 0), end.fd_kinds.get(kind, 0)
        if now > then + COUNT_SLACK:
            broken.append(f"open {kind} descriptors {now} > {then} + {COUNT_SLACK}")
    if end.open_unlinked > UNLINKED_BOUND:
        broken.append(f"deleted files still open {end.open_unlinked} > {UNLINKED_BOUND}")
    if (
        end.asyncio_tasks is not None
        and baseline.asyncio_tasks is not None
        and end.asyncio_tasks > baseline.asyncio_tasks + COUNT_SLACK
    ):
        broken.append(
            f"asyncio tasks {end.asyncio_tasks} > {baseline.asyncio_tasks} + {COUNT_SLACK}"
        )
    if peak_ids > producer_id_bound(settings):
        broken.append(f"producer ids peaked at {peak_ids} > bound {producer_id_bound(settings)}")
    return broken


def run(settings: SoakSettings, out: Callable[[str], None] = print) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="weir-soak-") as data_dir:
        return _run_in(Path(data_dir), settings, out)


def _run_in(
    data_dir: Path, settings: SoakSettings, out: Callable[[str], None]
) -> dict[str, object]:
    configs = [
        f"producer.id.expiration.ms={settings.producer_id_expiration_ms}",
        f"producer.id.expiration.check.interval.ms={settings.producer_id_check_interval_ms}",
        f"log.segment.bytes={settings.segment_bytes}",
        f"log.retention.ms={settings.retention_ms}",
    ]
    out(f"soak: {settings.duration:.0f} s, {machine_note()}")
    out(f"broker configs: {' '.join(configs)}")
    with start_weir(free_port(), data_dir, extra_configs=configs) as handle:
        redis_client = sync_client(handle.env["WEIR_REDIS_URL"], decode_responses=True)
        topic = unique_topic("soak")
        create_topic(handle.bootstrap, topic, partitions=3)
        churn = Churn(handle.bootstrap, settings, topic, handle.env)
        churn.setup_control_plane()
        started = time.monotonic()
        samples = [take_sample(handle, redis_client, started, data_dir)]
        threads = churn.threads()
        for thread in threads:
            thread.start()
        try:
            while time.monotonic() - started < settings.duration:
                time.sleep(
                    min(settings.sample_interval, settings.duration - (time.monotonic() - started))
                )
                if not handle.alive():
                    raise RuntimeError(f"the broker died:\n{handle.log_tail()}")
                samples.append(take_sample(handle, redis_client, started, data_dir))
                s = samples[-1]
                out(
                    f"  {s.elapsed_s:7.0f} s  rss {s.rss_bytes / MIB:6.1f} MiB  fds {s.open_fds:4d}"
                    f" ({s.open_sockets} sockets, {s.open_unlinked} unlinked)"
                    f"  tasks {s.asyncio_tasks}  producer ids {s.producer_ids}"
                    f"  | producers {churn.counters.producers} connections"
                    f" {churn.counters.connections} members {churn.counters.group_members}"
                    f" topics {churn.counters.topics}"
                )
        finally:
            churn.stop.set()
            for thread in threads:
                thread.join(60)
        with contextlib.suppress(Exception):
            admin_client(handle.bootstrap).delete_topics([topic])
        broker_log = handle.log_tail(5)
    baseline = next((s for s in samples if s.elapsed_s >= settings.warmup), samples[-1])
    end = samples[-1]
    peak_ids = max((s.producer_ids or 0) for s in samples)
    broken = verdict(baseline, end, peak_ids, settings)
    rows = [
        [
            label,
            f"{s.elapsed_s:.0f}",
            f"{s.rss_bytes / MIB:.1f}",
            str(s.open_fds),
            str(s.open_sockets),
            str(s.segments_on_disk),
            str(s.asyncio_tasks),
            str(s.producer_ids),
        ]
        for label, s in (("start", samples[0]), ("after warm-up", baseline), ("end", end))
    ]
    out("")
    out(
        format_table(
            ["sample", "at s", "RSS MiB", "fds", "sockets", "segments", "tasks", "producer ids"],
            rows,
        )
    )
    for label, s in (("start", samples[0]), ("after warm-up", baseline), ("end", end)):
        out(f"open files at {label}: {json.dumps(s.fd_kinds, sort_keys=True)}")
    out(f"peak producer ids {peak_ids} (bound {producer_id_bound(settings)})")
    out(f"churn: {json.dumps(asdict(churn.counters))}")
    out("verdict: " + ("flat within the stated bounds" if not broken else "; ".join(broken)))
    if broken:
        out(broker_log)
    return {
        "settings": asdict(settings),
        "samples": [asdict(s) for s in samples],
        "baseline": asdict(baseline),
        "end": asdict(end),
        "peak_producer_ids": peak_ids,
        "producer_id_bound": producer_id_bound(settings),
        "counters": asdict(churn.counters),
        "broken": broken,
        "run_id": uuid.uuid4().hex[:8],
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("soak", __doc__)
    defaults = SoakSettings()

    def flag(name: str, kind: type) -> None:
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=kind, default=getattr(defaults, name)
        )

    for name in (
        "duration",
        "warmup",
        "sample_interval",
        "producer_rate",
        "connection_rate",
        "group_rate",
        "topic_interval",
        "steady_rate",
        "retention_interval",
    ):
        flag(name, float)
    for name in ("records_per_producer", "groups", "producer_id_expiration_ms"):
        flag(name, int)
    return parse_checked(parser, argv, _check_times)


def _check_times(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.duration <= 0 or args.sample_interval <= 0:
        parser.error("--duration and --sample-interval must be positive")


def main(argv: list[str] | None = None) -> int:
    install_signal_handlers()
    args = parse_args(argv)
    result = run(settings_from(SoakSettings, args))
    write_json(args.json, result)
    return 1 if result["broken"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""Mirroring between two local Weir clusters: catch-up MB/s and replication lag under load.

Run: ``.venv/bin/python -m benchmarks.mirror [--records N] [--partitions P] [--size B]
[--rates R,R] [--duration S] [--warmup S] [--json FILE]``

Two single-broker Weir clusters, ``source`` and ``target``, each a real ``manage.py
runbroker`` with its own Redis (``benchmarks.peers.start_weir``). Two copiers, one after the
other, in the same process tree:

* ``mirror``: ``manage.py mirror-maker FILE`` as users run it, a ``source->target`` flow with
  the topics ``mirrored-.*`` (DefaultReplicationPolicy: ``source.<topic>`` on the target) and
  MM2's defaults otherwise (offset syncs, checkpoints, heartbeats), except RF 1 for every
  topic it creates and ``refresh.topics.interval.seconds = 1`` so a new topic is picked up at
  once. Its guarantees: an idempotent ``acks=all`` producer, each batch of 500 acknowledged by
  the target before its source offsets are committed (synchronously) and its offset syncs
  written.
* ``plain``: the peer: a spawned process with a confluent-kafka ``Consumer`` (manual assign
  from the beginning, no group, no commits) and a ``Producer`` (``acks=all``, not idempotent,
  ``linger.ms=5``, the benchmarks' ``producer_config``), copying key, value, headers,
  timestamp and partition in batches of 500 without waiting for any acknowledgement until
  the end. The ratio mirror/plain is what the mirror's guarantees cost.

Measured, for each copier:

1. **Catch-up**: a backlog of ``--records`` records of ``--size`` bytes over ``--partitions``
   partitions is produced to the source first; then the copier starts. The harness polls the
   target's high watermarks every 20 ms; the rate is counted from the last poll that sees no
   record to the poll that sees them all (so process start-up, topic creation and the group
   join are left out; they are reported as "first record after"). MB/s of record values,
   1 MB = 10**6 bytes, and the copier's CPU as % of one core.
2. **Steady state**, per ``--rates`` entry: a fresh source topic; one priming record per
   partition, waited for on the target (so the copier has the topic); then a spawned
   producer sends ``rate`` records/s round robin over the partitions for ``--warmup`` +
   ``--duration`` seconds, while a consumer in the harness reads the target topic.
   Replication lag of a record = wall-clock time it was read on the target minus its
   timestamp (CreateTime, set by the producer when ``produce()`` was called; both copiers
   keep it), for the records after the warm-up: p50/p99/max. "kept up" means every record
   arrived and the lag did not grow: the median lag of the last tenth of the records is at
   most twice that of the first tenth plus 50 ms. The same is measured first with no copier
   at all (``direct``: the consumer reads the source topic itself), the lag's baseline: what
   producing and fetching 6 partitions costs before any mirroring.

Figures are printed and written to ``--json``, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from benchmarks.common import (
    MB,
    STAMP,
    benchmark_parser,
    child_main,
    consumer_config,
    create_topic,
    format_table,
    machine_note,
    parse_checked,
    percentile,
    print_results,
    producer_config,
    ratio,
    reap,
    receive_report,
    send_paced,
    settings_from,
    unique_topic,
)
from benchmarks.peers import (
    PeerHandle,
    free_port,
    install_signal_handlers,
    start_manage_command,
    start_weir,
)

SOURCE, TARGET = "source", "target"
MIRRORED_PREFIX = "mirrored"  # the mirror's topics regex is ``mirrored-.*``
PLAIN_PREFIX = "plain"  # the peer's source topics, which the mirror must not see
DIRECT_PREFIX = "direct"  # read back from the source itself: the lag's baseline
BATCH = 500  # records per consume() call, as the mirror's replicator
POLL_S = 0.02  # how often the target's high watermarks are read during a catch-up
DRAIN_S = 15.0  # after the producer is done, wait at most this long for stragglers


@dataclass
class MirrorSettings:
    records: int = 200_000
    partitions: int = 6
    size: int = 1024
    rates: list[int] = field(default_factory=lambda: [2_000, 5_000])
    duration: float = 15.0
    warmup: float = 2.0
    timeout: float = 300.0


@dataclass
class CatchUp:
    copier: str
    records: int
    first_record_s: float  # from the copier's start to the first record on the target
    seconds: float  # from the last poll that saw no record on the target to the last record
    copier_cpu_pct: float
    brokers_cpu_pct: float  # both clusters' brokers and Redis, % of one core

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("nan")

    def mb_per_s(self, size: int) -> float:
        return self.records_per_s * size / MB


@dataclass
class Steady:
    copier: str
    rate: int
    expected: int
    measured: int
    duplicates: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    first_tenth_p50_ms: float
    last_tenth_p50_ms: float
    producer_behind_max_ms: float
    copier_cpu_pct: float
    brokers_cpu_pct: float  # both clusters' brokers and Redis, % of one core

    @property
    def kept_up(self) -> bool:
        return (
            self.measured == self.expected
            and self.last_tenth_p50_ms <= 2 * self.first_tenth_p50_ms + 50
        )


# -- the copiers ----------------------------------------------------------------------------
def mirror_properties(source: str, target: str) -> str:
    """The ``connect-mirror-maker.properties`` of the ``mirror`` copier."""
    return "\n".join(
        [
            f"clusters = {SOURCE}, {TARGET}",
            f"{SOURCE}.bootstrap.servers = {source}",
            f"{TARGET}.bootstrap.servers = {target}",
            f"{SOURCE}->{TARGET}.enabled = true",
            f"{SOURCE}->{TARGET}.topics = {MIRRORED_PREFIX}-.*",
            "refresh.topics.interval.seconds = 1",
            "replication.factor = 1",
            "offset-syncs.topic.replication.factor = 1",
            "checkpoints.topic.replication.factor = 1",
            "heartbeats.topic.replication.factor = 1",
            "",
        ]
    )


def start_mirror_maker(source: str, target: PeerHandle, workdir: Path) -> PeerHandle:
    """``manage.py mirror-maker`` with :func:`mirror_properties`, publishing its status to
    the target cluster's Redis (run it near the cluster it writes to, as MM2 advises)."""
    properties = workdir / "connect-mirror-maker.properties"
    properties.write_text(mirror_properties(source, target.bootstrap))
    return start_manage_command(
        "mirror-maker", ["mirror-maker", str(properties)], env=target.env, workdir=workdir
    )


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def plain_copy(
    source: str,
    target: str,
    topic: str,
    target_topic: str,
    partitions: int,
    expected: int,
    timeout: float,
    ready: Event,
) -> dict[str, Any]:
    """The ``plain`` copier (in its own process): copy ``expected`` records of ``topic`` to
    ``target_topic``, partition for partition, acknowledged only at the end."""
    consumer = Consumer(consumer_config(source))
    producer = Producer(producer_config(target, acks="all"))
    producer.list_topics(target_topic, timeout=10.0)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    cpu0 = _cpu_self()
    ready.set()
    copied = 0
    deadline = time.monotonic() + timeout
    try:
        while copied < expected and time.monotonic() < deadline:
            for message in consumer.consume(BATCH, 0.2):
                if message.error() is not None:
                    raise RuntimeError(f"consume error: {message.error()}")
                _, timestamp = message.timestamp()
                while True:
                    try:
                        producer.produce(
                            target_topic,
                            message.value(),
                            message.key(),
                            message.partition(),
                            timestamp=timestamp,
                            headers=message.headers() or [],
                        )
                        break
                    except BufferError:
                        producer.poll(0.01)
                copied += 1
            producer.poll(0)
        remaining = producer.flush(30.0)
    finally:
        consumer.close()
    return {"copied": copied, "unsent": remaining, "cpu_seconds": _cpu_self() - cpu0}


class PlainCopier:
    """:func:`plain_copy` in a spawned process, as a context manager: entered once its
    clients are connected and assigned; on exit, its report (an error is raised)."""

    def __init__(
        self, source: str, target: str, topic: str, target_topic: str, partitions: int
    ) -> None:
        self.args = (source, target, topic, target_topic, partitions)
        self.report: dict[str, Any] = {}

    @contextlib.contextmanager
    def running(self, expected: int, timeout: float) -> Iterator[PlainCopier]:
        ctx = multiprocessing.get_context("spawn")
        ready = ctx.Event()
        parent, child = ctx.Pipe(duplex=False)
        proc = ctx.Process(
            target=child_main,
            args=(child, plain_copy, *self.args, expected, timeout, ready),
            daemon=True,
        )
        proc.start()
        child.close()
        try:
            if not ready.wait(60.0):
                raise TimeoutError("the plain copier did not get ready")
            yield self
            self.report = receive_report(parent, timeout + 60.0, "plain copier")
        except BaseException:
            proc.terminate()
            raise
        finally:
            reap(proc)


# -- catch-up -------------------------------------------------------------------------------
def produce_backlog(bootstrap: str, topic: str, settings: MirrorSettings) -> float:
    """``settings.records`` records of incompressible values, round robin over the
    partitions, all acknowledged; the seconds it took."""
    failed = 0

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    config = producer_config(bootstrap)
    config["on_delivery"] = on_delivery
    producer = Producer(config)
    value = os.urandom(settings.size)
    started = time.monotonic()
    for n in range(settings.records):
        while True:
            try:
                producer.produce(topic, value, None, n % settings.partitions)
                break
            except BufferError:
                producer.poll(0.01)
        if n % 16384 == 0:
            producer.poll(0)
    if producer.flush(settings.timeout) or failed:
        raise RuntimeError(f"backlog: {failed} records failed to be delivered")
    return time.monotonic() - started


def target_count(consumer: Consumer, topic: str, partitions: int) -> int:
    """The sum of ``topic``'s high watermarks on the target (0 while it does not exist)."""
    total = 0
    for p in range(partitions):
        try:
            _low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, p), timeout=1.0, cached=False
            )
        except KafkaException:
            return total
        total += max(high, 0)
    return total


def time_catch_up(
    target: str,
    topic: str,
    settings: MirrorSettings,
    copier: str,
    cpu: Callable[[], float],
    started: float,
    brokers: Callable[[], float],
) -> CatchUp:
    """Watch ``topic`` on the target fill up to ``settings.records`` (see module docstring);
    ``started`` is the copier's start (monotonic) and ``cpu`` its CPU seconds so far."""
    watcher = Consumer(consumer_config(target))
    expected = settings.records
    deadline = started + settings.timeout
    try:
        count = 0
        while count == 0:  # the clock starts at the last poll that saw nothing
            if time.monotonic() > deadline:
                raise TimeoutError(f"{copier}: nothing on the target after {settings.timeout}s")
            time.sleep(POLL_S)
            empty_at, cpu0, b0 = time.monotonic(), cpu(), brokers()
            count = target_count(watcher, topic, settings.partitions)
        first_at = time.monotonic()
        while count < expected:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{copier}: {count} of {expected} records copied")
            time.sleep(POLL_S)
            count = target_count(watcher, topic, settings.partitions)
        done_at, cpu1, b1 = time.monotonic(), cpu(), brokers()
    finally:
        watcher.close()
    seconds = done_at - empty_at
    return CatchUp(
        copier=copier,
        records=count,
        first_record_s=first_at - started,
        seconds=seconds,
        copier_cpu_pct=100.0 * (cpu1 - cpu0) / seconds if seconds > 0 else float("nan"),
        brokers_cpu_pct=100.0 * (b1 - b0) / seconds if seconds > 0 else float("nan"),
    )


# -- steady state ---------------------------------------------------------------------------
def paced_produce(
    bootstrap: str, topic: str, rate: int, total: int, settings: MirrorSettings
) -> dict[str, Any]:
    """The steady producer (in its own process): ``total`` stamped records at ``rate``/s."""
    producer = Producer(producer_config(bootstrap, linger_ms=1.0))
    producer.list_topics(topic, timeout=10.0)
    behind = send_paced(
        producer,
        topic,
        rate=rate,
        total=total,
        size=settings.size,
        wait=time.sleep,
        partitions=settings.partitions,
    )
    unsent = producer.flush(30.0)
    return {"unsent": unsent, "behind_max_ms": max(behind, default=0) / 1e6}


def prime(bootstrap: str, topic: str, partitions: int) -> None:
    """One record per partition with sequence number -1 (never measured)."""
    producer = Producer(producer_config(bootstrap, linger_ms=0.0))
    for p in range(partitions):
        producer.produce(topic, STAMP.pack(time.monotonic_ns(), -1), None, p)
    if producer.flush(30.0):
        raise RuntimeError(f"priming {topic} failed")


def wait_topic(consumer: Consumer, topic: str, partitions: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = consumer.list_topics(topic, timeout=2.0).topics.get(topic)
        if meta is not None and meta.error is None and len(meta.partitions) == partitions:
            return
        time.sleep(0.1)
    raise TimeoutError(f"{topic} did not appear on the target within {timeout}s")


def measure_lag(
    source: str,
    target: str,
    topic: str,
    target_topic: str,
    rate: int,
    settings: MirrorSettings,
    copier: str,
    cpu: Callable[[], float],
    brokers: Callable[[], float],
) -> Steady:
    """Replication lag of ``rate`` records/s from ``topic`` on the source, read as
    ``target_topic`` on the target (see module docstring); the copier is already running."""
    total = int(rate * (settings.warmup + settings.duration))
    warmup_count = int(rate * settings.warmup)
    consumer = Consumer(consumer_config(target, large_fetches=False))
    lags: list[tuple[int, float]] = []  # (seq, lag ms)
    seen: set[int] = set()
    duplicates = 0
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=child_main,
        args=(child, paced_produce, source, topic, rate, total, settings),
        daemon=True,
    )
    try:
        wait_topic(consumer, target_topic, settings.partitions, 60.0)
        consumer.assign(
            [TopicPartition(target_topic, p, OFFSET_BEGINNING) for p in range(settings.partitions)]
        )
        primed = 0
        prime(source, topic, settings.partitions)
        deadline = time.monotonic() + 60.0
        while primed < settings.partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{copier}: the priming records did not arrive")
            if consumer.poll(0.1) is not None:
                primed += 1
        cpu0, b0, t0 = cpu(), brokers(), time.monotonic()
        proc.start()
        child.close()
        poll, unpack_from, wall = consumer.poll, STAMP.unpack_from, time.time
        producer_done_at: float | None = None
        deadline = t0 + settings.warmup + settings.duration + 60.0 + DRAIN_S
        while len(seen) < total:
            msg = poll(0.1)
            if msg is not None:
                now_ms = wall() * 1000
                if msg.error() is not None:
                    raise RuntimeError(f"consume error: {msg.error()}")
                _sent, seq = unpack_from(msg.value())
                if seq in seen:
                    duplicates += 1
                    continue
                seen.add(seq)
                if seq >= warmup_count:
                    lags.append((seq, now_ms - msg.timestamp()[1]))
                continue
            mono = time.monotonic()
            if producer_done_at is None and parent.poll():
                producer_done_at = mono
            if mono > deadline or (
                producer_done_at is not None and mono - producer_done_at > DRAIN_S
            ):
                break
        elapsed, cpu1, b1 = time.monotonic() - t0, cpu(), brokers()
        produced = receive_report(parent, 60.0, "steady producer")
    except BaseException:
        if proc.is_alive():
            proc.terminate()
        raise
    finally:
        consumer.close()
        if proc.pid is not None:  # started
            reap(proc)
    if produced["unsent"]:
        raise RuntimeError(f"steady producer: {produced['unsent']} records not delivered")
    by_seq = [lag for _seq, lag in sorted(lags)]
    tenth = max(1, len(by_seq) // 10)
    ordered = sorted(by_seq)
    return Steady(
        copier=copier,
        rate=rate,
        expected=total - warmup_count,
        measured=len(ordered),
        duplicates=duplicates,
        p50_ms=percentile(ordered, 50),
        p99_ms=percentile(ordered, 99),
        max_ms=ordered[-1] if ordered else float("nan"),
        first_tenth_p50_ms=statistics.median(by_seq[:tenth]) if by_seq else float("nan"),
        last_tenth_p50_ms=statistics.median(by_seq[-tenth:]) if by_seq else float("nan"),
        producer_behind_max_ms=produced["behind_max_ms"],
        copier_cpu_pct=100.0 * (cpu1 - cpu0) / elapsed,
        brokers_cpu_pct=100.0 * (b1 - b0) / elapsed,
    )


# -- the runs -------------------------------------------------------------------------------
def brokers_cpu(*clusters: PeerHandle) -> Callable[[], float]:
    """CPU seconds so far of every process of ``clusters`` (brokers and their Redis)."""
    return lambda: sum(cluster.cpu_seconds() for cluster in clusters)


@dataclass
class Results:
    backlog_produce_s: float = 0.0
    catch_up: list[CatchUp] = field(default_factory=list)
    steady: list[Steady] = field(default_factory=list)
    mirror_exit: int | None = None


def run_mirror(
    source: PeerHandle, target: PeerHandle, backlog: str, settings: MirrorSettings, work: Path
) -> tuple[list[CatchUp], list[Steady], int | None]:
    """The ``mirror`` copier: start it on the backlog, time the catch-up, then each rate;
    stop it with SIGTERM (a clean stop exits 0)."""
    started = time.monotonic()
    mirror = start_mirror_maker(source.bootstrap, target, work)
    try:
        remote = f"{SOURCE}.{backlog}"
        catch_up = time_catch_up(
            target.bootstrap,
            remote,
            settings,
            "mirror",
            mirror.cpu_seconds,
            started,
            brokers_cpu(source, target),
        )
        print(f"[mirror] catch-up {catch_up.mb_per_s(settings.size):.1f} MB/s", flush=True)
        steady = []
        for rate in settings.rates:
            topic = unique_topic(f"{MIRRORED_PREFIX}-steady-{rate}")
            create_topic(source.bootstrap, topic, settings.partitions)
            result = measure_lag(
                source.bootstrap,
                target.bootstrap,
                topic,
                f"{SOURCE}.{topic}",
                rate,
                settings,
                "mirror",
                mirror.cpu_seconds,
                brokers_cpu(source, target),
            )
            print(f"[mirror] {rate}/s: lag p99 {result.p99_ms:.1f} ms", flush=True)
            steady.append(result)
        if not mirror.alive():
            raise RuntimeError("mirror-maker exited")
    except Exception as exc:
        raise RuntimeError(f"{exc}; the mirror-maker's log:\n{mirror.log_tail(60)}") from exc
    finally:
        mirror.stop(timeout=60.0)
    return catch_up, steady, mirror.procs[0].returncode


def run_plain(
    source: PeerHandle, target: PeerHandle, backlog: str, settings: MirrorSettings
) -> tuple[list[CatchUp], list[Steady]]:
    """The ``plain`` copier on the same backlog, then each rate."""
    remote = f"{PLAIN_PREFIX}.{backlog}"
    create_topic(target.bootstrap, remote, settings.partitions)
    copier = PlainCopier(source.bootstrap, target.bootstrap, backlog, remote, settings.partitions)
    started = time.monotonic()
    with copier.running(settings.records, settings.timeout):
        catch_up = time_catch_up(
            target.bootstrap,
            remote,
            settings,
            "plain",
            lambda: 0.0,
            started,
            brokers_cpu(source, target),
        )
    catch_up.copier_cpu_pct = (
        100.0 * copier.report["cpu_seconds"] / max(catch_up.seconds + catch_up.first_record_s, 1e-9)
    )
    print(f"[plain] catch-up {catch_up.mb_per_s(settings.size):.1f} MB/s", flush=True)
    steady = []
    for rate in settings.rates:
        topic = unique_topic(f"{PLAIN_PREFIX}-steady-{rate}")
        remote = f"{PLAIN_PREFIX}.{topic}"
        create_topic(source.bootstrap, topic, settings.partitions)
        create_topic(target.bootstrap, remote, settings.partitions)
        copier = PlainCopier(source.bootstrap, target.bootstrap, topic, remote, settings.partitions)
        total = settings.partitions + int(rate * (settings.warmup + settings.duration))
        with copier.running(total, settings.timeout):
            result = measure_lag(
                source.bootstrap,
                target.bootstrap,
                topic,
                remote,
                rate,
                settings,
                "plain",
                lambda: 0.0,
                brokers_cpu(source, target),
            )
        result.copier_cpu_pct = (
            100.0 * copier.report["cpu_seconds"] / (settings.warmup + settings.duration)
        )
        print(f"[plain] {rate}/s: lag p99 {result.p99_ms:.1f} ms", flush=True)
        steady.append(result)
    return catch_up, steady


def run_direct(source: PeerHandle, settings: MirrorSettings) -> list[Steady]:
    """The baseline of the lag: each rate read back from the source itself, nothing copied."""
    steady = []
    for rate in settings.rates:
        topic = unique_topic(f"{DIRECT_PREFIX}-steady-{rate}")
        create_topic(source.bootstrap, topic, settings.partitions)
        result = measure_lag(
            source.bootstrap,
            source.bootstrap,
            topic,
            topic,
            rate,
            settings,
            "direct",
            lambda: 0.0,
            brokers_cpu(source),
        )
        print(f"[direct] {rate}/s: lag p99 {result.p99_ms:.1f} ms", flush=True)
        steady.append(result)
    return steady


def run(settings: MirrorSettings) -> Results:
    results = Results()
    with tempfile.TemporaryDirectory(prefix="weir-bench-mirror-") as root:
        work = Path(root)
        source = start_weir(free_port(), work / "source-data")
        target = start_weir(free_port(), work / "target-data")
        try:
            print(f"[clusters] source {source.bootstrap}, target {target.bootstrap}", flush=True)
            results.steady += run_direct(source, settings)
            backlog = unique_topic(f"{MIRRORED_PREFIX}-backlog")
            create_topic(source.bootstrap, backlog, settings.partitions)
            results.backlog_produce_s = produce_backlog(source.bootstrap, backlog, settings)
            print(
                f"[source] backlog of {settings.records} records in "
                f"{results.backlog_produce_s:.1f} s",
                flush=True,
            )
            catch_up, steady, results.mirror_exit = run_mirror(
                source, target, backlog, settings, work
            )
            results.catch_up.append(catch_up)
            results.steady += steady
            catch_up, steady = run_plain(source, target, backlog, settings)
            results.catch_up.append(catch_up)
            results.steady += steady
        finally:
            target.stop()
            source.stop()
    return results


# -- the report -----------------------------------------------------------------------------
def report(results: Results, settings: MirrorSettings, machine: str) -> str:
    size = settings.size
    lines = [
        f"mirror: two single-broker Weir clusters, {settings.partitions} partitions, "
        f"{size} B values; {machine}",
        "",
        f"catch-up of {settings.records} records ({settings.records * size / MB:.0f} MB), "
        f"backlog produced in {results.backlog_produce_s:.1f} s:",
        format_table(
            ["copier", "records/s", "MB/s", "first record after", "copier CPU", "brokers CPU"],
            [
                [
                    c.copier,
                    f"{c.records_per_s:,.0f}",
                    f"{c.mb_per_s(size):.1f}",
                    f"{c.first_record_s:.1f} s",
                    f"{c.copier_cpu_pct:.0f}%",
                    f"{c.brokers_cpu_pct:.0f}%",
                ]
                for c in results.catch_up
            ],
        ),
        "",
        f"steady state: {settings.duration:g} s per rate (+{settings.warmup:g} s warm-up, "
        "excluded); lag = read on the target - CreateTime:",
        format_table(
            [
                "copier",
                "rate/s",
                "records",
                "lag p50 ms",
                "p99 ms",
                "max ms",
                "first/last tenth p50",
                "kept up",
                "copier CPU",
                "brokers CPU",
            ],
            [
                [
                    s.copier,
                    f"{s.rate:,}",
                    f"{s.measured}/{s.expected}"
                    + (f" +{s.duplicates} dup" if s.duplicates else ""),
                    f"{s.p50_ms:.1f}",
                    f"{s.p99_ms:.1f}",
                    f"{s.max_ms:.1f}",
                    f"{s.first_tenth_p50_ms:.1f}/{s.last_tenth_p50_ms:.1f}",
                    "yes" if s.kept_up else "NO",
                    f"{s.copier_cpu_pct:.0f}%",
                    f"{s.brokers_cpu_pct:.0f}%",
                ]
                for s in results.steady
            ],
        ),
        "",
    ]
    by_copier = {c.copier: c for c in results.catch_up}
    if len(by_copier) == 2:
        lines.append(
            "mirror/plain catch-up MB/s: "
            f"{ratio(by_copier['mirror'].records_per_s, by_copier['plain'].records_per_s)}"
        )
    for rate in settings.rates:
        row = {s.copier: s for s in results.steady if s.rate == rate}
        if "mirror" in row and "plain" in row:
            lines.append(
                f"mirror/plain lag p99 at {rate}/s: "
                f"{ratio(row['mirror'].p99_ms, row['plain'].p99_ms)}"
                + (
                    f" (mirror/direct {ratio(row['mirror'].p99_ms, row['direct'].p99_ms)})"
                    if "direct" in row
                    else ""
                )
            )
    lines.append(f"mirror-maker exit status after SIGTERM: {results.mirror_exit}")
    return "\n".join(lines)


def parse_rates(text: str) -> list[int]:
    try:
        rates = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not rates or min(rates) < 1:
        raise argparse.ArgumentTypeError("rates must be positive integers, e.g. 2000,5000")
    return rates


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.records < 1 or args.partitions < 1 or args.size < STAMP.size:
        parser.error(f"need --records >= 1, --partitions >= 1, --size >= {STAMP.size}")
    if args.duration <= 0 or args.warmup < 0 or args.duration + args.warmup > 600:
        parser.error("need --duration > 0, --warmup >= 0, together at most 600 s")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("mirror", __doc__)
    parser.add_argument("--records", type=int, default=200_000, help="catch-up backlog")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--size", type=int, default=1024, help="record value size (>= 16)")
    parser.add_argument(
        "--rates", type=parse_rates, default=[2_000, 5_000], help="steady records/s, e.g. 2000,5000"
    )
    parser.add_argument("--duration", type=float, default=15.0, help="measured seconds per rate")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument("--timeout", type=float, default=300.0, help="bound on each phase")
    return parse_checked(parser, argv, check)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_from(MirrorSettings, args)
    install_signal_handlers()
    machine = machine_note()
    results = run(settings)
    payload = {
        "settings": asdict(settings),
        "machine": machine,
        "backlog_produce_s": results.backlog_produce_s,
        "catch_up": [
            {
                **asdict(c),
                "records_per_s": c.records_per_s,
                "mb_per_s": c.mb_per_s(settings.size),
            }
            for c in results.catch_up
        ],
        "steady": [{**asdict(s), "kept_up": s.kept_up} for s in results.steady],
        "mirror_exit": results.mirror_exit,
    }
    print_results(report(results, settings, machine), args.json, payload)
    return 0 if results.mirror_exit == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

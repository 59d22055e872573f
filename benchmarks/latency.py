"""End-to-end latency at a fixed produce rate, Weir vs Tansu, one client harness.

A producer process sends ``--rate`` records/s (default 10k/s) of ``--size`` bytes for
``--warmup`` + ``--duration`` seconds (default 1 + 10) to a fresh 1-partition topic; every
value starts with the ``time.monotonic_ns()`` of its ``produce()`` call and a sequence
number. The harness process consumes the partition (manual assign, ``poll()`` one record at a
time) and records ``receive - send`` for every record sent after the warm-up. It prints
p50/p90/p99/p99.9/max per peer and Weir/Tansu ratios. CLOCK_MONOTONIC is system-wide on
Linux, so stamps taken in the producer process are comparable in the consumer process.

The producer stamps the actual send time (not the scheduled one); how far it fell behind
its schedule is reported so a saturated client is visible rather than hidden.

    python -m benchmarks.latency --peers tansu
    python -m benchmarks.latency --rate 10000 --duration 10 --linger-ms 0

Nothing is asserted; the DESIGN.md target (p99 <= 5 ms at 10k msg/s) is printed for context.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from multiprocessing.synchronize import Event
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import (
    STAMP,
    add_rate_arguments,
    benchmark_parser,
    check_rate,
    child_main,
    compare_peers,
    consumer_config,
    create_topic,
    delete_topic,
    format_table,
    parse_peer_args,
    percentile,
    producer_config,
    ratio,
    reap,
    receive_report,
    send_paced,
    settings_from,
    unique_topic,
)
from benchmarks.peers import (
    PeerSession,
    add_peer_arguments,
)

TARGET_P99_MS = 5.0
DRAIN_SECONDS = 10.0  # after the producer is done, wait at most this long for stragglers


@dataclass
class LatencySettings:
    rate: int = 10_000
    duration: float = 10.0
    warmup: float = 1.0
    size: int = 1024
    acks: str = "1"
    linger_ms: float = 1.0
    fetch_wait_max_ms: int = 100

    @property
    def total(self) -> int:
        return int(self.rate * (self.warmup + self.duration))

    @property
    def warmup_count(self) -> int:
        return int(self.rate * self.warmup)


@dataclass
class ProducerReport:
    sent: int
    failed: int
    seconds: float
    max_behind_ms: float
    p99_behind_ms: float
    cpu_seconds: float


@dataclass
class LatencyResult:
    peer: str
    origin: str
    measured: int
    expected: int
    received_total: int
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    mean_ms: float
    producer: ProducerReport
    broker_cpu_pct: float | None
    producer_cpu_pct: float
    consumer_cpu_pct: float


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def paced_produce(
    bootstrap: str, topic: str, settings: LatencySettings, ready: Event, go: Event
) -> ProducerReport:
    """Send ``settings.total`` stamped records at ``settings.rate`` per second."""
    failed = 0

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1

    config = producer_config(bootstrap, acks=settings.acks, linger_ms=settings.linger_ms)
    config["on_delivery"] = on_delivery
    producer = Producer(config)
    producer.list_topics(topic, timeout=10.0)
    clock = time.monotonic_ns
    total = settings.total

    cpu0 = _cpu_self()
    try:
        ready.set()
        if not go.wait(60.0):
            raise TimeoutError("consumer never gave the go signal")
        start = clock()
        behind = send_paced(
            producer, topic, rate=settings.rate, total=total, size=settings.size, wait=time.sleep
        )
        remaining = producer.flush(30.0)
        seconds = (clock() - start) / 1e9
    except BaseException:
        producer.purge()
        producer.close()
        raise
    producer.close()
    behind.sort()
    return ProducerReport(
        sent=total - remaining - failed,
        failed=failed + remaining,
        seconds=seconds,
        max_behind_ms=behind[-1] / 1e6 if behind else 0.0,
        p99_behind_ms=percentile(behind, 99) / 1e6 if behind else 0.0,
        cpu_seconds=_cpu_self() - cpu0,
    )


def _paced_produce_fields(
    bootstrap: str, topic: str, settings: LatencySettings, ready: Event, go: Event
) -> dict[str, Any]:
    """:func:`paced_produce` in the producer process, its report as plain data."""
    return asdict(paced_produce(bootstrap, topic, settings, ready, go))


def measure(
    peer: str,
    origin: str,
    bootstrap: str,
    settings: LatencySettings,
    cpu: Callable[[], float | None],
) -> LatencyResult:
    topic = unique_topic("bench-latency")
    create_topic(bootstrap, topic, partitions=1)
    ctx = multiprocessing.get_context("spawn")
    ready, go = ctx.Event(), ctx.Event()
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=child_main,
        args=(child_conn, _paced_produce_fields, bootstrap, topic, settings, ready, go),
        daemon=True,
    )
    consumer = Consumer(
        consumer_config(
            bootstrap, fetch_wait_max_ms=settings.fetch_wait_max_ms, large_fetches=False
        )
    )
    latencies: list[int] = []
    received = 0
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        consumer.poll(0.5)  # connection, offset lookup and first fetch in flight
        proc.start()
        child_conn.close()
        if not ready.wait(60.0):
            raise TimeoutError("producer process did not get ready")
        cpu0 = cpu()
        self_cpu0 = _cpu_self()
        t0 = time.monotonic()
        go.set()
        poll = consumer.poll
        clock = time.monotonic_ns
        unpack_from = STAMP.unpack_from
        total = settings.total
        warmup_count = settings.warmup_count
        deadline = t0 + settings.warmup + settings.duration + 30.0 + DRAIN_SECONDS
        producer_done_at: float | None = None
        while received < total:
            msg = poll(0.1)
            if msg is not None:
                now = clock()
                if msg.error() is not None:
                    raise RuntimeError(f"consume error: {msg.error()}")
                sent_at, seq = unpack_from(msg.value())
                received += 1
                if seq >= warmup_count:
                    latencies.append(now - sent_at)
                continue
            mono = time.monotonic()
            if producer_done_at is None and parent_conn.poll():
                producer_done_at = mono
            if mono > deadline or (
                producer_done_at is not None and mono - producer_done_at > DRAIN_SECONDS
            ):
                break
        elapsed = time.monotonic() - t0
        cpu1 = cpu()
        self_cpu = _cpu_self() - self_cpu0
        producer = ProducerReport(**receive_report(parent_conn, 60.0, "producer process"))
    except BaseException:
        if proc.is_alive():
            proc.terminate()  # interrupted or failed: do not wait for the schedule to end
        raise
    finally:
        consumer.close()
        reap(proc)
        delete_topic(bootstrap, topic)
    latencies.sort()
    ms = [v / 1e6 for v in latencies]
    return LatencyResult(
        peer=peer,
        origin=origin,
        measured=len(ms),
        expected=total - warmup_count,
        received_total=received,
        p50_ms=percentile(ms, 50),
        p90_ms=percentile(ms, 90),
        p99_ms=percentile(ms, 99),
        p999_ms=percentile(ms, 99.9),
        max_ms=ms[-1] if ms else float("nan"),
        mean_ms=statistics.fmean(ms) if ms else float("nan"),
        producer=producer,
        broker_cpu_pct=(
            100.0 * (cpu1 - cpu0) / elapsed if cpu0 is not None and cpu1 is not None else None
        ),
        producer_cpu_pct=100.0 * producer.cpu_seconds / max(producer.seconds, 1e-9),
        consumer_cpu_pct=100.0 * self_cpu / elapsed,
    )


def report(results: list[LatencyResult], settings: LatencySettings, machine: str) -> str:
    lines = [
        f"latency: {settings.rate} msg/s for {settings.duration:g}s (+{settings.warmup:g}s "
        f"warm-up, excluded), {settings.size} B values, 1 partition, acks={settings.acks}, "
        f"linger.ms={settings.linger_ms:g}, fetch.wait.max.ms={settings.fetch_wait_max_ms}, "
        f"{machine}",
        "",
    ]
    headers = [
        "peer",
        "records",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "mean ms",
        "producer behind p99/max ms",
        "CPU broker/prod/cons",
    ]
    rows = [
        [
            r.peer,
            f"{r.measured}/{r.expected}",
            f"{r.p50_ms:.2f}",
            f"{r.p90_ms:.2f}",
            f"{r.p99_ms:.2f}",
            f"{r.p999_ms:.2f}",
            f"{r.max_ms:.2f}",
            f"{r.mean_ms:.2f}",
            f"{r.producer.p99_behind_ms:.2f}/{r.producer.max_behind_ms:.2f}",
            ("-" if r.broker_cpu_pct is None else f"{r.broker_cpu_pct:.0f}%")
            + f"/{r.producer_cpu_pct:.0f}%/{r.consumer_cpu_pct:.0f}%",
        ]
        for r in results
    ]
    lines.append(format_table(headers, rows))
    for r in results:
        if r.measured != r.expected or r.producer.failed:
            lines.append(
                f"! {r.peer}: measured {r.measured} of {r.expected} records "
                f"({r.producer.failed} failed to send)"
            )
    by_peer = {r.peer: r for r in results}
    if "weir" in by_peer and "tansu" in by_peer:
        weir, tansu = by_peer["weir"], by_peer["tansu"]
        lines.append("")
        lines.append(
            f"Weir/Tansu latency (lower is better): p50 {ratio(weir.p50_ms, tansu.p50_ms)}, "
            f"p99 {ratio(weir.p99_ms, tansu.p99_ms)}, p99.9 {ratio(weir.p999_ms, tansu.p999_ms)}"
        )
    if "weir" in by_peer:
        lines.append(
            f"Weir p99 {by_peer['weir'].p99_ms:.2f} ms (DESIGN.md target <= {TARGET_P99_MS:g} ms)"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("latency", __doc__)
    add_rate_arguments(parser, rate=10_000, size=1024, duration=10.0, warmup=1.0)
    add_peer_arguments(parser)
    parser.add_argument("--acks", default="1", choices=["0", "1", "all"])
    parser.add_argument("--linger-ms", type=float, default=1.0)
    parser.add_argument("--fetch-wait-max-ms", type=int, default=100)
    return parse_peer_args(parser, argv, check_rate)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_from(LatencySettings, args)
    results: list[LatencyResult] = []

    def work(session: PeerSession) -> None:
        peer = session.name
        result = measure(peer, session.origin, session.bootstrap, settings, session.cpu_seconds)
        print(
            f"[{peer}] p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, "
            f"p99.9 {result.p999_ms:.2f} ms",
            flush=True,
        )
        results.append(result)

    return compare_peers(
        args,
        work,
        report=lambda machine: report(results, settings, machine),
        results=lambda machine: {
            "settings": asdict(settings),
            "machine": machine,
            "results": [asdict(r) for r in results],
        },
    )


if __name__ == "__main__":
    sys.exit(main())

"""Produce and consume throughput, Weir vs Tansu, measured in one run with one client harness.

For each peer: create a fresh topic (1 partition, RF 1); produce ``--records`` values of
``--size`` bytes with confluent-kafka (acks=1, compression none, linger.ms=5, ~1 MB batches,
no idempotence) and time from the first ``produce()`` until ``flush()`` reports everything
delivered; then consume the whole partition from ``OFFSET_BEGINNING`` with a manually
assigned consumer (large fetches, no group commits) and time until the last offset is read.
Figures are MB/s of record values (1 MB = 10**6 B) and msgs/s, plus Weir/Tansu ratios.

Peers are started here one after the other (each alone on the machine while measured)
unless ``--weir-bootstrap`` / ``--tansu-bootstrap`` point at running brokers.

    python -m benchmarks.throughput --peers tansu
    python -m benchmarks.throughput --records 1000000 --runs 3 --producer-process

Nothing is asserted: the figures are printed (and optionally written with ``--json``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import (
    MB,
    benchmark_parser,
    child_main,
    compare_peers,
    consumer_config,
    create_topic,
    delete_topic,
    format_table,
    parse_peer_args,
    producer_config,
    ratio,
    reap,
    receive_report,
    settings_from,
    unique_topic,
)
from benchmarks.peers import (
    PeerSession,
    add_peer_arguments,
)

POLL_EVERY = 16_384  # serve the producer's (error-only) report queue this often
CONSUME_BATCH = 10_000
TARGETS = {"produce": 1.0, "consume": 1.5}  # DESIGN.md section 4, informational only


@dataclass
class ProduceSettings:
    """What the producer sends and how; identical for every peer."""

    records: int
    size: int
    acks: str = "1"
    linger_ms: float = 5.0
    batch_size: int = 1_000_000
    compression: str = "none"
    timeout: float = 300.0

    def describe(self) -> str:
        """The settings as the first line of a report states them."""
        return (
            f"{self.records} records x {self.size} B, 1 partition, RF 1, "
            f"acks={self.acks}, compression={self.compression}, "
            f"linger.ms={self.linger_ms:g}, batch.size={self.batch_size}"
        )


@dataclass
class PhaseResult:
    """One timed phase (produce or consume)."""

    records: int
    bytes: int
    seconds: float
    client_cpu_seconds: float
    broker_cpu_seconds: float | None = None
    failed: int = 0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / MB / self.seconds if self.seconds > 0 else 0.0

    @property
    def msgs_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


@dataclass
class RunResult:
    peer: str
    run: int
    produce: PhaseResult
    consume: PhaseResult


@dataclass
class PeerSummary:
    peer: str
    origin: str
    runs: list[RunResult] = field(default_factory=list)

    def median(self, phase: str, attr: str) -> float:
        return statistics.median(getattr(getattr(r, phase), attr) for r in self.runs)

    def mb_ratio(self, other: PeerSummary, phase: str) -> str:
        """This peer's median MB/s in ``phase`` over ``other``'s, as the reports print it."""
        return ratio(self.median(phase, "mb_per_s"), other.median(phase, "mb_per_s"))


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def produce_records(
    bootstrap: str,
    topic: str,
    settings: ProduceSettings,
    client_config: Mapping[str, Any] | None = None,
) -> PhaseResult:
    """Send ``settings.records`` pre-built values to partition 0; time until all delivered.

    ``client_config`` is laid over the producer settings (e.g. ``security.protocol``).
    """
    failed = 0
    first_error: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        nonlocal failed
        if err is not None:
            failed += 1
            if not first_error:
                first_error.append(str(err))

    config = producer_config(
        bootstrap,
        acks=settings.acks,
        linger_ms=settings.linger_ms,
        batch_size=settings.batch_size,
        compression=settings.compression,
    )
    config.update(client_config or {})
    config["on_delivery"] = on_delivery
    producer = Producer(config)
    producer.list_topics(topic, timeout=10.0)  # connect + metadata before the clock starts
    value = os.urandom(settings.size)  # incompressible, built once
    produce = producer.produce
    poll = producer.poll
    records = settings.records

    cpu0 = _cpu_self()
    t0 = time.perf_counter()
    deadline = t0 + settings.timeout
    try:
        for i in range(records):
            try:
                produce(topic, value, None, 0)
            except BufferError:
                while True:
                    poll(0.001)
                    try:
                        produce(topic, value, None, 0)
                        break
                    except BufferError:
                        if time.perf_counter() > deadline:
                            raise TimeoutError(f"producer queue stuck after {i} records") from None
            if not i % POLL_EVERY:
                poll(0)
        # flush() in short slices: a single long flush() call would hold off signal handlers.
        remaining = producer.flush(0.2)
        while remaining and time.perf_counter() < deadline:
            remaining = producer.flush(0.2)
        seconds = time.perf_counter() - t0
        cpu = _cpu_self() - cpu0
    except BaseException:
        producer.purge()  # drop what is queued so the client shuts down at once
        producer.close()  # and drop the connection now, not when the traceback dies
        raise
    producer.close()
    failed += remaining
    if failed:
        print(f"  ! {failed} records not delivered ({first_error[:1]})", file=sys.stderr)
    delivered = records - failed
    return PhaseResult(delivered, delivered * settings.size, seconds, cpu, failed=failed)


def _produce_fields(bootstrap: str, topic: str, settings: ProduceSettings) -> dict[str, Any]:
    """:func:`produce_records` in the producer process, its result as plain data."""
    return asdict(produce_records(bootstrap, topic, settings))


def produce_in_child(bootstrap: str, topic: str, settings: ProduceSettings) -> PhaseResult:
    """Run :func:`produce_records` in a fresh (spawned) process, to split client CPU."""
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=child_main,
        args=(child_conn, _produce_fields, bootstrap, topic, settings),
        daemon=True,
    )
    proc.start()
    child_conn.close()
    try:
        payload = receive_report(parent_conn, settings.timeout + 30.0, "producer process")
    except BaseException:
        if proc.is_alive():
            proc.terminate()
        raise
    finally:
        reap(proc)
    return PhaseResult(**payload)


def consume_records(
    bootstrap: str,
    topic: str,
    expected: int,
    timeout: float = 300.0,
    client_config: Mapping[str, Any] | None = None,
) -> PhaseResult:
    """Read ``expected`` records of partition 0 from the beginning; time the reading.

    The count comes from the producer, not from the high watermark: Tansu's ListOffsets
    (latest) answers the base offset of the last batch rather than last offset + 1.
    ``client_config`` is laid over the consumer settings (e.g. ``security.protocol``).
    """
    consumer = Consumer({**consumer_config(bootstrap), **(client_config or {})})
    try:
        consumer.list_topics(topic, timeout=10.0)  # connect before the clock starts
        count = 0
        nbytes = 0
        last_offset = -1
        consume = consumer.consume
        cpu0 = _cpu_self()
        t0 = time.perf_counter()
        deadline = t0 + timeout
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        while count < expected:
            # Ask for exactly what is left so the last call returns without waiting out
            # its timeout (consume() waits for a full batch or the timeout).
            msgs = consume(min(CONSUME_BATCH, expected - count), 0.5)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    raise RuntimeError(f"consume error: {err}")
                nbytes += len(msg)
            if msgs:
                count += len(msgs)
                last_offset = msgs[-1].offset()
            if time.perf_counter() > deadline:
                raise TimeoutError(f"read {count}/{expected} records in {timeout}s")
        seconds = time.perf_counter() - t0
        cpu = _cpu_self() - cpu0
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10.0)
        if last_offset != low + expected - 1 or high != low + expected:
            print(
                f"  note: read offsets {low}..{last_offset}, but ListOffsets says "
                f"[{low}, {high}) for {expected} records",
                file=sys.stderr,
            )
        return PhaseResult(count, nbytes, seconds, cpu)
    finally:
        consumer.close()


def produce_then_consume(
    label: str,
    run: int,
    bootstrap: str,
    topic: str,
    settings: ProduceSettings,
    cpu: Callable[[], float | None],
    client_config: Mapping[str, Any] | None = None,
    *,
    produce: Callable[[], PhaseResult] | None = None,
) -> RunResult:
    """One run on an existing ``topic``: produce (:func:`produce_records` unless ``produce``
    is given), then read it all back, with the broker's CPU (``cpu``, None when unknown)
    taken around each phase; a consumed count short of the produced one is printed."""
    b0 = cpu()
    if produce is None:
        produced = produce_records(bootstrap, topic, settings, client_config)
    else:
        produced = produce()
    b1 = cpu()
    consumed = consume_records(bootstrap, topic, produced.records, settings.timeout, client_config)
    b2 = cpu()
    if b0 is not None:
        produced.broker_cpu_seconds = b1 - b0
        consumed.broker_cpu_seconds = b2 - b1
    if consumed.records != produced.records:
        print(
            f"  ! {label}: produced {produced.records} but consumed {consumed.records}",
            file=sys.stderr,
        )
    return RunResult(label, run, produced, consumed)


def run_once(
    peer: str,
    bootstrap: str,
    run: int,
    settings: ProduceSettings,
    args: argparse.Namespace,
    cpu: Callable[[], float | None],
) -> RunResult:
    topic = unique_topic("bench-throughput")
    create_topic(bootstrap, topic, partitions=1)
    in_child = partial(produce_in_child, bootstrap, topic, settings)
    produce = in_child if args.producer_process else None
    try:
        return produce_then_consume(peer, run, bootstrap, topic, settings, cpu, produce=produce)
    finally:
        if not args.keep_topics:
            delete_topic(bootstrap, topic)


def phase_json(phase: Any) -> dict[str, Any]:
    """One phase's measurements with its rates, as the JSON output carries them."""
    return {**asdict(phase), "mb_per_s": phase.mb_per_s, "msgs_per_s": phase.msgs_per_s}


def run_json(result: RunResult) -> dict[str, Any]:
    return {
        "run": result.run,
        "produce": phase_json(result.produce),
        "consume": phase_json(result.consume),
    }


def run_line(label: str, result: RunResult) -> str:
    """The progress line printed after each run."""
    return (
        f"[{label}] run {result.run}: produce {result.produce.mb_per_s:.1f} MB/s, "
        f"consume {result.consume.mb_per_s:.1f} MB/s"
    )


def pct(cpu_seconds: float | None, seconds: float) -> str:
    if cpu_seconds is None or seconds <= 0:
        return "-"
    return f"{100.0 * cpu_seconds / seconds:.0f}%"


def rate_cells(phase: Any) -> list[str]:
    """A phase's MB/s and msg/s as the tables print them (also ``benchmarks.security``)."""
    return [f"{phase.mb_per_s:.1f}", f"{phase.msgs_per_s:,.0f}"]


def median_cells(summary: PeerSummary, phase: str) -> list[str]:
    """The median MB/s and msg/s of ``phase`` over a peer's runs, printed as :func:`rate_cells`."""
    return [
        f"{summary.median(phase, 'mb_per_s'):.1f}",
        f"{summary.median(phase, 'msgs_per_s'):,.0f}",
    ]


def cpu_cells(result: RunResult, field: str) -> str:
    """``produce%/consume%`` of one CPU measure (``broker_cpu_seconds``, ...) of a run."""
    p, c = result.produce, result.consume
    return f"{pct(getattr(p, field), p.seconds)}/{pct(getattr(c, field), c.seconds)}"


def summary_rows(
    summaries: list[PeerSummary],
    run_cells: Callable[[RunResult], list[str]],
    median_row: Callable[[PeerSummary], list[str]],
    *,
    median_from: int,
) -> list[list[str]]:
    """A table row per run (peer, run number, ``run_cells``) and, under the runs of a peer
    with ``median_from`` runs or more, a median row (peer, "median", ``median_row``)."""
    rows: list[list[str]] = []
    for summary in summaries:
        rows += [[summary.peer, str(r.run), *run_cells(r)] for r in summary.runs]
        if len(summary.runs) >= median_from:
            rows.append([summary.peer, "median", *median_row(summary)])
    return rows


def report(
    summaries: list[PeerSummary], settings: ProduceSettings, producer_process: bool, machine: str
) -> str:
    lines = [
        f"throughput: {settings.describe()}, "
        f"producer {'in a separate process' if producer_process else 'in-process'}, "
        f"{machine}",
        "CPU columns: % of one core used during the phase (broker: whole process tree).",
        "",
    ]
    headers = [
        "peer",
        "run",
        "prod MB/s",
        "prod msg/s",
        "prod s",
        "cons MB/s",
        "cons msg/s",
        "cons s",
        "broker CPU p/c",
        "client CPU p/c",
    ]
    rows = summary_rows(
        summaries,
        lambda r: [
            *rate_cells(r.produce),
            f"{r.produce.seconds:.2f}",
            *rate_cells(r.consume),
            f"{r.consume.seconds:.2f}",
            cpu_cells(r, "broker_cpu_seconds"),
            cpu_cells(r, "client_cpu_seconds"),
        ],
        lambda s: [*median_cells(s, "produce"), "", *median_cells(s, "consume"), "", "", ""],
        median_from=2,
    )
    lines.append(format_table(headers, rows))
    by_peer = {s.peer: s for s in summaries if s.runs}
    if "weir" in by_peer and "tansu" in by_peer:
        weir, tansu = by_peer["weir"], by_peer["tansu"]
        lines.append("")
        for phase in ("produce", "consume"):
            lines.append(
                f"Weir/Tansu {phase}: {weir.mb_ratio(tansu, phase)} "
                f"(DESIGN.md target >= {TARGETS[phase]:.1f}x)"
            )
    return "\n".join(lines)


def add_volume_arguments(parser: argparse.ArgumentParser, *, records: int, runs_of: str) -> None:
    """``--records``, ``--size`` and ``--runs`` (the median of the runs is reported), as the
    produce-then-consume benchmarks (this one and ``benchmarks.security``) take them."""
    parser.add_argument("--records", type=int, default=records, help="records per run")
    parser.add_argument("--size", type=int, default=1024, help="value size in bytes")
    parser.add_argument("--runs", type=int, default=3, help=f"runs per {runs_of} (median reported)")


def check_volume(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit with a usage error unless ``--records``, ``--size`` and ``--runs`` are positive."""
    if args.records < 1 or args.size < 1 or args.runs < 1:
        parser.error("--records, --size and --runs must be positive")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("throughput", __doc__)
    add_volume_arguments(parser, records=500_000, runs_of="peer")
    add_peer_arguments(parser)
    parser.add_argument("--acks", default="1", choices=["0", "1", "all"])
    parser.add_argument("--linger-ms", type=float, default=5.0)
    parser.add_argument("--batch-size", type=int, default=1_000_000)
    parser.add_argument(
        "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    parser.add_argument(
        "--producer-process",
        action="store_true",
        help="produce from a separate (spawned) process instead of the harness process",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="cap per phase, seconds")
    parser.add_argument("--keep-topics", action="store_true", help="do not delete topics")
    return parse_peer_args(parser, argv, check_volume)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_from(ProduceSettings, args)
    summaries: list[PeerSummary] = []

    def work(session: PeerSession) -> None:
        summary = PeerSummary(session.name, session.origin)
        summaries.append(summary)  # keep finished runs even if a later one fails
        for run in range(1, args.runs + 1):
            result = run_once(
                session.name, session.bootstrap, run, settings, args, session.cpu_seconds
            )
            print(run_line(session.name, result), flush=True)
            summary.runs.append(result)

    return compare_peers(
        args,
        work,
        report=lambda machine: report(summaries, settings, args.producer_process, machine),
        results=lambda machine: {
            "settings": asdict(settings),
            "producer_process": args.producer_process,
            "cpus": os.cpu_count(),
            "machine": machine,
            "peers": [
                {"peer": s.peer, "origin": s.origin, "runs": [run_json(r) for r in s.runs]}
                for s in summaries
            ],
        },
    )


if __name__ == "__main__":
    sys.exit(main())

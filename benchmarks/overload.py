"""Overload: does a well-behaved client keep its latency while others flood the broker?

One Weir broker (private Redis) with ``max.connections`` (default 200) and a
``producer_byte_rate`` quota (default 1 MB/s) on the client id ``flood``. A well-behaved
client (client id ``polite``, librdkafka's default ``linger.ms=5``) produces ``--rate``
records/s (default 1k/s) of ``--size`` bytes to its own 1-partition topic, twice side by
side: one producer with acks=1, one with acks=all, each in its own process. Each phase runs
``--warmup`` + ``--duration`` seconds (the warm-up is not measured) and reports the produce
latency (``produce()`` to delivery report) p50/p99/max:

- ``unloaded``: the well-behaved producers alone;
- ``produce flood``: ``--flood-procs`` confluent-kafka producers with client id ``flood``
  send ``--flood-size`` records as fast as they can (far over the quota), plus
  ``--raw-flooders`` clients that pipeline Produce requests on a raw socket and ignore
  ``throttle_time_ms`` (as old clients do), so only the broker's muting holds them back;
- ``connection flood``: a process opens ``max.connections`` + ``--extra-connections``
  connections and holds them, and opens ``--connect-rate`` new ones per second on top (each
  sends ApiVersions and closes). The well-behaved producers connected before it started.

Then the quota is removed and ``unloaded`` and ``produce flood`` run again, to show what the
quota buys. For each loaded phase the p99 ratio to its mode's unloaded p99 is printed
against the goal (<= 2x, issue 16); for the flood, the rate the flooders achieved (from the
flood topic's log end offset over the measured window) against the quota and the throttle
times they were answered with; for the connection flood, how many held connections were
served (at most ``max.connections``).

    python -m benchmarks.overload
    python -m benchmarks.overload --duration 20 --json /tmp/overload.json

Nothing is asserted: the figures are printed (and written with ``--json``). On a 2-core
machine the flooders, the broker and the measured clients share the cores; the machine note
says how busy it was at the start.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import selectors
import socket
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kio.index import load_response_schema
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.serial import entity_reader

from benchmarks.common import (
    STAMP,
    add_rate_arguments,
    benchmark_parser,
    check_rate,
    child_main,
    consumer_config,
    create_topic,
    delete_topic,
    format_table,
    machine_note,
    parse_checked,
    percentile,
    print_results,
    producer_config,
    reap,
    receive_report,
    send_paced,
    settings_from,
    unique_topic,
)
from benchmarks.peers import HOST, PeerHandle, free_port, install_signal_handlers, start_weir
from brokers.quota_requests import quota_alter_request
from weir.client import BrokerClient, encode_request
from weir.protocol.batch_builder import build_batch

GOAL_P99_RATIO = 2.0
FLOOD_CLIENT_ID = "flood"
POLITE_CLIENT_ID = "polite"
FLOOD_BUFFER_KB = 32 * 1024
RAW_PIPELINE = 4  # Produce requests a raw flooder keeps in flight
RAW_BATCH_RECORDS = 10
CHILD_TIMEOUT = 60.0
UNLOADED, FLOOD, CONNECTIONS = "unloaded", "produce flood", "connection flood"


@dataclass
class OverloadSettings:
    rate: int = 1000
    size: int = 512
    duration: float = 10.0
    warmup: float = 2.0
    max_connections: int = 200
    flood_quota: int = 1_000_000
    flood_procs: int = 2
    raw_flooders: int = 1
    flood_size: int = 10_000
    extra_connections: int = 50
    connect_rate: float = 50.0
    linger_ms: float = 5.0


@dataclass
class LatencyFigures:
    acks: str
    measured: int
    failed: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float


@dataclass
class FloodFigures:
    """What the ``flood`` client id achieved in the measured window, and its throttling."""

    bytes_per_s: float
    quota: int | None
    throttle_events: int
    throttle_avg_ms: float
    throttle_max_ms: float
    raw_requests: int
    raw_throttled: int
    raw_throttle_avg_ms: float
    raw_throttle_max_ms: float


@dataclass
class ConnectionFloodFigures:
    held: int
    held_served: int
    attempts: int
    attempts_refused: int


@dataclass
class PhaseResult:
    phase: str
    quota: bool
    latency: list[LatencyFigures]
    broker_cpu_pct: float
    flood: FloodFigures | None = None
    connections: ConnectionFloodFigures | None = None
    # p99 (and p50) over the same mode's unloaded figure, per acks.
    ratios: dict[str, float] = field(default_factory=dict)
    p50_ratios: dict[str, float] = field(default_factory=dict)


# -- the well-behaved client -------------------------------------------------------------------
def _polite(
    bootstrap: str, topic: str, acks: str, settings: OverloadSettings, ready: Event, go: Event
) -> dict[str, Any]:
    """Produce ``rate`` stamped records/s; report latency figures after the warm-up."""
    return asdict(_paced_produce(bootstrap, topic, acks, settings, ready, go))


def _paced_produce(
    bootstrap: str, topic: str, acks: str, settings: OverloadSettings, ready: Event, go: Event
) -> LatencyFigures:
    clock = time.monotonic_ns
    latencies: list[int] = []
    failed = 0
    warmup_seq = int(settings.rate * settings.warmup)

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        nonlocal failed
        if err is not None:
            failed += 1
            return
        sent_at, seq = STAMP.unpack_from(msg.value())
        if seq >= warmup_seq:
            latencies.append(clock() - sent_at)

    config = producer_config(bootstrap, acks=acks, linger_ms=settings.linger_ms)
    config.update(
        {
            "client.id": POLITE_CLIENT_ID,
            "delivery.report.only.error": False,
            "on_delivery": on_delivery,
        }
    )
    producer = Producer(config)
    # Connect (bootstrap and leader) before any flood starts: one record, delivered.
    producer.produce(topic, STAMP.pack(clock(), -1))
    if producer.flush(30) != 0:
        raise TimeoutError("the well-behaved producer could not deliver its first record")
    ready.set()
    if not go.wait(CHILD_TIMEOUT):
        raise TimeoutError("never told to go")
    # Waiting in poll: it returns as soon as a delivery report is served, so reports are
    # stamped when they arrive, not when the next record is due.
    total = int(settings.rate * (settings.warmup + settings.duration))
    send_paced(
        producer, topic, rate=settings.rate, total=total, size=settings.size, wait=producer.poll
    )
    remaining = producer.flush(30)
    latencies.sort()
    ms = [v / 1e6 for v in latencies]
    return LatencyFigures(
        acks=acks,
        measured=len(ms),
        failed=failed + remaining,
        p50_ms=percentile(ms, 50),
        p99_ms=percentile(ms, 99),
        max_ms=ms[-1] if ms else float("nan"),
        mean_ms=statistics.fmean(ms) if ms else float("nan"),
    )


# -- the flooders ------------------------------------------------------------------------------
def _flood(bootstrap: str, topic: str, size: int, ready: Event, stop: Event) -> list[float]:
    """A confluent-kafka producer (client id ``flood``) sending as fast as it can until
    ``stop``; reports the throttle times the broker answered with."""
    throttles: list[float] = []
    config = producer_config(bootstrap, acks="1", linger_ms=5)
    config.update(
        {
            "client.id": FLOOD_CLIENT_ID,
            "throttle_cb": lambda event: throttles.append(event.throttle_time * 1000),
            # A bounded client buffer: once it is full the flooder waits in poll() rather
            # than copying records into gigabytes of memory, so what it costs the shared
            # cores is the broker's doing, not the harness's.
            "queue.buffering.max.kbytes": FLOOD_BUFFER_KB,
        }
    )
    producer = Producer(config)
    producer.list_topics(topic, timeout=10)
    value = os.urandom(size)
    ready.set()
    while not stop.is_set():
        for _ in range(100):
            try:
                producer.produce(topic, value)
            except BufferError:
                producer.poll(0.01)
                break
        producer.poll(0)
    producer.purge()
    producer.flush(5)
    producer.poll(0)
    return throttles


def _raw_flood(
    port: int, topic: str, size: int, ready: Event, stop: Event
) -> tuple[int, list[float]]:
    """Produce requests pipelined on one raw socket, ``throttle_time_ms`` ignored: only the
    broker's muting of the connection holds this client back."""
    throttles: list[float] = []
    requests = 0
    batch = bytes(
        build_batch(
            [(None, os.urandom(size)) for _ in range(RAW_BATCH_RECORDS)],
            timestamp_ms=int(time.time() * 1000),
        )
    )
    body = ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name=topic, partition_data=(PartitionProduceData(index=0, records=batch),)
            ),
        ),
    )
    response_type = load_response_schema(body.__api_key__, body.__version__)
    read_header = entity_reader(response_type.__header_schema__)
    read_body = entity_reader(response_type)
    sock = socket.create_connection((HOST, port), timeout=CHILD_TIMEOUT)
    # Reads wake up twice a second to notice ``stop``: a muted connection may stay
    # silent for as long as its throttle.
    sock.settimeout(0.5)
    ready.set()
    in_flight = 0
    correlation = 0
    while not stop.is_set():
        while in_flight < RAW_PIPELINE:
            correlation += 1
            sock.sendall(encode_request(body, correlation, FLOOD_CLIENT_ID))
            in_flight += 1
        header = _read_until_stopped(sock, 4, stop)
        if header is None:
            break
        payload = _read_until_stopped(sock, struct.unpack(">i", header)[0], stop)
        if payload is None:
            break
        view = memoryview(payload).toreadonly()
        _, offset = read_header(view, 0)
        response, _ = read_body(view, offset)
        in_flight -= 1
        requests += 1
        throttles.append(response.throttle_time.total_seconds() * 1000)
    sock.close()
    return requests, throttles


def _read_until_stopped(sock: socket.socket, n: int, stop: Event) -> bytes | None:
    """``n`` bytes from ``sock``, or None once ``stop`` is set."""
    data = bytearray()
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except TimeoutError:
            if stop.is_set():
                return None
            continue
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data)


def _connection_flood(
    port: int, hold: int, connect_rate: float, ready: Event, stop: Event
) -> dict[str, Any]:
    """Open ``hold`` connections and keep them, each sending ApiVersions; open
    ``connect_rate`` more per second (ApiVersions, then close) until ``stop``."""
    request = encode_request(ApiVersionsRequest(), 1, "connection-flood")
    held: list[socket.socket] = []
    attempts = refused = 0
    try:
        for _ in range(hold):
            sock = socket.create_connection((HOST, port), timeout=5)
            sock.sendall(request)
            held.append(sock)
        served = _count_answered(held, timeout=3.0)
        ready.set()
        interval = 1.0 / connect_rate
        next_at = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            if now < next_at:
                stop.wait(next_at - now)
                continue
            next_at += interval
            attempts += 1
            try:
                with socket.create_connection((HOST, port), timeout=1) as extra:
                    extra.sendall(request)
            except OSError:
                refused += 1
        return asdict(ConnectionFloodFigures(hold, served, attempts, refused))
    finally:
        for sock in held:
            sock.close()


def _count_answered(socks: list[socket.socket], timeout: float) -> int:
    """How many of ``socks`` received a response within ``timeout`` (the broker accepted and
    served them; the rest wait in the listen backlog)."""
    answered = 0
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while answered < len(socks) and time.monotonic() < deadline:
            for key, _ in selector.select(max(0.0, deadline - time.monotonic())):
                selector.unregister(key.fileobj)
                answered += 1
    for sock in socks:
        sock.setblocking(True)
    return answered


# -- phases ------------------------------------------------------------------------------------
@dataclass
class _Child:
    proc: multiprocessing.process.BaseProcess
    conn: Connection
    ready: Event

    def result(self, timeout: float) -> Any:
        return receive_report(self.conn, timeout, self.proc.name or "child")


def _spawn(target: Any, name: str, args: tuple[Any, ...], signal: Event) -> _Child:
    """A child process ``target(*args, ready, signal)``: it sets ``ready`` when connected,
    then waits for ``signal`` (go, for the measured producers) or runs until it (stop, for
    the load); its figures come back through :func:`benchmarks.common.child_main`."""
    ctx = multiprocessing.get_context("spawn")
    ready = ctx.Event()
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=child_main, args=(child_conn, target, *args, ready, signal), name=name, daemon=True
    )
    proc.start()
    child_conn.close()
    return _Child(proc, parent_conn, ready)


def _wait_ready(children: list[_Child]) -> None:
    for child in children:
        if not child.ready.wait(CHILD_TIMEOUT):
            if child.conn.poll():
                child.result(0)  # raises with the child's error
            raise TimeoutError(f"{child.proc.name} did not get ready")


def _load(
    phase: str, settings: OverloadSettings, port: int, bootstrap: str, topic: str, stop: Event
) -> list[_Child]:
    """The flooding processes of ``phase`` (none when unloaded)."""
    if phase == FLOOD:
        return [
            _spawn(_flood, f"flood-{i}", (bootstrap, topic, settings.flood_size), stop)
            for i in range(settings.flood_procs)
        ] + [
            _spawn(_raw_flood, f"raw-flood-{i}", (port, topic, settings.flood_size), stop)
            for i in range(settings.raw_flooders)
        ]
    if phase == CONNECTIONS:
        hold = settings.max_connections + settings.extra_connections
        args = (port, hold, settings.connect_rate)
        return [_spawn(_connection_flood, "connection-flood", args, stop)]
    return []


def run_phase(
    handle: PeerHandle, phase: str, quota: bool, settings: OverloadSettings
) -> PhaseResult:
    """One phase: the well-behaved producers (connected first), then the load, measured."""
    bootstrap = handle.bootstrap
    port = int(bootstrap.rsplit(":", 1)[1])
    ctx = multiprocessing.get_context("spawn")
    go, stop = ctx.Event(), ctx.Event()
    topics = {acks: unique_topic(f"overload-acks{acks}") for acks in ("1", "all")}
    flood_topic = unique_topic("overload-flood")
    for topic in [*topics.values(), flood_topic]:
        create_topic(bootstrap, topic)
    # Connected before any connection flood, like the well-behaved producers.
    offsets = Consumer(consumer_config(bootstrap, large_fetches=False))
    offsets.get_watermark_offsets(TopicPartition(flood_topic, 0), timeout=10)
    polite = [
        _spawn(_polite, f"polite-acks{acks}", (bootstrap, topic, acks, settings), go)
        for acks, topic in topics.items()
    ]
    children = list(polite)
    try:
        _wait_ready(polite)
        load = _load(phase, settings, port, bootstrap, flood_topic, stop)
        children += load
        _wait_ready(load)
        go.set()
        time.sleep(settings.warmup)
        cpu0, t0 = handle.cpu_seconds(), time.monotonic()
        first = _end_offset(offsets, flood_topic) if phase == FLOOD else 0
        time.sleep(settings.duration)
        last = _end_offset(offsets, flood_topic) if phase == FLOOD else 0
        cpu1, t1 = handle.cpu_seconds(), time.monotonic()
        latency = [LatencyFigures(**child.result(CHILD_TIMEOUT)) for child in polite]
        stop.set()
        result = PhaseResult(
            phase=phase,
            quota=quota,
            latency=latency,
            broker_cpu_pct=100.0 * (cpu1 - cpu0) / (t1 - t0),
        )
        if phase == FLOOD:
            rate = (last - first) * settings.flood_size / (t1 - t0)
            result.flood = _flood_figures(load, settings.flood_procs, rate, quota, settings)
        elif phase == CONNECTIONS:
            result.connections = ConnectionFloodFigures(**load[0].result(CHILD_TIMEOUT))
        return result
    finally:
        stop.set()
        go.set()
        for child in children:
            reap(child.proc, 15)
        offsets.close()
        for topic in [*topics.values(), flood_topic]:
            delete_topic(bootstrap, topic)


def _end_offset(consumer: Consumer, topic: str) -> int:
    return int(consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])


def _flood_figures(
    load: list[_Child], procs: int, rate: float, quota: bool, settings: OverloadSettings
) -> FloodFigures:
    throttles: list[float] = []
    for child in load[:procs]:
        throttles += child.result(CHILD_TIMEOUT)
    raw_requests, raw_throttles = 0, []
    for child in load[procs:]:
        requests, seen = child.result(CHILD_TIMEOUT)
        raw_requests += requests
        raw_throttles += seen
    raw_throttled = [t for t in raw_throttles if t > 0]
    return FloodFigures(
        bytes_per_s=rate,
        quota=settings.flood_quota if quota else None,
        throttle_events=len(throttles),
        throttle_avg_ms=statistics.fmean(throttles) if throttles else 0.0,
        throttle_max_ms=max(throttles, default=0.0),
        raw_requests=raw_requests,
        raw_throttled=len(raw_throttled),
        raw_throttle_avg_ms=statistics.fmean(raw_throttled) if raw_throttled else 0.0,
        raw_throttle_max_ms=max(raw_throttled, default=0.0),
    )


# -- the quota ---------------------------------------------------------------------------------
def set_flood_quota(bootstrap: str, quota: int | None) -> None:
    """Set (or, with None, remove) ``producer_byte_rate`` on ``clients/flood``."""
    host, port = bootstrap.rsplit(":", 1)
    entity = [("clients", FLOOD_CLIENT_ID)]
    if quota is None:
        body = quota_alter_request(entity, set={}, remove=["producer_byte_rate"])
    else:
        body = quota_alter_request(entity, set={"producer_byte_rate": quota})

    async def send() -> Any:
        client = BrokerClient(host, int(port), client_id="overload-benchmark")
        try:
            return await client.request(body, timeout=30)
        finally:
            await client.close()

    (entry,) = asyncio.run(send()).entries
    if entry.error_code != 0:
        raise RuntimeError(f"AlterClientQuotas failed: {entry.error_message}")


# -- report ------------------------------------------------------------------------------------
def _with_ratios(results: list[PhaseResult]) -> None:
    """Each loaded phase's p99 over its mode's unloaded p99, per acks."""
    for result in results:
        base = next((r for r in results if r.quota == result.quota and r.phase == UNLOADED), None)
        if base is None or result is base:
            continue
        for figures in result.latency:
            unloaded = next(f for f in base.latency if f.acks == figures.acks)
            if unloaded.p99_ms > 0:
                result.ratios[figures.acks] = figures.p99_ms / unloaded.p99_ms
            if unloaded.p50_ms > 0:
                result.p50_ratios[figures.acks] = figures.p50_ms / unloaded.p50_ms


def _mode(quota: bool) -> str:
    return "quota" if quota else "no quota"


def report(results: list[PhaseResult], settings: OverloadSettings, machine: str) -> str:
    lines = [
        f"overload: well-behaved producer {settings.rate} records/s of {settings.size} B, "
        f"1 partition, linger.ms={settings.linger_ms:g}; {settings.duration:g}s measured after "
        f"{settings.warmup:g}s warm-up; max.connections={settings.max_connections}; "
        f"flood: {settings.flood_procs} confluent-kafka + {settings.raw_flooders} raw "
        f"producer(s) of {settings.flood_size} B records, quota "
        f"producer_byte_rate={settings.flood_quota} B/s on clients/flood; "
        f"connection flood: {settings.max_connections + settings.extra_connections} held + "
        f"{settings.connect_rate:g}/s new; {machine}",
        "",
    ]
    headers = [
        "phase",
        "flood quota",
        "acks",
        "records",
        "p50 ms",
        "p99 ms",
        "max ms",
        "p99 / unloaded",
        "broker CPU",
    ]
    rows = []
    for r in results:
        for f in r.latency:
            ratio = r.ratios.get(f.acks)
            rows.append(
                [
                    r.phase,
                    _mode(r.quota),
                    f.acks,
                    f"{f.measured}" + (f" ({f.failed} failed)" if f.failed else ""),
                    f"{f.p50_ms:.2f}",
                    f"{f.p99_ms:.2f}",
                    f"{f.max_ms:.2f}",
                    "-" if ratio is None else f"{ratio:.2f}x",
                    f"{r.broker_cpu_pct:.0f}%",
                ]
            )
    lines.append(format_table(headers, rows))
    lines.append("")
    for r in results:
        for acks, ratio in r.ratios.items():
            verdict = "met" if ratio <= GOAL_P99_RATIO else "MISSED"
            lines.append(
                f"p99 {r.phase} / unloaded ({_mode(r.quota)}), acks={acks}: {ratio:.2f}x "
                f"(goal <= {GOAL_P99_RATIO:g}x: {verdict}); p50 {r.p50_ratios[acks]:.2f}x"
            )
        if r.flood is not None:
            flood = r.flood
            quota = f"{flood.quota / 1e6:.2f} MB/s" if flood.quota else "none"
            against = f" = {flood.bytes_per_s / flood.quota:.2f}x its quota" if flood.quota else ""
            lines.append(
                f"flood ({_mode(r.quota)}): {flood.bytes_per_s / 1e6:.2f} MB/s achieved, quota "
                f"{quota}{against}; confluent-kafka saw {flood.throttle_events} throttles "
                f"(avg {flood.throttle_avg_ms:.0f} ms, max {flood.throttle_max_ms:.0f} ms); raw "
                f"flooders {flood.raw_throttled} of {flood.raw_requests} responses throttled "
                f"(avg {flood.raw_throttle_avg_ms:.0f} ms, max {flood.raw_throttle_max_ms:.0f} ms)"
            )
        if r.connections is not None:
            c = r.connections
            lines.append(
                f"connection flood: {c.held_served} of {c.held} held connections served "
                f"(max.connections={settings.max_connections}, the well-behaved clients' "
                f"included), {c.attempts} more attempted, {c.attempts_refused} refused"
            )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("overload", __doc__)
    add_rate_arguments(
        parser,
        rate=1000,
        size=512,
        duration=10.0,
        warmup=2.0,
        whose="well-behaved ",
        per=" per phase",
    )
    parser.add_argument("--max-connections", type=int, default=200)
    parser.add_argument(
        "--flood-quota", type=int, default=1_000_000, help="bytes/s on clients/flood"
    )
    parser.add_argument("--flood-procs", type=int, default=2, help="confluent-kafka flooders")
    parser.add_argument("--raw-flooders", type=int, default=1, help="flooders ignoring throttles")
    parser.add_argument("--flood-size", type=int, default=10_000, help="flood record size")
    parser.add_argument("--extra-connections", type=int, default=50, help="held beyond the limit")
    parser.add_argument("--connect-rate", type=float, default=50.0, help="new connections per s")
    parser.add_argument(
        "--linger-ms", type=float, default=5.0, help="well-behaved producers' linger.ms"
    )
    return parse_checked(parser, argv, check_rate, _check_load)


def _check_load(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.max_connections < 10 or args.flood_quota < 1 or args.connect_rate <= 0:
        parser.error("need --max-connections >= 10, --flood-quota >= 1, --connect-rate > 0")
    if args.flood_procs < 0 or args.raw_flooders < 0 or args.flood_size < 1:
        parser.error("need --flood-procs >= 0, --raw-flooders >= 0, --flood-size >= 1")


PHASES = ((UNLOADED, True), (FLOOD, True), (CONNECTIONS, True), (UNLOADED, False), (FLOOD, False))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    install_signal_handlers()
    machine = machine_note()
    settings = settings_from(OverloadSettings, args)
    results: list[PhaseResult] = []
    with (
        tempfile.TemporaryDirectory(prefix="weir-bench-overload-") as workdir,
        start_weir(
            free_port(),
            Path(workdir) / "data",
            extra_configs=[f"max.connections={settings.max_connections}"],
        ) as handle,
    ):
        for phase, quota in PHASES:
            set_flood_quota(handle.bootstrap, settings.flood_quota if quota else None)
            result = run_phase(handle, phase, quota, settings)
            results.append(result)
            p99 = ", ".join(f"acks={f.acks} p99 {f.p99_ms:.2f} ms" for f in result.latency)
            print(f"[{phase}, {_mode(quota)}] {p99}", flush=True)
    _with_ratios(results)
    print_results(
        report(results, settings, machine),
        args.json,
        {
            "settings": asdict(settings),
            "machine": machine,
            "goal_p99_ratio": GOAL_P99_RATIO,
            "phases": [asdict(r) for r in results],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

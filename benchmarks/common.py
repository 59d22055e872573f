"""Client-side pieces shared by the benchmarks: topic admin, client configs, statistics.

Both peers are driven by exactly these configs, so the Python client's own CPU cost is the
same on each side of every ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import fields
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from benchmarks.peers import (
    PeerSession,
    check_peer_arguments,
    exit_status,
    install_signal_handlers,
    quiet_logger,
    run_peers,
)

MB = 1_000_000  # throughput is reported in MB/s of record values, 1 MB = 10**6 bytes
# The head of a latency benchmark's record value: when it was sent (monotonic_ns, read on the
# same machine as the receiver's clock) and its sequence number, so warm-up records are told.
STAMP = struct.Struct("<qq")

T = TypeVar("T")


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "logger": quiet_logger()})


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    timeout: float = 30.0,
    *,
    replication_factor: int = 1,
    config: dict[str, str] | None = None,
) -> None:
    """Create ``topic`` and wait until metadata shows every leader."""
    admin = admin_client(bootstrap)
    futures = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=partitions,
                replication_factor=replication_factor,
                config=config or {},
            )
        ],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    futures[topic].result(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            meta = admin.list_topics(topic, timeout=2.0).topics.get(topic)
        except KafkaException:
            meta = None
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise TimeoutError(f"topic {topic} has no leader after {timeout}s")


def delete_topic(bootstrap: str, topic: str, timeout: float = 15.0) -> None:
    """Best-effort delete so an in-memory broker releases the data between runs."""
    with contextlib.suppress(Exception):
        admin = admin_client(bootstrap)
        admin.delete_topics([topic], operation_timeout=timeout)[topic].result(timeout=timeout)


def producer_config(
    bootstrap: str,
    *,
    acks: str = "1",
    linger_ms: float = 5.0,
    batch_size: int = 1_000_000,
    compression: str = "none",
) -> dict[str, Any]:
    """confluent-kafka producer settings used for every peer.

    No idempotence (so ``acks`` really is what is asked for), no compression by default, and
    delivery reports only for failures so successful sends cost no Python callback.
    """
    return {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "enable.idempotence": False,
        "compression.type": compression,
        "linger.ms": linger_ms,
        "batch.size": batch_size,
        "batch.num.messages": 1_000_000,
        "queue.buffering.max.messages": 1_000_000,
        "queue.buffering.max.kbytes": 2_097_152,  # 2 GiB of client-side buffering
        "message.max.bytes": max(1_000_000, batch_size + 1024),
        "delivery.report.only.error": True,
        "logger": quiet_logger(),
    }


def consumer_config(
    bootstrap: str,
    *,
    fetch_wait_max_ms: int = 100,
    large_fetches: bool = True,
) -> dict[str, Any]:
    """confluent-kafka consumer settings: manual assign, no commits, big prefetch."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"weir-bench-{uuid.uuid4().hex[:8]}",  # required by the client; never used
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "fetch.wait.max.ms": fetch_wait_max_ms,
        "fetch.min.bytes": 1,
        "logger": quiet_logger(),
    }
    if large_fetches:
        config.update(
            {
                "fetch.max.bytes": 52_428_800,
                "max.partition.fetch.bytes": 52_428_800,
                "receive.message.max.bytes": 52_428_800 + 1_048_576,
                "queued.min.messages": 1_000_000,
                "queued.max.messages.kbytes": 1_048_576,
            }
        )
    return config


def send_paced(
    producer: Any,
    topic: str,
    *,
    rate: float,
    total: int,
    size: int,
    wait: Callable[[float], Any],
    partitions: int = 1,
) -> list[int]:
    """Produce ``total`` records of ``size`` bytes (a :data:`STAMP`, then padding) to
    ``topic``, ``rate`` per second from now, round robin over its first ``partitions``
    partitions (record ``seq`` to ``seq % partitions``); ``wait(seconds)`` passes the time
    until the next is due (``time.sleep``, or the producer's ``poll`` so delivery reports are
    taken the moment they arrive). A record the client could not send on time goes at once,
    back to back with the others behind. Returns how far behind schedule (ns) each was sent."""
    padding = os.urandom(max(0, size - STAMP.size))
    produce, poll, pack, clock = producer.produce, producer.poll, STAMP.pack, time.monotonic_ns
    interval_ns = 1_000_000_000 / rate
    behind: list[int] = []
    start = clock()
    seq = 0
    while seq < total:
        due = start + int(seq * interval_ns)
        now = clock()
        if due > now:
            wait((due - now) / 1e9)
            continue
        try:
            produce(topic, pack(now, seq) + padding, None, seq % partitions)
        except BufferError:  # the client's queue is full: let it send, then try again
            poll(0.001)
            continue
        behind.append(now - due)
        seq += 1
        if start + int(seq * interval_ns) > now:  # caught up: serve callbacks, then wait
            poll(0)
    return behind


def child_main(conn: Connection, work: Callable[..., Any], *args: Any) -> None:
    """The entry point of a benchmark's spawned process: run ``work(*args)`` and send
    ("ok", its result) or ("error", the exception's repr) on ``conn``, which the parent reads
    with :func:`receive_report`. ``work`` returns plain data (dicts, lists, numbers): a
    dataclass defined in a ``python -m`` main module would not unpickle in the parent."""
    try:
        conn.send(("ok", work(*args)))
    except BaseException as exc:  # report anything to the parent, then exit
        conn.send(("error", repr(exc)))
    finally:
        conn.close()


def receive_report(conn: Connection, timeout: float, name: str) -> Any:
    """What the :func:`child_main` process ``name`` sent, waiting at most ``timeout`` seconds;
    its error is raised here."""
    if not conn.poll(timeout):
        raise TimeoutError(f"{name} did not report")
    status, payload = conn.recv()
    if status != "ok":
        raise RuntimeError(f"{name} failed: {payload}")
    return payload


def reap(proc: BaseProcess, timeout: float = 10.0) -> None:
    """Wait ``timeout`` seconds for ``proc`` to exit, then kill it."""
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()


def benchmark_parser(module: str, doc: str | None) -> argparse.ArgumentParser:
    """The parser of ``python -m benchmarks.<module>``, described by its docstring's summary."""
    return argparse.ArgumentParser(
        prog=f"python -m benchmarks.{module}", description=(doc or "").split("\n\n")[0]
    )


def add_rate_arguments(
    parser: argparse.ArgumentParser,
    *,
    rate: int,
    size: int,
    duration: float,
    warmup: float,
    whose: str = "",
    per: str = "",
) -> None:
    """``--rate --size --duration --warmup`` of a paced, stamped producer (``whose`` names it
    in the help, ``per`` says what a duration is measured per); :func:`check_rate` checks
    them once parsed."""
    parser.add_argument("--rate", type=int, default=rate, help=f"{whose}records per second")
    parser.add_argument("--size", type=int, default=size, help=f"{whose}record size (>= 16)")
    parser.add_argument("--duration", type=float, default=duration, help=f"measured seconds{per}")
    parser.add_argument("--warmup", type=float, default=warmup, help="unmeasured seconds first")


def check_rate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The flags of :func:`add_rate_arguments` are sane (a record holds its :data:`STAMP`;
    a run is at most ten minutes)."""
    if args.rate < 1 or args.duration <= 0 or args.warmup < 0 or args.size < STAMP.size:
        parser.error(f"need --rate >= 1, --duration > 0, --warmup >= 0, --size >= {STAMP.size}")
    if args.duration + args.warmup > 600:
        parser.error("--duration + --warmup is capped at 600 s")


def settings_from(cls: type[T], args: argparse.Namespace) -> T:
    """The settings dataclass ``cls`` filled from the flags of the same names (a field without
    a flag keeps its default): a benchmark's settings are its command line."""
    return cls(**{f.name: getattr(args, f.name) for f in fields(cls) if hasattr(args, f.name)})


Check = Callable[[argparse.ArgumentParser, argparse.Namespace], None]


def parse_checked(
    parser: argparse.ArgumentParser, argv: list[str] | None, *checks: Check
) -> argparse.Namespace:
    """Parse a benchmark's command line: its own flags, ``--json`` last, then each of
    ``checks(parser, args)`` (which call ``parser.error`` on a bad combination)."""
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    for check in checks:
        check(parser, args)
    return args


def parse_peer_args(
    parser: argparse.ArgumentParser, argv: list[str] | None, *checks: Check
) -> argparse.Namespace:
    """:func:`parse_checked` for a ``--peers`` benchmark: the peer addresses checked first."""
    return parse_checked(parser, argv, check_peer_arguments, *checks)


def machine_note() -> str:
    """CPU count and load average, printed so a busy machine is visible in the figures."""
    one, five, _ = os.getloadavg()
    return f"{os.cpu_count()} CPUs, load avg {one:.2f}/{five:.2f} (1/5 min) at start"


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of an ascending sequence."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def ratio(numerator: float | None, denominator: float | None) -> str:
    if not numerator or not denominator:
        return "n/a"
    return f"{numerator / denominator:.2f}x"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = [
        "  ".join(
            h.rjust(w) if i else h.ljust(w)
            for i, (h, w) in enumerate(zip(headers, widths, strict=True))
        )
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)


def write_json(path: str | None, payload: dict[str, Any]) -> None:
    """``--json PATH``: the results as indented JSON (nothing without a path)."""
    if path:
        with open(path, "w") as fh:
            json.dump(payload, fh, indent=2)


def print_results(text: str, path: str | None, payload: dict[str, Any]) -> None:
    """A benchmark's end: the report ``text`` after a blank line, and with ``--json PATH``
    the ``payload`` written there."""
    print()
    print(text)
    write_json(path, payload)


def compare_peers(
    args: argparse.Namespace,
    work: Callable[[PeerSession], None],
    *,
    report: Callable[[str], str],
    results: Callable[[str], dict[str, Any]],
) -> int:
    """A peer comparison from start to exit status, the same for every ``--peers`` benchmark:
    Ctrl-C stops the peers, ``work`` runs against each peer, then ``report(machine)`` is
    printed and ``results(machine)`` written to ``--json`` (the machine note is taken before
    the first peer starts, so the load it shows is the machine's, not the benchmark's)."""
    install_signal_handlers()
    machine = machine_note()
    failed = run_peers(args, work)
    print_results(report(machine), args.json, results(machine))
    return exit_status(failed)

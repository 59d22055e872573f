"""Dead letter replay: ``manage.py dlq replay TOPIC --all`` against a hand-written copy loop.

Run: ``.venv/bin/python -m benchmarks.dlq_replay [--records N] [--partitions P] [--size B]
[--timeout S] [--json FILE]``

One single-broker Weir cluster (``manage.py runbroker`` with its own Redis,
``benchmarks.peers.start_weir``). A DLQ topic ``bench-dlq-<id>`` of ``--partitions``
partitions is filled with ``--records`` dead letters of ``--size`` byte values (random,
incompressible), keyed ``key-<i>``, round robin over its partitions, each with the headers
Kafka Connect writes (``errors.deadletterqueue.context.headers.enable=true``):
``__connect.errors.topic`` naming the original topic, ``.partition`` = ``i % 3`` (the
original topic has 3 partitions), ``.offset``, the connector, task, stage, class, exception
class, message and a three-line stack trace. Then two copiers put every dead letter back,
one after the other:

* ``weir``: ``manage.py dlq replay <dlq> --all`` as a subprocess, the command users run, with
  the cluster's ``WEIR_REDIS_URL`` / ``WEIR_CLUSTER_ID``. It plans (reads the whole DLQ once
  and checks every record can be placed), reads it again and produces each record with an
  idempotent ``acks=all`` producer to the topic and partition its headers name, counting
  every delivery report; it strips the error headers and adds ``weir.replay.count`` and
  ``weir.replay.source``.
* ``plain``: the peer, a spawned process: a confluent-kafka ``Consumer`` (assign from the
  beginning, no group, no commits, the benchmarks' ``consumer_config``) and a ``Producer``
  (the benchmarks' ``producer_config`` with ``acks=all`` and ``enable.idempotence=True``, so
  the same guarantee), reading the DLQ once and producing each record with its key, value and
  headers (as they are) to the original partition its headers name; failures are reported,
  and the loop ends with one ``flush``. It replays into a second original topic (the
  headers' topic name mapped to ``<original>-plain``), so each copier's count is its own.

Timing, honestly: the harness reads the command's stderr as it comes (the process is
unbuffered) and stamps each progress line on arrival. **replay** is from the ``planning``
line to the ``N records replayed`` line: both reads, every produce and every
acknowledgement, nothing of Python's and Django's start-up or of resolving ``--all`` (the
high watermarks). Of that, **plan** ends at the last ``read N of N offsets`` line. **command**
is the whole process, from ``Popen`` to exit. The plain loop is timed inside its process
from its first ``consume`` to the end of its ``flush`` (clients built and assigned, not yet
connected, as the command's are at ``planning``); its **process** time is from spawn to its
report. records/s and MB/s (of record values, 1 MB = 10**6 bytes) are over the replay and the
loop; the headline ratio weir/plain compares those two, the whole-command ratio is printed
next to it. CPU is % of one core: for the replay window, the command's utime+stime read from
``/proc`` at the two lines; for the whole command, its rusage from ``wait4``; for the plain
loop, ``getrusage(RUSAGE_SELF)`` around the loop and at its end.

Verified for both: the target topic holds exactly ``--records`` records, and each partition
``p`` exactly the dead letters whose ``.partition`` header says ``p`` (high watermarks, the
topic being fresh); the command's JSON must report every record replayed. Figures are
printed and written to ``--json``; speed is never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import (
    MB,
    benchmark_parser,
    child_main,
    consumer_config,
    create_topic,
    format_table,
    machine_note,
    parse_checked,
    print_results,
    producer_config,
    ratio,
    reap,
    receive_report,
    settings_from,
    unique_topic,
)
from benchmarks.peers import (
    REPO_ROOT,
    PeerHandle,
    free_port,
    install_signal_handlers,
    process_cpu_seconds,
    start_weir,
    venv_python,
)

ORIGINAL_PARTITIONS = 3  # dead letter i names original partition i % 3
CONNECT = "__connect.errors."
PLAIN_SUFFIX = "-plain"  # the plain copier's target: the headers' topic + this
BATCH = 500  # records per consume() call of the plain loop
STACKTRACE = (
    "org.apache.kafka.connect.errors.DataException: Converting byte[] to Kafka Connect data "
    "failed due to serialization error\n"
    "\tat org.apache.kafka.connect.json.JsonConverter.toConnectData(JsonConverter.java:324)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.convertValue(WorkerSinkTask.java:531)"
)


@dataclass
class DlqReplaySettings:
    records: int = 100_000
    partitions: int = 2
    size: int = 512
    timeout: float = 600.0


@dataclass
class Copy:
    """One copier's run: its timings (seconds), CPU and what landed on its target."""

    copier: str
    target_topic: str
    records: int  # the sum of the target's high watermarks
    per_partition: list[int]
    expected_per_partition: list[int]
    seconds: float  # the replay (weir) or the copy loop (plain)
    total_seconds: float  # the whole command / process
    cpu_pct: float  # over ``seconds``, % of one core
    total_cpu_pct: float  # over ``total_seconds``
    plan_seconds: float | None = None  # weir: the first read (the plan)
    reported: int | None = None  # records the copier says were acknowledged
    exit_status: int | None = None

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("nan")

    def mb_per_s(self, size: int) -> float:
        return self.records_per_s * size / MB

    @property
    def complete(self) -> bool:
        return self.per_partition == self.expected_per_partition


# -- the dead letters -----------------------------------------------------------------------
def dead_letter_headers(original: str, i: int) -> list[tuple[str, bytes]]:
    """The headers Kafka Connect gives dead letter ``i`` (every value a UTF-8 string)."""
    fields = {
        "topic": original,
        "partition": str(i % ORIGINAL_PARTITIONS),
        "offset": str(i // ORIGINAL_PARTITIONS),
        "connector.name": "orders-sink",
        "task.id": "0",
        "stage": "VALUE_CONVERTER",
        "class.name": "org.apache.kafka.connect.json.JsonConverter",
        "exception.class.name": "org.apache.kafka.connect.errors.DataException",
        "exception.message": "Converting byte[] to Kafka Connect data failed",
        "exception.stacktrace": STACKTRACE,
    }
    return [(CONNECT + name, value.encode()) for name, value in fields.items()]


def produce_dead_letters(
    bootstrap: str, dlq: str, original: str, settings: DlqReplaySettings
) -> float:
    """Fill ``dlq`` (see the module docstring), every record acknowledged; the seconds it
    took."""
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
    for i in range(settings.records):
        headers = dead_letter_headers(original, i)
        while True:
            try:
                producer.produce(dlq, value, f"key-{i}", i % settings.partitions, headers=headers)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 16384 == 0:
            producer.poll(0)
    if producer.flush(settings.timeout) or failed:
        raise RuntimeError(f"dead letters: {failed} records failed to be delivered")
    return time.monotonic() - started


def expected_per_partition(records: int) -> list[int]:
    return [len(range(p, records, ORIGINAL_PARTITIONS)) for p in range(ORIGINAL_PARTITIONS)]


def high_watermarks(bootstrap: str, topic: str) -> list[int]:
    """The high watermark of each of ``topic``'s original partitions."""
    consumer = Consumer(consumer_config(bootstrap))
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10.0, cached=False)[1]
            for p in range(ORIGINAL_PARTITIONS)
        ]
    finally:
        consumer.close()


# -- weir: manage.py dlq replay -------------------------------------------------------------
@dataclass
class _Lines:
    """The command's stderr lines, each stamped (monotonic) on arrival with the command's CPU
    seconds so far."""

    pid: int
    stamped: list[tuple[float, float, str]] = field(default_factory=list)

    def read(self, stream: Any) -> None:
        for raw in stream:
            now, cpu = time.monotonic(), process_cpu_seconds([self.pid])
            self.stamped.append((now, cpu, raw.decode(errors="replace").rstrip()))

    def first(self, needle: str) -> tuple[float, float]:
        for at, cpu, text in self.stamped:
            if needle in text:
                return at, cpu
        raise RuntimeError(f"the command printed no {needle!r} line:\n{self.text()}")

    def last(self, needle: str) -> tuple[float, float]:
        for at, cpu, text in reversed(self.stamped):
            if needle in text:
                return at, cpu
        raise RuntimeError(f"the command printed no {needle!r} line:\n{self.text()}")

    def text(self) -> str:
        return "\n".join(text for _, _, text in self.stamped[-40:])


def run_weir(cluster: PeerHandle, dlq: str, original: str, settings: DlqReplaySettings) -> Copy:
    """``manage.py dlq replay DLQ --all``, timed from its stderr (see the module docstring)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [venv_python(), "manage.py", "dlq", "replay", dlq, "--all"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cluster.env,
        cwd=REPO_ROOT,
        start_new_session=True,
    )
    lines = _Lines(proc.pid)
    out: list[bytes] = []
    readers = [
        threading.Thread(target=lines.read, args=(proc.stderr,), daemon=True),
        threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),  # type: ignore[union-attr]
    ]
    try:
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(settings.timeout)
            if reader.is_alive():
                raise TimeoutError(f"dlq replay still running after {settings.timeout} s")
        _pid, status, usage = os.wait4(proc.pid, 0)
        ended = time.monotonic()
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stdout = b"".join(out).decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"dlq replay exited {proc.returncode}:\n{lines.text()}\n{stdout}")
    plan_at, plan_cpu = lines.first("planning")
    planned_at, _ = lines.last(" offsets")  # the plan's last "read N of N offsets"
    done_at, done_cpu = lines.last("records replayed")
    result = json.loads(stdout.strip().splitlines()[-1])
    seconds = done_at - plan_at
    total = ended - started
    marks = high_watermarks(cluster.bootstrap, original)
    return Copy(
        copier="weir",
        target_topic=original,
        records=sum(marks),
        per_partition=marks,
        expected_per_partition=expected_per_partition(settings.records),
        seconds=seconds,
        total_seconds=total,
        cpu_pct=100.0 * (done_cpu - plan_cpu) / seconds if seconds > 0 else float("nan"),
        total_cpu_pct=100.0 * (usage.ru_utime + usage.ru_stime) / total,
        plan_seconds=planned_at - plan_at,
        reported=result["replayed"],
        exit_status=proc.returncode,
    )


# -- plain: a consume -> produce loop ------------------------------------------------------
def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def plain_replay(
    bootstrap: str, dlq: str, partitions: int, expected: int, timeout: float
) -> dict[str, Any]:
    """The ``plain`` copier (in its own process): read ``expected`` dead letters of ``dlq``
    once and produce each to ``<its original topic>-plain``, the partition its headers name."""
    consumer = Consumer(consumer_config(bootstrap))
    config = producer_config(bootstrap, acks="all")
    config["enable.idempotence"] = True
    failed = 0

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        nonlocal failed  # delivery.report.only.error: called for failures only
        if err is not None:
            failed += 1

    config["on_delivery"] = on_delivery
    producer = Producer(config)
    consumer.assign([TopicPartition(dlq, p, OFFSET_BEGINNING) for p in range(partitions)])
    topic_key, partition_key = CONNECT + "topic", CONNECT + "partition"
    cpu0, started = _cpu_self(), time.monotonic()
    copied = 0
    deadline = started + timeout
    try:
        while copied < expected and time.monotonic() < deadline:
            for message in consumer.consume(BATCH, 0.2):
                if message.error() is not None:
                    raise RuntimeError(f"consume error: {message.error()}")
                headers = message.headers() or []
                found = dict(headers)
                topic = found[topic_key].decode() + PLAIN_SUFFIX
                while True:
                    try:
                        producer.produce(
                            topic,
                            message.value(),
                            message.key(),
                            int(found[partition_key]),
                            headers=headers,
                        )
                        break
                    except BufferError:
                        producer.poll(0.01)
                copied += 1
            producer.poll(0)
        unsent = producer.flush(timeout)
    finally:
        consumer.close()
    seconds = time.monotonic() - started
    return {
        "copied": copied,
        "unsent": unsent,
        "failed": failed,
        "seconds": seconds,
        "cpu_seconds": _cpu_self() - cpu0,
        "process_cpu_seconds": _cpu_self(),
    }


def run_plain(cluster: PeerHandle, dlq: str, original: str, settings: DlqReplaySettings) -> Copy:
    """:func:`plain_replay` in a spawned process."""
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    started = time.monotonic()
    proc = ctx.Process(
        target=child_main,
        args=(
            child,
            plain_replay,
            cluster.bootstrap,
            dlq,
            settings.partitions,
            settings.records,
            settings.timeout,
        ),
        daemon=True,
    )
    proc.start()
    child.close()
    try:
        report = receive_report(parent, settings.timeout + 60.0, "plain copier")
        proc.join(30.0)
        total = time.monotonic() - started
    except BaseException:
        proc.terminate()
        raise
    finally:
        reap(proc)
    if report["unsent"] or report["failed"] or report["copied"] != settings.records:
        raise RuntimeError(f"plain copier: {report}")
    target = original + PLAIN_SUFFIX
    marks = high_watermarks(cluster.bootstrap, target)
    return Copy(
        copier="plain",
        target_topic=target,
        records=sum(marks),
        per_partition=marks,
        expected_per_partition=expected_per_partition(settings.records),
        seconds=report["seconds"],
        total_seconds=total,
        cpu_pct=100.0 * report["cpu_seconds"] / report["seconds"],
        total_cpu_pct=100.0 * report["process_cpu_seconds"] / total,
        reported=report["copied"] - report["failed"] - report["unsent"],
        exit_status=proc.exitcode,
    )


# -- the run --------------------------------------------------------------------------------
@dataclass
class Results:
    produce_s: float = 0.0
    copies: list[Copy] = field(default_factory=list)


def run(settings: DlqReplaySettings) -> Results:
    results = Results()
    with tempfile.TemporaryDirectory(prefix="weir-bench-dlq-") as root:
        cluster = start_weir(free_port(), Path(root) / "data")
        try:
            dlq = unique_topic("bench-dlq")
            original = unique_topic("orders")
            create_topic(cluster.bootstrap, dlq, settings.partitions)
            create_topic(cluster.bootstrap, original, ORIGINAL_PARTITIONS)
            create_topic(cluster.bootstrap, original + PLAIN_SUFFIX, ORIGINAL_PARTITIONS)
            results.produce_s = produce_dead_letters(cluster.bootstrap, dlq, original, settings)
            print(
                f"[dlq] {settings.records} dead letters in {dlq} in {results.produce_s:.1f} s",
                flush=True,
            )
            for copier in (run_weir, run_plain):
                try:
                    copy = copier(cluster, dlq, original, settings)
                except Exception as exc:
                    raise RuntimeError(f"{exc}; the broker's log:\n{cluster.log_tail(30)}") from exc
                print(
                    f"[{copy.copier}] {copy.records} records in {copy.seconds:.1f} s "
                    f"({copy.mb_per_s(settings.size):.1f} MB/s)",
                    flush=True,
                )
                results.copies.append(copy)
        finally:
            cluster.stop()
    return results


# -- the report -----------------------------------------------------------------------------
def report(results: Results, settings: DlqReplaySettings, machine: str) -> str:
    size = settings.size
    copies = {c.copier: c for c in results.copies}
    lines = [
        f"dlq replay: one Weir broker, {settings.records} dead letters of {size} B "
        f"({settings.records * size / MB:.0f} MB of values) over {settings.partitions} DLQ "
        f"partitions into {ORIGINAL_PARTITIONS} original partitions; {machine}",
        f"dead letters produced in {results.produce_s:.1f} s",
        "",
        format_table(
            [
                "copier",
                "records",
                "seconds",
                "records/s",
                "MB/s",
                "CPU",
                "plan",
                "whole process",
                "process CPU",
            ],
            [
                [
                    c.copier,
                    f"{c.records}/{settings.records}" + ("" if c.complete else " WRONG"),
                    f"{c.seconds:.2f}",
                    f"{c.records_per_s:,.0f}",
                    f"{c.mb_per_s(size):.1f}",
                    f"{c.cpu_pct:.0f}%",
                    "-" if c.plan_seconds is None else f"{c.plan_seconds:.2f} s",
                    f"{c.total_seconds:.2f} s",
                    f"{c.total_cpu_pct:.0f}%",
                ]
                for c in results.copies
            ],
        ),
        "",
    ]
    for c in results.copies:
        lines.append(
            f"{c.copier}: {c.target_topic} holds {c.records} records, per partition "
            f"{c.per_partition} (expected {c.expected_per_partition}): "
            + ("every record, each in its original partition" if c.complete else "WRONG")
        )
    if len(copies) == 2:
        weir, plain = copies["weir"], copies["plain"]
        lines.append(
            "weir/plain records/s (replay vs loop): "
            f"{ratio(weir.records_per_s, plain.records_per_s)}"
            f"; over the whole command vs the whole process: "
            f"{ratio(plain.total_seconds, weir.total_seconds)}"
        )
    return "\n".join(lines)


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.records < 1 or args.partitions < 1 or args.size < 1 or args.timeout <= 0:
        parser.error("need --records, --partitions, --size >= 1 and --timeout > 0")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser("dlq_replay", __doc__)
    parser.add_argument("--records", type=int, default=100_000, help="dead letters")
    parser.add_argument("--partitions", type=int, default=2, help="of the DLQ topic")
    parser.add_argument("--size", type=int, default=512, help="record value size in bytes")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound on each copier")
    return parse_checked(parser, argv, check)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    settings = settings_from(DlqReplaySettings, args)
    install_signal_handlers()
    machine = machine_note()
    results = run(settings)
    payload = {
        "settings": asdict(settings),
        "machine": machine,
        "produce_s": results.produce_s,
        "copies": [
            {
                **asdict(c),
                "records_per_s": c.records_per_s,
                "mb_per_s": c.mb_per_s(settings.size),
                "complete": c.complete,
            }
            for c in results.copies
        ],
    }
    copies = {c.copier: c for c in results.copies}
    if len(copies) == 2:
        payload["ratio_records_per_s"] = (
            copies["weir"].records_per_s / copies["plain"].records_per_s
        )
        payload["ratio_whole"] = copies["plain"].total_seconds / copies["weir"].total_seconds
    print_results(report(results, settings, machine), args.json, payload)
    return 0 if all(c.complete for c in results.copies) else 1


if __name__ == "__main__":
    sys.exit(main())

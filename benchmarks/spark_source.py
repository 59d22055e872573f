"""Scan rate of the ``weir`` Spark data source next to a plain confluent-kafka consumer.

    python -m benchmarks.spark_source [--mb 200] [--size 1024] [--partitions 6] [--runs 3]
    python -m benchmarks.spark_source --bootstrap HOST:PORT,...   # brokers already running

Starts a private Redis and three Weir brokers (``benchmarks.peers.start_weir``) unless
``--bootstrap`` is given, creates a topic of ``--partitions`` partitions and fills it with
``--mb`` MB of ``--size``-byte incompressible values (round-robin over partitions). Then, per
run, the same question is answered two ways and timed from the first request to the answer:

* **consumer** — one confluent-kafka ``Consumer`` in this process, all partitions assigned
  from the beginning (large fetches, no commits), counting records and summing value lengths;
* **spark** — ``spark.read.format("weir")...agg(count, sum(length(value)))`` on a
  ``local[*]`` session (``--master`` to change), one Spark task per partition (Python workers
  each read their partition with their own consumer and hand Arrow batches to the JVM).

Spark's first query also starts its Python workers; it is run once untimed (and reported as
"cold") before the timed runs. Figures are MB/s of values (1 MB = 10**6 B) and records/s,
medians over runs, plus the spark/consumer ratio. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import (
    MB,
    consumer_config,
    create_topic,
    format_table,
    machine_note,
    producer_config,
)
from benchmarks.peers import free_port, install_signal_handlers, start_weir


def fill_topic(bootstrap: str, topic: str, records: int, size: int, partitions: int) -> float:
    """Produce ``records`` values round-robin over the partitions; MB/s of the fill."""
    failed: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None and len(failed) < 5:
            failed.append(str(err))

    config = producer_config(bootstrap, acks="1")
    config["on_delivery"] = on_delivery
    producer = Producer(config)
    value = bytes(uuid.uuid4().bytes * (size // 16 + 1))[:size]
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, None, i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
        if not i % 16_384:
            producer.poll(0)
    while producer.flush(0.5):
        pass
    if failed:
        raise RuntimeError(f"produce failed: {failed}")
    return records * size / MB / (time.perf_counter() - start)


def scan_with_consumer(bootstrap: str, topic: str, partitions: int, expected: int) -> tuple:
    """(seconds, records, value bytes) reading every partition from the beginning."""
    consumer = Consumer(consumer_config(bootstrap))
    try:
        consumer.list_topics(topic, timeout=10)  # connect before the clock starts
        start = time.perf_counter()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        count = nbytes = 0
        while count < expected:
            for message in consumer.consume(min(10_000, expected - count), 1.0):
                if message.error() is not None:
                    raise RuntimeError(f"consume error: {message.error()}")
                count += 1
                nbytes += len(message.value())
        return time.perf_counter() - start, count, nbytes
    finally:
        consumer.close()


def scan_with_spark(spark: object, bootstrap: str, topic: str) -> tuple:
    """(seconds, records, value bytes) from one Spark aggregation over the topic."""
    from pyspark.sql import functions as F

    start = time.perf_counter()
    row = (
        spark.read.format("weir")  # type: ignore[attr-defined]
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .agg(F.count(F.lit(1)).alias("n"), F.sum(F.length("value")).alias("b"))
        .collect()[0]
    )
    return time.perf_counter() - start, int(row["n"]), int(row["b"] or 0)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=200.0, help="MB of values in the topic")
    parser.add_argument("--size", type=int, default=1024, help="value size in bytes")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--replication-factor", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    parser.add_argument("--bootstrap", default=None, help="use running brokers")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    install_signal_handlers()
    records = int(args.mb * MB) // args.size
    print(machine_note())
    with tempfile.TemporaryDirectory(prefix="weir-bench-spark-") as data_dir:
        handle = None
        bootstrap = args.bootstrap
        if bootstrap is None:
            handle = start_weir(free_port(), data_dir, brokers=3)
            bootstrap = handle.bootstrap
            print(f"[weir] 3 brokers at {bootstrap}")
        try:
            return measure(args, bootstrap, records)
        finally:
            if handle is not None:
                handle.stop()


def measure(args: argparse.Namespace, bootstrap: str, records: int) -> int:
    from spark_jobs.session import resolve_master, spark_session

    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, args.partitions, replication_factor=args.replication_factor)
    rate = fill_topic(bootstrap, topic, records, args.size, args.partitions)
    print(
        f"filled {topic}: {records:,} x {args.size} B in {args.partitions} partitions "
        f"({rate:.1f} MB/s)"
    )
    started = time.perf_counter()
    spark = spark_session(app_name="weir-bench", master=args.master)
    print(f"spark session ({resolve_master(args.master)}) in {time.perf_counter() - started:.1f}s")
    cold = scan_with_spark(spark, bootstrap, topic)
    results: dict[str, list[tuple]] = {"consumer": [], "spark": []}
    for run in range(1, args.runs + 1):
        for name in ("consumer", "spark"):
            if name == "consumer":
                result = scan_with_consumer(bootstrap, topic, args.partitions, records)
            else:
                result = scan_with_spark(spark, bootstrap, topic)
            seconds, count, nbytes = result
            if count != records or nbytes != records * args.size:
                print(f"  ! {name} saw {count} records / {nbytes} B", file=sys.stderr)
            results[name].append(result)
            print(
                f"run {run}: {name:8s} {nbytes / MB / seconds:8.1f} MB/s  "
                f"{count / seconds:10,.0f} rec/s  ({seconds:.2f}s)"
            )
    spark.stop()

    def median_rate(name: str) -> tuple[float, float, float]:
        seconds = statistics.median(r[0] for r in results[name])
        return seconds, records * args.size / MB / seconds, records / seconds

    rows = []
    for name in ("consumer", "spark"):
        seconds, mbs, rps = median_rate(name)
        rows.append([name, f"{seconds:.2f}", f"{mbs:.1f}", f"{rps:,.0f}"])
    rows.append(
        [
            "spark (cold)",
            f"{cold[0]:.2f}",
            f"{cold[2] / MB / cold[0]:.1f}",
            f"{cold[1] / cold[0]:,.0f}",
        ]
    )
    print()
    print(
        f"scan of {records:,} records x {args.size} B ({records * args.size / MB:.0f} MB), "
        f"{args.partitions} partitions, RF {args.replication_factor}, medians of {args.runs} runs"
    )
    print(format_table(["reader", "seconds", "MB/s", "records/s"], rows))
    ratio = median_rate("spark")[1] / median_rate("consumer")[1]
    print(f"spark / consumer: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

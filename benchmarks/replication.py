"""Replication cost: produce throughput on a 3-broker Weir cluster, RF 1 vs RF 3, one run.

    python -m benchmarks.replication [--records N] [--size 1024] [--runs 3]

Starts a private Redis and three Weir brokers, then per run produces ``--records`` 1 KB
records with confluent-kafka (same settings as ``benchmarks.throughput``) to

* an RF 1 topic with ``acks=1`` (no replication), and
* an RF 3 topic with ``min.insync.replicas=2`` and ``acks=all`` (every batch waits until the
  followers have fetched it and the high watermark passed it),

and prints MB/s for both and the RF 3 / RF 1 ratio. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import uuid

from benchmarks.common import create_topic, delete_topic
from benchmarks.peers import free_port, install_signal_handlers, start_weir
from benchmarks.throughput import ProduceSettings, produce_records


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--linger-ms", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=300.0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    install_signal_handlers()
    results: dict[str, list[float]] = {"rf1 acks=1": [], "rf3 acks=all": []}
    with tempfile.TemporaryDirectory(prefix="weir-bench-rep-") as data_dir:
        handle = start_weir(free_port(), data_dir, brokers=3)
        try:
            print(f"[weir] 3 brokers at {handle.bootstrap}")
            for run in range(1, args.runs + 1):
                for label, rf, acks in (("rf1 acks=1", 1, "1"), ("rf3 acks=all", 3, "all")):
                    topic = f"bench-rep-{rf}-{uuid.uuid4().hex[:8]}"
                    create_topic(
                        handle.bootstrap,
                        topic,
                        replication_factor=rf,
                        config={"min.insync.replicas": "2"} if rf == 3 else None,
                    )
                    settings = ProduceSettings(
                        records=args.records,
                        size=args.size,
                        acks=acks,
                        linger_ms=args.linger_ms,
                        timeout=args.timeout,
                    )
                    result = produce_records(handle.bootstrap, topic, settings)
                    results[label].append(result.mb_per_s)
                    print(
                        f"[weir] run {run}: {label}: {result.mb_per_s:.1f} MB/s "
                        f"({result.msgs_per_s:,.0f} msg/s, {result.failed} failed)"
                    )
                    delete_topic(handle.bootstrap, topic)
        finally:
            handle.stop()
    rf1 = statistics.median(results["rf1 acks=1"])
    rf3 = statistics.median(results["rf3 acks=all"])
    print()
    print(
        f"replication: {args.records} records x {args.size} B, 1 partition, 3 brokers, "
        f"linger.ms={args.linger_ms}, medians of {args.runs} runs"
    )
    print(f"  RF 1, acks=1:   {rf1:8.1f} MB/s")
    print(f"  RF 3, acks=all: {rf3:8.1f} MB/s")
    print(f"  RF 3 / RF 1:    {rf3 / rf1:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

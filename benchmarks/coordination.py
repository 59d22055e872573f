"""What highly available coordination costs, and how long a Redis failover stops it.

Run: ``.venv/bin/python -m benchmarks.coordination [--writes N] [--failovers K] [--json FILE]``

Two peers in the same process tree, each a real Redis set up as docs/operations.md says:

* ``single``: one ``redis-server`` with its append-only file fsynced on every write (what
  ``make run`` and the compose file's plain Redis run);
* ``sentinel``: three such servers (``min-replicas-to-write 1``) and three sentinels, reached
  through a ``redis+sentinel://`` URL, so every metadata write also waits for the replicas in
  sync (``weir.metadata.quorum``).

For each it times ``--writes`` fenced controller writes one after another through Weir's
``MetadataStore`` (a topic config change, as IncrementalAlterConfigs makes) and prints their
p50/p99 and the ratio sentinel/single. Then, ``--failovers`` times, it SIGKILLs the sentinel
deployment's primary while a writer keeps writing, and reports how long no write was
confirmed: from the kill to the first write confirmed on the new primary (the sentinels'
``down-after-milliseconds``, 2 s here as in the tests, plus election and promotion), and that
every write confirmed before the kill is still there afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.sentinel import ReplicatedRedisServer, SentinelDeployment
from weir.metadata.errors import MetadataUnavailableError
from weir.metadata.redis_url import aclose_client, async_client
from weir.metadata.store import MetadataStore

CLUSTER_ID = "bench-coordination"
TOPIC = "bench"


class SingleRedis(ReplicatedRedisServer):
    """One server, AOF fsynced on every write, no replicas to wait for."""

    persistence = ("--appendonly", "yes", "--appendfsync", "always")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def _store(url: str) -> tuple[MetadataStore, int]:
    client = async_client(url, decode_responses=True, socket_timeout=5)
    store = MetadataStore(client, cluster_id=CLUSTER_ID)
    epoch = await store.acquire_controller(1, 600_000)
    assert epoch is not None, "the controller lease is taken"
    if await store.get_topic(TOPIC) is None:
        await store.create_topic(controller_epoch=epoch, name=TOPIC, assignments=[[1]])
    return store, epoch


async def _release(store: MetadataStore, epoch: int) -> None:
    """Give the controller lease back (the next run takes it) and close the client."""
    try:
        await store.resign_controller(1, epoch)
    finally:
        await aclose_client(store.redis)


async def _write(store: MetadataStore, epoch: int, n: int) -> None:
    await store.alter_configs(
        controller_epoch=epoch,
        resource_type="topic",
        resource_name=TOPIC,
        set={"retention.ms": str(1000 + n)},
    )


async def time_writes(url: str, writes: int) -> dict[str, float]:
    store, epoch = await _store(url)
    try:
        for n in range(min(100, writes)):  # warm-up: scripts loaded, connections open
            await _write(store, epoch, n)
        samples = []
        for n in range(writes):
            started = time.perf_counter()
            await _write(store, epoch, n)
            samples.append((time.perf_counter() - started) * 1000)
    finally:
        await _release(store, epoch)
    return {
        "writes": writes,
        "p50_ms": statistics.median(samples),
        "p99_ms": percentile(samples, 0.99),
        "writes_per_s": writes / (sum(samples) / 1000),
    }


async def time_failover(deployment: SentinelDeployment) -> dict[str, Any]:
    """Kill the primary under a writer; the gap without a confirmed write, and the check
    that every write confirmed before the kill survived."""
    store, epoch = await _store(deployment.url)
    confirmed = 0
    n = 0
    try:
        for _ in range(50):
            n += 1
            await _write(store, epoch, n)
            confirmed = n
        old = deployment.primary()
        killed_at = time.monotonic()
        deployment.kill(old)
        held: int | None = None
        while True:
            try:
                if held is None:  # what the new primary has, before anything overwrites it
                    image = await store.snapshot()
                    held = int(image.topic_config(TOPIC)["retention.ms"]) - 1000
                await _write(store, epoch, n + 1)
                break
            except MetadataUnavailableError:
                await asyncio.sleep(0.01)
        gap_s = time.monotonic() - killed_at
    finally:
        await _release(store, epoch)
    deployment.restart(old)
    deployment.wait_settled(60)
    return {"gap_s": gap_s, "last_confirmed_before_kill": confirmed, "held_after": held}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000, help="metadata writes per peer")
    parser.add_argument("--failovers", type=int, default=3, help="primary kills to time")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    if args.writes < 1 or args.failovers < 0:
        parser.error("--writes must be at least 1 and --failovers at least 0")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="weir-bench-coord-") as root:
        single = SingleRedis(Path(root) / "single")
        deployment = SentinelDeployment(Path(root) / "sentinel")
        try:
            single.start()
            deployment.start()
            results["single"] = asyncio.run(time_writes(single.url, args.writes))
            results["sentinel"] = asyncio.run(time_writes(deployment.url, args.writes))
            results["failovers"] = [
                asyncio.run(time_failover(deployment)) for _ in range(args.failovers)
            ]
        finally:
            deployment.stop()
            single.stop()
    single_p50, sentinel_p50 = results["single"]["p50_ms"], results["sentinel"]["p50_ms"]
    results["ratio_p50"] = sentinel_p50 / single_p50
    print(f"{'peer':10} {'writes':>7} {'p50 ms':>8} {'p99 ms':>8} {'writes/s':>9}")
    for peer in ("single", "sentinel"):
        r = results[peer]
        print(
            f"{peer:10} {r['writes']:>7} {r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} "
            f"{r['writes_per_s']:>9.0f}"
        )
    print(f"sentinel/single p50: {results['ratio_p50']:.2f}x")
    lost = 0
    for i, f in enumerate(results["failovers"], 1):
        kept = f["held_after"] >= f["last_confirmed_before_kill"]
        lost += not kept
        print(
            f"failover {i}: no confirmed write for {f['gap_s']:.2f} s; write "
            f"#{f['last_confirmed_before_kill']} confirmed before the kill "
            f"{'kept' if kept else 'LOST'} (Redis holds #{f['held_after']})"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())

"""``manage.py devcluster``: what ``make run`` starts — the embedded default cluster.

Starts a private ``redis-server`` when ``WEIR_REDIS_URL`` is not reachable, then three
brokers on 127.0.0.1:9092-9094 with data under ``./data/broker-N``, and supervises them:
a child that dies is reported and restarted; Ctrl-C (or SIGTERM) stops everything cleanly.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


def redis_reachable(url: str, timeout: float = 1.0) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


class Command(BaseCommand):
    help = "Run the embedded default cluster: Redis if needed and three brokers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
        parser.add_argument("--base-port", type=int, default=9092, help="first broker port")
        parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
        parser.add_argument("--data-dir", default="data", help="root of the brokers' data dirs")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["brokers"] < 1:
            raise CommandError("--brokers must be at least 1")
        env = dict(os.environ)
        redis_url = env.get("WEIR_REDIS_URL", settings.WEIR_REDIS_URL)
        data_root = Path(options["data_dir"]).resolve()
        children: list[tuple[str, list[str], subprocess.Popen[bytes]]] = []

        def spawn(name: str, argv: list[str]) -> None:
            self.stdout.write(f"starting {name}: {' '.join(argv)}")
            children.append((name, argv, subprocess.Popen(argv, env=env)))

        if not redis_reachable(redis_url):
            binary = shutil.which("redis-server")
            if binary is None:
                raise CommandError("redis-server is not installed (make install adds it)")
            parsed = urlparse(redis_url)
            port = parsed.port or 6379
            redis_dir = data_root / "redis"
            redis_dir.mkdir(parents=True, exist_ok=True)
            spawn(
                "redis",
                [
                    binary,
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(redis_dir),
                    "--appendonly",
                    "yes",
                    "--save",
                    "",
                ],
            )
            _wait_for(lambda: redis_reachable(redis_url), "redis-server", 10)
        env["WEIR_REDIS_URL"] = redis_url
        for n in range(options["brokers"]):
            broker_id = n + 1
            port = options["base_port"] + n
            spawn(
                f"broker-{broker_id}",
                [
                    sys.executable,
                    "manage.py",
                    "runbroker",
                    "--broker-id",
                    str(broker_id),
                    "--listen",
                    f"{options['host']}:{port}",
                    "--data-dir",
                    str(data_root / f"broker-{broker_id}"),
                ],
            )
        self.stdout.write(
            f"Weir is up: bootstrap servers {options['host']}:{options['base_port']}"
            f"..{options['base_port'] + options['brokers'] - 1}; Ctrl-C stops everything"
        )
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            while not stopping:
                for i, (name, argv, proc) in enumerate(children):
                    if proc.poll() is not None and not stopping:
                        self.stderr.write(f"{name} exited with {proc.returncode}; restarting")
                        time.sleep(1)
                        children[i] = (name, argv, subprocess.Popen(argv, env=env))
                time.sleep(0.5)
        finally:
            # Brokers first (they flush and deregister from Redis), Redis last.
            brokers = [c for c in children if c[0] != "redis"]
            redis_children = [c for c in children if c[0] == "redis"]
            for group in (brokers, redis_children):
                for _, _, proc in group:
                    if proc.poll() is None:
                        proc.terminate()
                for name, _, proc in group:
                    try:
                        proc.wait(timeout=20)
                    except subprocess.TimeoutExpired:
                        self.stderr.write(f"{name} did not stop in 20 s; killing it")
                        proc.kill()
            self.stdout.write("stopped")


def _wait_for(check: Any, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise CommandError(f"{what} did not come up within {seconds:.0f} s")

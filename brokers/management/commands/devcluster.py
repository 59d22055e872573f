"""``manage.py devcluster``: what ``make run`` starts — the embedded default cluster.

Starts a private ``redis-server`` when ``WEIR_REDIS_URL`` is not reachable (a
``redis://`` URL only: a ``redis+sentinel://`` deployment is the operator's to run, and an
unreachable one is an error), then three
brokers on 127.0.0.1:9092-9094 with data under ``./data/broker-N``, then the control plane:
the database is migrated, an admin account is created (``ensure-admin`` prints how to log
in), the web app (daphne serving ``controlplane.asgi:application``) listens on
http://127.0.0.1:8000 and the lag monitor (``manage.py monitor``), a Celery worker and beat
(``celery -A controlplane worker`` / ``beat``: retention, compaction, analytics) run beside
it. Every child is supervised: one that dies is reported and restarted; Ctrl-C (or SIGTERM)
stops everything.
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

from weir.metadata.redis_url import ReconnectRetry, close_client, parse_redis_url, sync_client


def redis_reachable(url: str, timeout: float = 1.0) -> bool:
    """Whether ``url``'s Redis (or the primary its sentinels name) answers PING within
    ``timeout`` (no reconnection retries: the question is whether it is up now)."""
    import redis

    client = sync_client(
        url,
        socket_connect_timeout=timeout,
        socket_timeout=timeout,
        retry=ReconnectRetry(budget_s=0),
    )
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        close_client(client)


class Command(BaseCommand):
    help = "Run the embedded default cluster: Redis if needed and three brokers."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
        parser.add_argument("--base-port", type=int, default=9092, help="first broker port")
        parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
        parser.add_argument("--data-dir", default="data", help="root of the brokers' data dirs")
        parser.add_argument("--web-port", type=int, default=8000, help="web app port (8000)")
        parser.add_argument(
            "--no-web", action="store_true", help="brokers only: no web app and no monitor"
        )

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

        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        try:
            data_root.mkdir(parents=True, exist_ok=True)
            if not redis_reachable(redis_url):
                if parse_redis_url(redis_url).is_sentinel:
                    raise CommandError(
                        f"no Redis primary is reachable through the sentinels of "
                        f"WEIR_REDIS_URL={redis_url}; devcluster starts a private "
                        f"redis-server only for a redis:// URL"
                    )
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
                        # Every metadata write on disk before it is answered: a restart
                        # (even after a power cut) loses nothing the brokers relied on.
                        "--appendfsync",
                        "always",
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
            if not options["no_web"]:
                self._start_control_plane(spawn, options, data_root)
            self.stdout.write(
                f"Weir is up: bootstrap servers {options['host']}:{options['base_port']}"
                f"..{options['base_port'] + options['brokers'] - 1}; Ctrl-C stops everything"
            )
            while not stopping:
                for i, (name, argv, proc) in enumerate(children):
                    if proc.poll() is not None and not stopping:
                        self.stderr.write(f"{name} exited with {proc.returncode}; restarting")
                        time.sleep(1)
                        children[i] = (name, argv, subprocess.Popen(argv, env=env))
                time.sleep(0.5)
        finally:
            # The control plane first, then brokers (they flush and deregister from Redis),
            # Redis last.
            web = [c for c in children if c[0] in ("web", "monitor", "worker", "beat")]
            brokers = [c for c in children if c[0].startswith("broker-")]
            redis_children = [c for c in children if c[0] == "redis"]
            for group in (web, brokers, redis_children):
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

    def _start_control_plane(self, spawn: Any, options: dict[str, Any], data_root: Path) -> None:
        """Migrate, make sure an admin exists, then start the web app, the lag monitor and
        Celery's worker and beat."""
        from django.core.management import call_command, get_commands

        if not 0 < options["web_port"] < 65536:
            raise CommandError(f"--web-port must be a TCP port, got {options['web_port']}")
        call_command("migrate", interactive=False, verbosity=0)
        url = f"http://{options['host']}:{options['web_port']}"
        call_command("ensure-admin", password_file=str(data_root / "admin-password"), url=url)
        spawn(
            "web",
            [
                sys.executable,
                "-m",
                "daphne",
                "-b",
                options["host"],
                "-p",
                str(options["web_port"]),
                "controlplane.asgi:application",
            ],
        )
        if "monitor" in get_commands():
            spawn("monitor", [sys.executable, "manage.py", "monitor"])
        # Celery runs the retention, compaction and analytics jobs; beat schedules them.
        celery = [sys.executable, "-m", "celery", "-A", "controlplane"]
        spawn("worker", [*celery, "worker", "-l", "info"])
        spawn("beat", [*celery, "beat", "-l", "info"])


def _wait_for(check: Any, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise CommandError(f"{what} did not come up within {seconds:.0f} s")

"""``manage.py devcluster``, what ``make run`` starts, as a child of the test: shared by the
``make run`` test and the check that docker-compose runs the same commands."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from tests.suite.children import die_with_parent
from tests.weir.clients.conftest import ROOT

__all__ = ["start_devcluster"]


def start_devcluster(
    redis_url: str, root: Path, base_port: int, web_port: int, *args: str
) -> subprocess.Popen[str]:
    """Start ``devcluster`` on ``redis_url`` (a cluster id of its own) with its data and
    SQLite database under ``root``, brokers from ``base_port`` and the web app on
    ``web_port``; ``args`` are further flags. Its stdout and stderr are one text pipe.

    The environment is the suite's minus what would make the run less than a fresh one:
    no ``DATABASE_URL`` (the SQLite file is used) and no ``WEIR_ADMIN_PASSWORD`` (devcluster
    makes the admin's password and prints it)."""
    env = dict(
        os.environ,
        WEIR_REDIS_URL=redis_url,
        WEIR_CLUSTER_ID=f"devcluster-{uuid.uuid4().hex[:8]}",
        WEIR_SQLITE_PATH=str(root / "db.sqlite3"),
        PYTHONUNBUFFERED="1",
    )
    env.pop("DATABASE_URL", None)
    env.pop("WEIR_ADMIN_PASSWORD", None)
    argv = [sys.executable, str(ROOT / "manage.py"), "devcluster", *args]
    argv += ["--data-dir", str(root / "data")]
    argv += ["--base-port", str(base_port), "--web-port", str(web_port)]
    return subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=die_with_parent(),
    )

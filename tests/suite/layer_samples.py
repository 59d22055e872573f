"""Sample test code for ``test_layers``: what ``CodeWalk`` must and must not see.

Imported by name only (``importlib``), so the tests that read it are not themselves taken to
start processes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import RedisServer


def spawns() -> None:
    subprocess.run(["true"], check=True)


def calls_a_helper_that_spawns() -> None:
    spawns()


class Starter:
    def start(self) -> None:
        self.proc = subprocess.Popen(["true"])


def builds_a_starter() -> None:
    Starter().start()


def nested_closure_spawns() -> None:
    def inner() -> None:
        spawns()

    inner()


def starts_redis(directory: Path) -> None:
    RedisServer(directory).start()


def pure() -> int:
    return len(str(Path("x")))

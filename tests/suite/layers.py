"""Layers and xdist groups, derived from the fixtures each test uses.

Theory of operation
-------------------
Nobody marks a test by hand: at collection, each test's fixture closure (and the test
function itself) is read to find what it really starts, and the test is marked with its
layers (registered in ``pyproject.toml``):

``redis``
    uses the run's real ``redis-server`` (``redis_server``, ``make_redis_server``,
    ``durable_redis``, or ``RedisServer`` directly). Cheap: one server per worker.
``inprocess``
    runs real brokers inside the test process (``tests.weir.inprocess``: ``broker``,
    ``module_broker``, ``inprocess_broker``, ``loop_broker``, the security and group
    brokers): a real listener, logs and Redis, no process start.
``processes``
    starts real processes besides that Redis: broker processes (``cluster``, ``make_cluster``,
    ``start_broker``, ``cp_cluster``...), ``manage.py`` commands, daphne and Celery
    (``dashboard``), client processes, chromium, the Spark JVM.
``browser``
    drives the dashboard in chromium (``browser``, ``page_as``); also ``processes``.
``spark``
    runs a Spark session (``spark``); also ``processes``.
``integration``
    the old name for ``processes``, kept so ``-m integration`` still means what it said.
    Marks set by hand are dropped, so the marker always agrees with what a test does.

A fixture is taken to start processes when it is one of the names above or when its code,
followed through the functions and classes of ``tests`` it calls, reaches ``subprocess``,
``os.fork`` or asyncio's subprocess API (the walk stops at code outside ``tests``). So a
module's own ``running_broker`` fixture counts, and a test moved onto an in-process harness
stops counting without anyone editing a mark.

Tests without ``processes`` get a tighter pytest-timeout (``FAST_TIMEOUT_S``) than the
suite's default, so a hang in process fails in two minutes, not five.

Under xdist (``--dist loadgroup``) tests that share an expensive fixture go to one worker as
one ``xdist_group``, so the fixture starts once, not once per worker: a module- or
package-scoped fixture that starts processes or in-process brokers groups its module or
package; the session-wide
control-plane cluster groups its users in chains that run side by side, each with a cluster of
its own (``cp_cluster`` for the REST tests, ``dashboard-1`` and ``dashboard-2`` for daphne and
the browser, every other dashboard test in each, ``spark`` for the JVM): four clusters cost
less than one worker running every one of them in a row. Everything else is scheduled test
by test, process tests first (they are the long ones).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import subprocess
import types
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

LAYERS = ("redis", "inprocess", "processes", "browser", "spark", "integration")
# pytest-timeout's limit for tests that start no process (the others have pyproject's 300 s):
# nothing in process takes more than seconds, so a hang there fails fast.
FAST_TIMEOUT_S = 120
REDIS_FIXTURES = frozenset(
    {"redis_server", "make_redis_server", "durable_redis", "sentinel_deployment"}
)
PROCESS_FIXTURES = frozenset(
    {
        "cluster",
        "make_cluster",
        "module_cluster",
        "shared_cluster",
        "start_broker",
        "cp_cluster",
        "dashboard",
    }
)
BROWSER_FIXTURES = frozenset({"browser", "page_as"})
SPARK_FIXTURES = frozenset({"spark"})
# Session-wide fixtures whose users form one xdist group each, first match wins (see above).
SESSION_GROUPS = (
    ("spark", SPARK_FIXTURES),
    ("dashboard", BROWSER_FIXTURES | {"dashboard"}),
    ("cp_cluster", frozenset({"cp_cluster"})),
)
# The dashboard's tests, in one chain, were the run's longest worker (about ten minutes of
# browser work): every other of them goes to a second chain, a worker with a cluster,
# dashboard and chromium of its own.
SPLIT_GROUPS = {"dashboard": 2}
SPAWNERS: tuple[object, ...] = (
    subprocess.Popen,
    subprocess.run,
    subprocess.call,
    subprocess.check_call,
    subprocess.check_output,
    asyncio.create_subprocess_exec,
    asyncio.create_subprocess_shell,
    os.fork,
    os.posix_spawn,
)


class CodeWalk:
    """What a piece of test code starts: ``{"processes"}``, ``{"redis"}``, both or neither."""

    def __init__(self) -> None:
        self._memo: dict[int, frozenset[str]] = {}
        from tests.conftest import RedisServer
        from tests.weir.inprocess import InProcessBroker

        self._redis_server = RedisServer
        self._inprocess = InProcessBroker

    def layers(self, obj: object) -> frozenset[str]:
        obj = inspect.unwrap(obj) if callable(obj) else obj
        key = id(obj)
        if key not in self._memo:
            self._memo[key] = frozenset()  # cycles end here
            self._memo[key] = frozenset(self._walk(obj))
        return self._memo[key]

    def _walk(self, obj: object) -> Iterator[str]:
        if _is_spawner(obj):
            yield "processes"
        elif isinstance(obj, type):
            if issubclass(obj, self._redis_server):
                yield "redis"
            elif issubclass(obj, self._inprocess):
                yield "inprocess"
            elif _ours(obj):
                for base in obj.__mro__[1:]:
                    if _ours(base):
                        yield from self.layers(base)
                for member in vars(obj).values():
                    member = getattr(member, "__func__", member)  # static/class methods
                    if isinstance(member, property):
                        member = member.fget
                    if isinstance(member, types.FunctionType):
                        yield from self.layers(member)
        elif isinstance(obj, types.FunctionType) and _ours(obj):
            yield from self._walk_code(obj)

    def _walk_code(self, function: types.FunctionType) -> Iterator[str]:
        names = set(_names(function.__code__))
        namespace = function.__globals__
        for name in names:
            value = namespace.get(name)
            if value is None:
                continue
            if isinstance(value, types.ModuleType):
                # ``subprocess.run(...)``, ``helpers.produce(...)``: follow the attributes of
                # the module this code names (test modules' fully, others' only if spawners).
                ours = value.__name__.startswith("tests.")
                for attribute in names:
                    found = getattr(value, attribute, None)
                    if found is not None and (ours or _is_spawner(found)):
                        yield from self.layers(found)
                continue
            yield from self.layers(value)


def _is_spawner(obj: object) -> bool:
    return any(obj is spawner for spawner in SPAWNERS)


def _ours(obj: Any) -> bool:
    return str(getattr(obj, "__module__", "") or "").startswith("tests.")


def _names(code: types.CodeType) -> Iterator[str]:
    """Every global or attribute name ``code`` (and the functions nested in it) uses."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def _fixture_layers(walk: CodeWalk, name: str, fixturedef: Any) -> set[str]:
    layers: set[str] = set()
    if name in REDIS_FIXTURES:
        return {"redis"}
    if name in PROCESS_FIXTURES:
        layers.add("processes")
    if name in BROWSER_FIXTURES:
        layers |= {"browser", "processes"}
    if name in SPARK_FIXTURES:
        layers |= {"spark", "processes"}
    func = getattr(fixturedef, "func", None)
    if func is not None:
        layers |= walk.layers(func)
    return layers


def _group(item: pytest.Item, shared: Iterable[tuple[str, Any]]) -> str | None:
    """The xdist group of a test: the widest expensive fixture it shares with others."""
    names = set(item.fixturenames)  # type: ignore[attr-defined]
    for group, fixtures in SESSION_GROUPS:
        if names & fixtures:
            return group
    by_scope: dict[str, str] = {}
    for name, fixturedef in shared:
        scope = fixturedef.scope
        if scope == "session":
            by_scope.setdefault("session", f"session:{name}")
        elif scope == "package":
            by_scope.setdefault("package", f"package:{fixturedef.baseid}")
        elif scope == "module":
            by_scope.setdefault("module", f"module:{item.module.__name__}")  # type: ignore[attr-defined]
        elif scope == "class" and item.cls is not None:  # type: ignore[attr-defined]
            by_scope.setdefault("class", f"class:{item.cls.__qualname__}")  # type: ignore[attr-defined]
    for scope in ("session", "package", "module", "class"):
        if scope in by_scope:
            return by_scope[scope]
    return None


def _drop_hand_marks(items: list[pytest.Item]) -> None:
    """Remove ``integration`` marks set by hand (module ``pytestmark`` included)."""
    seen: set[int] = set()
    for item in items:
        for node in item.listchain():
            if id(node) in seen:
                continue
            seen.add(id(node))
            node.own_markers[:] = [m for m in node.own_markers if m.name != "integration"]


@pytest.hookimpl(tryfirst=True)  # before xdist appends group names to node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    walk = CodeWalk()
    _drop_hand_marks(items)
    rank: dict[int, int] = {}
    seen_in_group: dict[str, int] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        layers: set[str] = set()
        shared: list[tuple[str, Any]] = []
        if info is not None:
            for name in item.fixturenames:  # type: ignore[attr-defined]
                fixturedefs = info.name2fixturedefs.get(name)
                if not fixturedefs:
                    continue
                fixturedef = fixturedefs[-1]
                found = _fixture_layers(walk, name, fixturedef)
                layers |= found
                expensive = "processes" in found or "inprocess" in found
                if expensive and fixturedef.scope != "function":
                    shared.append((name, fixturedef))
        function = getattr(item, "function", None)
        if function is not None:
            layers |= walk.layers(function)
        if "processes" in layers:
            layers.add("integration")
        for layer in sorted(layers):
            item.add_marker(layer)
        if "processes" not in layers and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(FAST_TIMEOUT_S))
        group = _group(item, shared)
        if group in SPLIT_GROUPS:
            index = seen_in_group[group] = seen_in_group.get(group, -1) + 1
            group = f"{group}-{index % SPLIT_GROUPS[group] + 1}"
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            if getattr(config.option, "loadgroup", False):  # an xdist worker, --dist loadgroup
                _send_to_group(item, group)
        rank[id(item)] = (
            0
            if "processes" in layers
            else 1
            if "inprocess" in layers
            else 2
            if "redis" in layers
            else 3
        )
    if hasattr(config, "workerinput"):
        # An xdist worker (whose collection order is the scheduler's queue): long tests first,
        # so no long one starts last while the other workers idle.
        items.sort(key=lambda item: rank[id(item)])


def _send_to_group(item: pytest.Item, group: str) -> None:
    """Give ``item`` the node id ``--dist loadgroup`` schedules by: ``<nodeid>@<group>``.

    xdist (3.8) appends the group by setting ``item._nodeid``, which pytest 9 no longer reads
    (a node's id is ``item._id``): without this every test was scheduled on its own, and each
    worker started its own control-plane cluster, dashboard and Spark session.
    """
    from _pytest.nodeid import NodeId

    suffix = f"@{group}"
    if not item.nodeid.endswith(suffix):
        item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]

"""Real Weir brokers inside the test process: the layer between pure units and processes.

What it is for
--------------
A test that needs *a broker to talk to* -- protocol and bad-input tests, Kafka client
compatibility, SASL/TLS/ACL enforcement, consumer groups, the CLI as a client -- does not need
a ``runbroker`` process: starting one costs seconds (interpreter, imports, start-up), and
the suite paid it per test. Here a real :class:`weir.broker.Broker` (real ``KafkaServer``
listeners, real logs in the test's temporary directory, the suite's real Redis through the
``redis_server`` fixture, a cluster id of its own) listens on ``127.0.0.1`` port 0 inside the
test process and starts in a fraction of a second. Its settings are built by ``runbroker``'s
own parser (:func:`weir.runbroker.settings_from_args`), so ``--config`` strings mean exactly
what they mean to a process.

Two ways to host it
-------------------
* :func:`broker_in_loop` -- an ``async with`` block in the *test's* event loop (pytest-asyncio).
  For async tests whose clients are async too (aiokafka, Weir's ``BrokerClient``, raw kio
  frames over asyncio streams). Nothing in the test may block the loop: a synchronous client
  would wait for a broker that cannot run.
* :class:`BrokerThread` + :class:`ThreadedBroker` -- an event loop of its own in a background
  thread, for synchronous clients (confluent-kafka, kafka-python, kcat and ``manage.py``
  commands, in the test's thread or as subprocesses) and for async tests that share a
  module-scoped broker. ``ThreadedBroker`` exposes what ``BrokerProcess`` did (``bootstrap``,
  ``port``, ``broker_id``, ``cluster_id``, ``redis_url``, ``data_dir``, ``alive()``) plus
  ``restart()`` on the same data directory and ports. Several brokers may share one thread
  (:func:`threaded_cluster`: three brokers, one cluster id).

What still needs a real process
-------------------------------
Whatever the *process* is the point of: ``kill -9`` and crash recovery (torn tails, lost page
cache, leases left to expire), ``SIGSTOP``/``SIGCONT`` pauses, ``SIGTERM`` handling and the exit
status, fencing of a zombie process by a newer registration, ``runbroker``'s flag checks and
messages, and the start-up of a process without Django. Those keep
``tests.weir.clients.conftest.BrokerProcess``.

Process-global state
--------------------
A broker in the test process must leave nothing behind: ``stop()`` closes its listeners,
tasks, logs and Redis client; :meth:`BrokerThread.close` shuts the thread's default executor
(``asyncio.to_thread`` work: SCRAM hashing, log cleaning) and closes the loop, so no thread
outlives the fixture. The in-process broker installs no signal handlers and does not
configure logging (``runbroker.run`` does both for a process).

As a safety net for what a process would leave to its exit, the harness closes the logs
again after a stop, and the loop gets a task factory that records which broker's context
created each task: after a stop any such task left is cancelled until gone and the Redis
client is closed again. Since ``Broker.stop`` detaches its metadata listener before closing
the logs and ends its loops with ``weir.loop_task`` (issue 15), nothing should be left;
``tests/weir/test_broker_stop.py`` proves that for the broker itself.

Its log, the file a process would write, is kept anyway (``log_path``, ``log_text()``): the
broker starts inside a context that carries a marker of its own (a ``ContextVar``), every
task and connection it creates inherits that context, and a handler on the root logger
writes the records carrying the marker, in ``runbroker``'s format, to the broker's file.
Several brokers in one loop thus keep separate logs. While any broker log is open, the
``weir`` logger passes INFO (a process logs at INFO); the level it had comes back when the
last one closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import logging
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from kio.schema.metadata.v12.request import MetadataRequest

from weir.broker import Broker, BrokerSettings
from weir.client import BrokerClient
from weir.runbroker import build_parser, settings_from_args

__all__ = [
    "BrokerThread",
    "InProcessBroker",
    "ThreadedBroker",
    "broker_in_loop",
    "new_cluster_id",
    "threaded_broker",
    "threaded_cluster",
]

T = TypeVar("T")

# Generous: a loaded 2-core machine may take seconds where an idle one takes milliseconds.
START_TIMEOUT_S = 60.0
# Broker.stop bounds each of its steps (5 s); a whole stop gets some of them.
STOP_TIMEOUT_S = 60.0


# The InProcessBroker whose start-up created the running task (see "Process-global state").
_OWNER: contextvars.ContextVar[object | None] = contextvars.ContextVar("weir_test_broker")


class BrokerLog(logging.Handler):
    """Writes the records of one in-process broker to its log file, as runbroker would."""

    _lock = threading.Lock()
    _open = 0
    _saved_level = logging.NOTSET

    def __init__(self, owner: object, path: Path, broker_id: int) -> None:
        super().__init__(logging.DEBUG)
        self.owner = owner
        self.path = path
        self.setFormatter(
            logging.Formatter(f"%(asctime)s broker-{broker_id} %(levelname)s %(name)s: %(message)s")
        )
        self.addFilter(lambda record: _OWNER.get(None) is self.owner)
        self._file = path.open("a", encoding="utf-8")
        logging.getLogger().addHandler(self)
        with BrokerLog._lock:
            weir = logging.getLogger("weir")
            if BrokerLog._open == 0:
                BrokerLog._saved_level = weir.level
            BrokerLog._open += 1
            if weir.getEffectiveLevel() > logging.INFO:
                weir.setLevel(logging.INFO)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._file.write(self.format(record) + "\n")
            self._file.flush()
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        logging.getLogger().removeHandler(self)
        with BrokerLog._lock:
            BrokerLog._open -= 1
            if BrokerLog._open == 0:
                logging.getLogger("weir").setLevel(BrokerLog._saved_level)
        self._file.close()
        super().close()


def _tag_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Make ``loop`` record which in-process broker created each task (by the creator's
    context), so a stopped broker's leftover tasks can be found and cancelled."""
    previous = loop.get_task_factory()
    if getattr(previous, "tags_broker_tasks", False):
        return

    def factory(
        loop: asyncio.AbstractEventLoop, coro: Any, context: contextvars.Context | None = None
    ) -> asyncio.Future[Any]:
        kwargs = {} if context is None else {"context": context}
        if previous is not None:
            task = previous(loop, coro, **kwargs)
        else:
            task = asyncio.Task(coro, loop=loop, **kwargs)
        owner = context.get(_OWNER, None) if context is not None else _OWNER.get(None)
        if isinstance(owner, InProcessBroker):
            owner._tasks.add(task)  # type: ignore[arg-type]
        return task

    factory.tags_broker_tasks = True  # type: ignore[attr-defined]
    loop.set_task_factory(factory)


def new_cluster_id() -> str:
    """A cluster id no other test uses (keys on the shared Redis never collide)."""
    return f"test-{uuid.uuid4().hex[:12]}"


def build_settings(
    *,
    broker_id: int,
    data_dir: Path,
    redis_url: str,
    cluster_id: str,
    configs: Sequence[str] = (),
    port: int = 0,
) -> BrokerSettings:
    """The settings ``runbroker --broker-id N --listen 127.0.0.1:PORT --data-dir D --config
    ...`` would build, with the Redis URL and cluster id a process reads from its environment."""
    argv = ["--broker-id", str(broker_id), "--listen", f"127.0.0.1:{port}"]
    argv += ["--data-dir", str(data_dir)]
    for config in configs:
        argv += ["--config", config]
    args = build_parser().parse_args(argv)
    return settings_from_args(
        args, environ={"WEIR_REDIS_URL": redis_url, "WEIR_CLUSTER_ID": cluster_id}
    )


class InProcessBroker:
    """One :class:`Broker` that can be started, stopped and started again in a running loop.

    The first start binds port 0 (and port 0 for any listener configured so); the ports it
    got are kept, so a restart comes back on the same addresses, as a restarted process
    would, and on the same data directory.
    """

    def __init__(
        self,
        *,
        broker_id: int,
        data_dir: Path,
        redis_url: str,
        cluster_id: str,
        configs: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.data_dir = data_dir
        self.log_path = log_path or data_dir.with_name(f"{data_dir.name}.log")
        self.redis_url = redis_url
        self.cluster_id = cluster_id
        self.configs = tuple(configs)
        self.settings = build_settings(
            broker_id=broker_id,
            data_dir=data_dir,
            redis_url=redis_url,
            cluster_id=cluster_id,
            configs=configs,
        )
        self.broker: Broker | None = None
        self._log: BrokerLog | None = None
        # Every task created in this broker's context (see _tag_tasks).
        self._tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        # Listener name → bound (host, port), known after the first start.
        self.endpoints: dict[str, tuple[str, int]] = {}

    async def start(self) -> None:
        if self.alive():
            return
        if self._log is None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = BrokerLog(self, self.log_path, self.broker_id)
        # In a task of its own whose context names this broker: everything the broker starts
        # inherits it (its log, its tasks), and the caller's context is left as it was.
        await asyncio.get_running_loop().create_task(self._start(), context=self._context())

    async def _start(self) -> None:
        broker = Broker(self.settings)
        try:
            await broker.start()
        except BaseException:
            await broker.stop()
            raise
        self.broker = broker
        self.endpoints = {e.name: (e.host, e.port) for e in broker.advertised_endpoints()}
        self._pin_ports()

    async def stop(self) -> None:
        broker, self.broker = self.broker, None
        if broker is None:
            return
        await asyncio.get_running_loop().create_task(broker.stop(), context=self._context())
        # What a process leaves to its exit, a test process must clean up itself:
        # * Broker.stop closes the logs before it stops the metadata cache, so a metadata
        #   update in between (e.g. __consumer_offsets just created) opens logs nobody
        #   closes. Closing them again is idempotent.
        # * On Python 3.11 ``asyncio.wait_for`` (redis-py wraps each command in it) can
        #   swallow the cancellation of a task that races its command's reply; Broker.stop
        #   waits 5 s for such a task and goes on, and the task runs on and reconnects to
        #   Redis. Cancel what this broker started until it is gone, then close the Redis
        #   client's connections once more.
        broker.replicas.close()
        await self._reap()
        with contextlib.suppress(Exception):
            await broker.redis.aclose()

    def _context(self) -> contextvars.Context:
        """A context naming this broker (its log, its tasks); the caller's is left alone."""
        _tag_tasks(asyncio.get_running_loop())
        context = contextvars.copy_context()
        context.run(_OWNER.set, self)
        return context

    async def _reap(self) -> None:
        current = asyncio.current_task()
        for _ in range(100):
            left = [t for t in self._tasks if t is not current and not t.done()]
            if not left:
                return
            for task in left:
                task.cancel()
            await asyncio.wait(left, timeout=0.1)

    def close_log(self) -> None:
        """Stop writing the log file (after the last stop)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    async def restart(self) -> None:
        await self.stop()
        await self.start()

    def _pin_ports(self) -> None:
        """Settings for the next start: every listener on the port it has now."""
        settings = self.settings

        def pinned(spec: Any) -> Any:
            return dataclasses.replace(spec, port=self.endpoints[spec.name][1])

        primary = settings.primary_listener
        self.settings = dataclasses.replace(
            settings,
            listen=(settings.listen[0], self.endpoints[self._primary_name][1]),
            primary_listener=pinned(primary) if primary is not None else None,
            extra_listeners=tuple(pinned(spec) for spec in settings.extra_listeners),
        )

    @property
    def _primary_name(self) -> str:
        primary = self.settings.primary_listener
        return primary.name if primary is not None else "PLAINTEXT"

    def alive(self) -> bool:
        return self.broker is not None and not self.broker.fenced.is_set()

    @property
    def port(self) -> int:
        return self.listener_port(self._primary_name)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def listener_port(self, name: str) -> int:
        """The port of listener ``name`` (e.g. ``SASL_PLAINTEXT``), once started."""
        if name not in self.endpoints:
            raise RuntimeError(f"broker {self.broker_id} has no started listener {name}")
        return self.endpoints[name][1]


@contextlib.asynccontextmanager
async def broker_in_loop(
    *,
    data_dir: Path,
    redis_url: str,
    cluster_id: str | None = None,
    broker_id: int = 1,
    configs: Sequence[str] = (),
) -> AsyncIterator[InProcessBroker]:
    """A started broker in the running (the test's) event loop for the ``async with`` block."""
    broker = InProcessBroker(
        broker_id=broker_id,
        data_dir=data_dir,
        redis_url=redis_url,
        cluster_id=cluster_id or new_cluster_id(),
        configs=configs,
    )
    try:
        await broker.start()
        yield broker
    finally:
        try:
            await broker.stop()
        finally:
            broker.close_log()


class BrokerThread:
    """An asyncio loop in a daemon thread that hosts brokers for synchronous tests."""

    def __init__(self, name: str = "inprocess-brokers") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        """Run ``coro`` on the thread's loop and wait for its result here."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Cancel what is left on the loop, shut its executor, stop and close it."""
        if self.loop.is_closed():
            return
        with contextlib.suppress(Exception):
            self.run(self._drain(), timeout=STOP_TIMEOUT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self.loop.close()

    async def _drain(self) -> None:
        current = asyncio.current_task()
        # Cancel until nothing is left: on Python 3.11 ``asyncio.wait_for`` (redis-py wraps
        # every command in it) can swallow a cancellation that races the command's reply,
        # and the task runs on. Broker.stop then gives up on it after 5 s and goes on.
        for _ in range(100):
            tasks = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
            if not tasks:
                break
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks, timeout=0.1)
        await self.loop.shutdown_asyncgens()
        await self.loop.shutdown_default_executor()


class ThreadedBroker:
    """An :class:`InProcessBroker` on a :class:`BrokerThread`, driven from synchronous code."""

    def __init__(self, thread: BrokerThread, broker: InProcessBroker) -> None:
        self.thread = thread
        self.inner = broker

    # what BrokerProcess offered ------------------------------------------------------------
    broker_id = property(lambda self: self.inner.broker_id)
    cluster_id = property(lambda self: self.inner.cluster_id)
    redis_url = property(lambda self: self.inner.redis_url)
    data_dir = property(lambda self: self.inner.data_dir)
    port = property(lambda self: self.inner.port)
    bootstrap = property(lambda self: self.inner.bootstrap)

    def listener_port(self, name: str) -> int:
        return self.inner.listener_port(name)

    def alive(self) -> bool:
        return self.inner.alive()

    @property
    def log_path(self) -> Path:
        return self.inner.log_path

    def log_text(self) -> str:
        return self.inner.log_text()

    @property
    def broker(self) -> Broker:
        """The running Broker (to look at its state; call its coroutines through ``run``)."""
        assert self.inner.broker is not None, "the broker is not running"
        return self.inner.broker

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = START_TIMEOUT_S) -> T:
        return self.thread.run(coro, timeout)

    def start(self, timeout: float = START_TIMEOUT_S) -> None:
        self.thread.run(self.inner.start(), timeout)

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        self.thread.run(self.inner.stop(), timeout)

    def restart(self, timeout: float = START_TIMEOUT_S) -> None:
        """Stop and start again on the same data directory and ports."""
        self.stop()
        self.start(timeout)


@contextlib.contextmanager
def threaded_broker(
    *,
    data_dir: Path,
    redis_url: str,
    cluster_id: str | None = None,
    broker_id: int = 1,
    configs: Sequence[str] = (),
) -> Iterator[ThreadedBroker]:
    """A started broker on a thread of its own for the ``with`` block; the thread ends after."""
    with threaded_cluster(
        root=data_dir.parent,
        redis_url=redis_url,
        cluster_id=cluster_id,
        broker_ids=(broker_id,),
        configs=configs,
        data_dirs={broker_id: data_dir},
    ) as brokers:
        yield brokers[broker_id]


@contextlib.contextmanager
def threaded_cluster(
    *,
    root: Path,
    redis_url: str,
    cluster_id: str | None = None,
    broker_ids: Sequence[int] = (1, 2, 3),
    configs: Sequence[str] = (),
    data_dirs: dict[int, Path] | None = None,
) -> Iterator[dict[int, ThreadedBroker]]:
    """Brokers ``broker_ids`` of one cluster on one loop thread (data in ``root/broker-N``)."""
    cluster_id = cluster_id or new_cluster_id()
    thread = BrokerThread()
    brokers: dict[int, ThreadedBroker] = {}
    try:
        for broker_id in broker_ids:
            data_dir = (data_dirs or {}).get(broker_id, root / f"broker-{broker_id}")
            brokers[broker_id] = ThreadedBroker(
                thread,
                InProcessBroker(
                    broker_id=broker_id,
                    data_dir=data_dir,
                    redis_url=redis_url,
                    cluster_id=cluster_id,
                    configs=configs,
                ),
            )
        # The first broker first, so it takes the controller lease as the first of a row of
        # processes would (tests may rely on it); the others together after it.
        first, *others = brokers.values()
        thread.run(first.inner.start())
        thread.run(_gather(*(b.inner.start() for b in others)))
        if len(brokers) > 1:
            thread.run(_settled([b.inner for b in brokers.values()]))
        yield brokers
    finally:
        try:
            thread.run(_gather(*(b.inner.stop() for b in brokers.values())), STOP_TIMEOUT_S)
        finally:
            thread.close()
            for broker in brokers.values():
                broker.inner.close_log()


async def _settled(brokers: Sequence[InProcessBroker], timeout: float = START_TIMEOUT_S) -> None:
    """Wait until every broker's Metadata answer names a controller and all the brokers.

    A broker learns the controller from the metadata log a moment after it starts; processes
    started one after another never showed the gap, brokers started together do.
    """
    expected = {b.broker_id for b in brokers}
    request = MetadataRequest(
        topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    deadline = asyncio.get_running_loop().time() + timeout
    for broker in brokers:
        client = BrokerClient("127.0.0.1", broker.port, client_id="inprocess-harness")
        try:
            while True:
                answer = await client.request(request, timeout=timeout)
                if answer.controller_id >= 0 and {b.node_id for b in answer.brokers} >= expected:
                    break
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"broker {broker.broker_id} names no controller")
                await asyncio.sleep(0.02)
        finally:
            await client.close()


async def _gather(*coros: Coroutine[Any, Any, None]) -> None:
    results = await asyncio.gather(*coros, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result

"""A three-broker Weir cluster of real ``runbroker`` processes, for failure tests.

``make_cluster(configs=[...])`` starts brokers 1, 2 and 3 (``BrokerProcess`` from the client
tests, spawned side by side) on free loopback ports with fast failure detection
(``FAST_CONFIGS``), sharing one ``WEIR_CLUSTER_ID``; ``cluster`` is such a cluster with the
defaults, for one test. ``shared_cluster`` is one cluster for all of a module's tests that
isolate by topic name and break nothing. Brokers can be killed (``kill9``), stopped (SIGTERM),
paused (SIGSTOP, ``pause``/``resume``) and restarted on the same port and data directory.

Cluster state is read with raw Metadata requests to *one chosen broker* (Weir's own kio
client), so a test can tell what each broker believes, including a paused zombie once it
wakes up. Waits poll (``wait_until``) and put every broker's log tail into the failure
message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.index import load_response_schema
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.serial import entity_reader

from tests.conftest import RedisServer
from tests.weir.clients.conftest import BrokerProcess
from weir.client import BrokerClient, BrokerClientError, encode_request
from weir.metadata.image import ControllerLease
from weir.metadata.keys import KeyLayout
from weir.metadata.redis_url import ReconnectRetry, close_client, sync_client
from weir.protocol.records import BatchHeader, iter_batches
from weir.security.client import ClientSecurity

T = TypeVar("T")

SESSION_TIMEOUT_MS = 3000
LAG_TIME_MAX_MS = 2000

FAST_CONFIGS = [
    f"broker.session.timeout.ms={SESSION_TIMEOUT_MS}",
    "broker.heartbeat.interval.ms=500",
    f"replica.lag.time.max.ms={LAG_TIME_MAX_MS}",
    "default.replication.factor=3",
    "min.insync.replicas=2",
    "auto.leader.rebalance.enable=false",
    "num.partitions=1",
    # Readers carry a group.id, so __consumer_offsets appears in every test: keep it small.
    "offsets.topic.num.partitions=5",
]

BROKER_IDS = (1, 2, 3)


def merge_configs(base: list[str], overrides: list[str]) -> list[str]:
    """``base`` with ``overrides`` applied (later ``key=value`` wins)."""
    merged: dict[str, str] = {}
    for item in [*base, *overrides]:
        key, _, value = item.partition("=")
        merged[key] = value
    return [f"{k}={v}" for k, v in merged.items()]


def wait_until(
    probe: Callable[[], T | None],
    timeout: float,
    message: Callable[[], str] | str,
    interval: float = 0.1,
) -> T:
    """Poll ``probe`` until it returns something truthy; fail with ``message`` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = probe()
        except (BrokerClientError, OSError):
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            pytest.fail(f"timed out after {timeout}s: {text}")
        time.sleep(interval)


def raw_request(
    port: int,
    body: Any,
    timeout: float = 5.0,
    security: ClientSecurity | None = None,
    client_id: str = "weir-cluster-test",
) -> Any:
    """One request to the broker on ``port`` with Weir's kio client; the decoded response."""

    async def roundtrip() -> Any:
        client = BrokerClient("127.0.0.1", port, client_id=client_id, security=security)
        try:
            return await client.request(body, timeout=timeout)
        finally:
            await client.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(roundtrip())
    # A loop already runs in this thread (Playwright's sync API keeps one in the browser
    # tests): run the round trip on a loop of its own in another thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, roundtrip()).result()


class RawConnection:
    """A blocking Kafka connection that can send now and read the answer later.

    Useful against a paused broker: the request waits in the socket until it resumes.
    """

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self._correlation = 0
        self._pending: dict[int, Any] = {}

    def send(self, body: Any) -> int:
        self._correlation += 1
        # The frame Weir's own client writes (weir.client), sent on a socket of our own.
        self.sock.sendall(encode_request(body, self._correlation, "weir-cluster-test"))
        self._pending[self._correlation] = body
        return self._correlation

    def receive(self, timeout: float) -> Any:
        """The next response (requests are answered in order on one connection)."""
        self.sock.settimeout(timeout)
        (size,) = struct.unpack(">i", self._read(4))
        payload = self._read(size)
        correlation = min(self._pending)
        body = self._pending.pop(correlation)
        response_type = load_response_schema(body.__api_key__, body.__version__)
        header, offset = entity_reader(response_type.__header_schema__)(payload, 0)
        assert header.correlation_id == correlation, (header.correlation_id, correlation)
        response, _ = entity_reader(response_type)(payload, offset)
        return response

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int
    offline: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What one broker answers to Metadata."""

    controller_id: int
    brokers: frozenset[int]
    topics: dict[str, dict[int, PartitionInfo]]

    def partition(self, topic: str, index: int = 0) -> PartitionInfo | None:
        return self.topics.get(topic, {}).get(index)


class Cluster:
    """Brokers 1..3 of one Weir cluster, with helpers to break and observe them."""

    def __init__(
        self, brokers: dict[int, BrokerProcess], *, redis_url: str, cluster_id: str
    ) -> None:
        self.brokers = brokers
        self.redis_url = redis_url
        self.keys = KeyLayout(cluster_id)
        self.paused: set[int] = set()
        self.redis_links: dict[int, TcpProxy] = {}
        # Where and as whom ``view`` asks a broker (None: its PLAINTEXT port, anonymously).
        self.observer: Callable[[int], tuple[int, ClientSecurity]] | None = None

    # membership ----------------------------------------------------------------------------
    def __getitem__(self, broker_id: int) -> BrokerProcess:
        return self.brokers[broker_id]

    def running(self) -> list[int]:
        """Brokers that are alive and not paused."""
        return [i for i, b in sorted(self.brokers.items()) if b.alive() and i not in self.paused]

    def bootstrap(self, only: list[int] | None = None) -> str:
        ids = self.running() if only is None else only
        return ",".join(self.brokers[i].bootstrap for i in ids)

    def kill9(self, broker_id: int) -> None:
        self.brokers[broker_id].kill9()
        self.paused.discard(broker_id)

    def stop(self, broker_id: int) -> None:
        self.resume(broker_id)
        self.brokers[broker_id].stop()

    def restart(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        if broker.alive():
            self.stop(broker_id)
        broker.start()

    def pause(self, broker_id: int) -> None:
        proc = self.brokers[broker_id].proc
        assert proc is not None
        os.kill(proc.pid, signal.SIGSTOP)
        self.paused.add(broker_id)

    def resume(self, broker_id: int) -> None:
        proc = self.brokers[broker_id].proc
        if broker_id in self.paused and proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
        self.paused.discard(broker_id)

    # observation ---------------------------------------------------------------------------
    def view(self, broker_id: int, topics: list[str] | None = None) -> ClusterView:
        """Metadata as broker ``broker_id`` sees it (raises BrokerClientError if down)."""
        request = MetadataRequest(
            topics=None
            if topics is None
            else tuple(MetadataRequestTopic(topic_id=None, name=t) for t in topics),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        port, security = (
            self.observer(broker_id) if self.observer else (self.brokers[broker_id].port, None)
        )
        response = raw_request(port, request, security=security)
        return ClusterView(
            controller_id=response.controller_id,
            brokers=frozenset(b.node_id for b in response.brokers),
            topics={
                t.name: {
                    p.partition_index: PartitionInfo(
                        leader=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replicas=tuple(p.replica_nodes),
                        isr=tuple(p.isr_nodes),
                        error_code=p.error_code,
                        offline=tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                }
                for t in response.topics
                if t.error_code == 0
            },
        )

    def views(self) -> dict[int, ClusterView]:
        """Every running broker's view (brokers that do not answer are left out)."""
        views = {}
        for broker_id in self.running():
            try:
                views[broker_id] = self.view(broker_id)
            except BrokerClientError:
                continue
        return views

    def agreed_partition(self, topic: str, index: int = 0) -> PartitionInfo | None:
        """The partition state when every running broker reports the same one, else None."""
        running = self.running()
        infos = set()
        for broker_id in running:
            try:
                infos.add(self.view(broker_id, [topic]).partition(topic, index))
            except BrokerClientError:
                return None
        if len(infos) != 1:
            return None
        (info,) = infos
        return info

    def wait_partition(
        self,
        topic: str,
        predicate: Callable[[PartitionInfo], bool],
        *,
        index: int = 0,
        timeout: float = 20.0,
        what: str = "partition state",
    ) -> PartitionInfo:
        """Wait until all running brokers agree on a partition state satisfying ``predicate``."""

        def probe() -> PartitionInfo | None:
            info = self.agreed_partition(topic, index)
            return info if info is not None and predicate(info) else None

        return wait_until(
            probe, timeout, lambda: f"{what} of {topic}-{index}: {self.describe(topic)}"
        )

    def leader(self, topic: str, index: int = 0) -> int:
        info = self.wait_partition(topic, lambda p: p.leader >= 0, index=index, what="a leader")
        return info.leader

    def wait_full_isr(self, topic: str, index: int = 0, timeout: float = 30.0) -> PartitionInfo:
        return self.wait_partition(
            topic,
            lambda p: p.leader >= 0 and set(p.isr) == set(p.replicas),
            index=index,
            timeout=timeout,
            what="full ISR",
        )

    def agreed_controller(self) -> int | None:
        """The controller when every running broker names the same running one, else None."""
        views = self.views()
        ids = {v.controller_id for v in views.values()}
        if len(views) != len(self.running()) or len(ids) != 1:
            return None
        (controller,) = ids
        return controller if controller in self.running() else None

    def controller(self, timeout: float = 20.0) -> int:
        """Wait for a controller every running broker agrees on."""
        return wait_until(
            self.agreed_controller, timeout, lambda: f"agreed controller: {self.describe()}"
        )

    def lease_holder(self) -> ControllerLease | None:
        """The controller lease as Redis has it (None when free or Redis is down)."""
        client = _probe_client(self.redis_url)
        try:
            return ControllerLease.parse(client.get(self.keys.controller))
        except redis.RedisError:
            return None
        finally:
            close_client(client)

    def lease_alive(self, broker_id: int) -> bool:
        """Whether Redis still holds broker ``broker_id``'s registration lease."""
        client = _probe_client(self.redis_url)
        try:
            return bool(client.exists(self.keys.broker_lease(broker_id)))
        finally:
            close_client(client)

    def wait_lease_expired(self, broker_id: int, timeout: float = 20.0) -> None:
        wait_until(
            lambda: not self.lease_alive(broker_id),
            timeout,
            lambda: f"broker {broker_id}'s lease to expire\n{self.describe()}",
        )

    def describe(self, topic: str | None = None) -> str:
        """Every running broker's view (of ``topic``), then every broker's log tail."""
        lines = []
        for broker_id in sorted(self.brokers):
            state = "paused" if broker_id in self.paused else "up"
            if not self.brokers[broker_id].alive():
                state = "down"
            try:
                view = self.view(broker_id) if state == "up" else None
            except BrokerClientError as exc:
                view = None
                state = f"unreachable ({exc})"
            if view is None:
                lines.append(f"  broker {broker_id}: {state}")
                continue
            topics = {topic: view.topics.get(topic)} if topic else view.topics
            lines.append(
                f"  broker {broker_id}: controller={view.controller_id} "
                f"live={sorted(view.brokers)} {topics}"
            )
        return "\n".join(lines) + "\n" + self.log_tails()

    def log_tails(self, lines: int = 40) -> str:
        out = []
        for broker_id, broker in sorted(self.brokers.items()):
            tail = broker.log_text().splitlines()[-lines:]
            out.append(f"----- broker {broker_id} log (last {lines} lines) -----")
            out.extend(tail)
        return "\n".join(out)

    # admin and data ------------------------------------------------------------------------
    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap()})

    def create_topic(
        self,
        name: str,
        *,
        partitions: int = 1,
        replication_factor: int = 3,
        replica_assignment: list[list[int]] | None = None,
        config: dict[str, str] | None = None,
    ) -> str:
        """Create topic ``name`` and wait until every partition has its full ISR; the name
        (``topic = cluster.create_topic(unique("orders"))``)."""
        if replica_assignment is not None:
            topic = NewTopic(
                name,
                num_partitions=len(replica_assignment),
                replica_assignment=replica_assignment,
                config=config or {},
            )
        else:
            topic = NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=replication_factor,
                config=config or {},
            )
        deadline = time.monotonic() + 20
        while True:
            admin = self.admin()  # keep the handle alive until the future resolves
            futures = admin.create_topics([topic], operation_timeout=10, request_timeout=15)
            try:
                futures[name].result(20)
                break
            except KafkaException as exc:
                # During a controller change a broker can answer NOT_CONTROLLER; Kafka's
                # admin clients retry that, librdkafka's does not.
                if exc.args[0].code() != KafkaError.NOT_CONTROLLER or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for index in range(len(replica_assignment) if replica_assignment else partitions):
            self.wait_full_isr(name, index)
        return name

    def read_all(
        self, topic: str, index: int = 0, timeout: float = 30.0, only: list[int] | None = None
    ) -> list[tuple[int, bytes | None, bytes | None]]:
        """(offset, key, value) of every committed record of ``topic``-``index``."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap(only),
                "group.id": "cluster-test-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        try:
            # Right after a leader moves, a new client's first metadata can be a moment
            # behind (as with Kafka): retry transient lookups, not forever.
            low, high = wait_until(
                lambda: _watermarks_or_none(consumer, topic, index),
                20,
                lambda: f"watermarks of {topic}-{index}\n{self.describe(topic)}",
            )
            consumer.assign([TopicPartition(topic, index, low)])
            records: list[tuple[int, bytes | None, bytes | None]] = []
            deadline = time.monotonic() + timeout
            while (not records or records[-1][0] < high - 1) and high > low:
                if time.monotonic() >= deadline:
                    pytest.fail(
                        f"read {len(records)} records of {topic}-{index}, expected up to "
                        f"offset {high - 1}\n{self.describe(topic)}"
                    )
                for message in consumer.consume(num_messages=1000, timeout=0.5):
                    if message.error() is not None:
                        if message.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        pytest.fail(f"consumer error {message.error()}\n{self.describe(topic)}")
                    records.append((message.offset(), message.key(), message.value()))
            return records
        finally:
            consumer.close()

    def watermarks(self, topic: str, index: int = 0, only: list[int] | None = None) -> tuple:
        consumer = Consumer({"bootstrap.servers": self.bootstrap(only), "group.id": "watermarks"})
        try:
            return consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=10)
        finally:
            consumer.close()

    def log_bytes(self, broker_id: int, topic: str, index: int = 0) -> bytes:
        """The concatenated segment files of one replica (stop the broker first)."""
        directory = self.brokers[broker_id].data_dir / f"{topic}-{index}"
        return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))

    def start_all(self, timeout: float) -> None:
        """Start every broker and wait until each sees all of them alive and names the same
        controller; a cluster that does not come up is stopped again (no broker processes left
        behind). Started side by side, brokers answer Metadata with no controller until they
        learn who won the lease, and admin clients then time out "waiting for controller"."""
        try:
            for broker in self.brokers.values():
                broker.spawn()  # side by side: the interpreters start in parallel
            for broker in self.brokers.values():
                broker.wait_listening(timeout)
            wait_until(
                lambda: (
                    all(len(v.brokers) == len(self.brokers) for v in self.views().values())
                    and len(self.views()) == len(self.brokers)
                    and self.agreed_controller() is not None
                ),
                timeout,
                lambda: f"{len(self.brokers)} live brokers, one controller\n{self.describe()}",
            )
        except BaseException:
            self.stop_all()
            raise

    def stop_all(self) -> None:
        for broker_id in sorted(self.brokers):
            self.resume(broker_id)
        for broker in self.brokers.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                broker.stop()


_TRANSIENT = {
    KafkaError._UNKNOWN_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError._TIMED_OUT,
}


def _watermarks_or_none(consumer: Consumer, topic: str, index: int) -> tuple[int, int] | None:
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, index), timeout=5)
    except KafkaException as exc:
        if exc.args[0].code() in _TRANSIENT:
            return None
        raise


def batch_summary(data: bytes) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, leader epoch, crc) of every batch in a segment dump."""
    headers: list[BatchHeader] = [h for _, h in iter_batches(data, check_crc=False)]
    return [(h.base_offset, h.last_offset, h.partition_leader_epoch, h.crc) for h in headers]


class TcpProxy:
    """A loopback TCP relay to ``target_port`` that a test can freeze and thaw.

    Frozen, bytes already on their way are held (not dropped) in both directions, like a
    network path that stalls: the peers see no error, only silence, until it thaws.
    """

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads = [threading.Thread(target=self._accept, daemon=True, name="proxy")]
        self._threads[0].start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def freeze(self) -> None:
        self._open.clear()

    def thaw(self) -> None:
        self._open.set()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            self._sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                thread.start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                while not self._open.wait(0.2):
                    if self._closed.is_set():
                        return
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._closed.set()
        self._open.set()
        self._listener.close()
        for sock in self._sockets:
            sock.close()


def _probe_client(url: str) -> redis.Redis:
    """A client for one look at Redis (plain or Sentinel URL) that fails at once rather than
    waiting out a restart or failover."""
    return sync_client(url, socket_timeout=2, retry=ReconnectRetry(budget_s=0))


def redis_port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


# fixtures ------------------------------------------------------------------------------------
ClusterFactory = Callable[..., Cluster]


def new_cluster(
    root: Path,
    *,
    redis_url: str,
    cluster_id: str,
    configs: list[str],
    links: dict[int, TcpProxy] | None = None,
    broker_configs: Mapping[int, list[str]] | None = None,
) -> Cluster:
    """Brokers 1..3 (not started) with data and logs under ``root``; ``broker_configs``
    adds configs of one broker alone (its own listener port, its rack) after ``configs``."""
    links = links or {}
    broker_configs = broker_configs or {}
    brokers = {
        broker_id: BrokerProcess(
            broker_id=broker_id,
            data_dir=root / f"broker-{broker_id}",
            redis_url=links[broker_id].url if links else redis_url,
            cluster_id=cluster_id,
            configs=[*configs, *broker_configs.get(broker_id, [])],
            log_path=root / f"broker-{broker_id}.log",
        )
        for broker_id in BROKER_IDS
    }
    cluster = Cluster(brokers, redis_url=redis_url, cluster_id=cluster_id)
    cluster.redis_links = links
    return cluster


@pytest.fixture
def make_cluster(redis_server: str, cluster_id: str, tmp_path: Path) -> Iterator[ClusterFactory]:
    """Factory: ``make_cluster(configs=[...], redis_url=None)`` → a started 3-broker Cluster."""
    clusters: list[Cluster] = []
    proxies: list[TcpProxy] = []

    def factory(
        configs: list[str] | None = None,
        redis_url: str | None = None,
        redis_links: bool = False,
    ) -> Cluster:
        """``redis_links``: each broker reaches Redis through its own ``TcpProxy``."""
        url = redis_url or redis_server
        links = {i: TcpProxy(redis_port(url)) for i in BROKER_IDS} if redis_links else {}
        proxies.extend(links.values())
        cluster = new_cluster(
            tmp_path,
            redis_url=url,
            cluster_id=cluster_id,
            configs=merge_configs(FAST_CONFIGS, configs or []),
            links=links,
        )
        clusters.append(cluster)
        cluster.start_all(20)
        return cluster

    yield factory
    for proxy in proxies:
        proxy.thaw()
    for cluster in clusters:
        cluster.stop_all()
    for proxy in proxies:
        proxy.close()


@pytest.fixture
def cluster(make_cluster: ClusterFactory) -> Cluster:
    """Three brokers with FAST_CONFIGS (RF 3, min.insync.replicas 2, 3 s sessions)."""
    return make_cluster()


@pytest.fixture(scope="module")
def module_cluster(
    request: pytest.FixtureRequest, redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Three brokers shared by a module's tests: FAST_CONFIGS plus the module's
    ``CLUSTER_CONFIGS``. Use it through ``shared_cluster``."""
    configs = merge_configs(FAST_CONFIGS, getattr(request.module, "CLUSTER_CONFIGS", []))
    cluster = new_cluster(
        tmp_path_factory.mktemp("module-cluster"),
        redis_url=redis_server,
        cluster_id=f"test-{uuid.uuid4().hex[:12]}",
        configs=configs,
    )
    cluster.start_all(30)
    try:
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture
def shared_cluster(module_cluster: Cluster) -> Iterator[Cluster]:
    """The module's cluster, for tests that isolate by topic and group name and leave every
    broker running: a test that kills, pauses, restarts or reconfigures brokers takes
    ``cluster`` or ``make_cluster`` (a cluster of its own). Starting three brokers is most of
    a short cluster test's time, and the module's tests run on one xdist worker anyway."""
    yield module_cluster
    assert module_cluster.running() == list(BROKER_IDS), (
        f"a test stopped or paused a broker of the shared cluster\n{module_cluster.describe()}"
    )


class DurableRedisServer(RedisServer):
    """A redis-server with an append-only file (fsync always), so a restart keeps its data."""

    persistence = ("--appendonly", "yes", "--appendfsync", "always")


@pytest.fixture
def durable_redis(tmp_path: Path) -> Iterator[DurableRedisServer]:
    """A private AOF-backed redis-server this test may stop and restart (same port)."""
    server: DurableRedisServer | None = None
    for _ in range(5):
        server = DurableRedisServer(tmp_path / "redis-aof")
        try:
            server.start()
            break
        except RuntimeError:
            server.stop()
            server = None
    if server is None:
        raise RuntimeError("could not start an AOF redis-server")
    yield server
    server.stop()

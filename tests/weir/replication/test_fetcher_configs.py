"""The follower fetcher obeys ``replica.fetch.*``, ``replica.socket.timeout.ms``,
``num.replica.fetchers`` and the follower replication throttle.

Pure tests prove each config reaches ``FetchSettings`` and the Fetch request built from it,
and that a refused partition waits ``replica.fetch.backoff.ms`` on a fake clock. One
in-process cluster proves the configured values are what a real leader receives from a real
follower.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kio.schema.errors import ErrorCode

from tests.weir.inprocess import ThreadedBroker, threaded_cluster
from tests.weir.log.conftest import FakeClock
from weir.config import (
    BrokerConfig,
    InvalidConfigError,
    check_broker_constraints,
    effective_topic_config,
)
from weir.log.log import Log, LogConfig
from weir.partition import Partition
from weir.protocol.api_keys import ApiKey
from weir.replication.fetcher import (
    FetchSettings,
    FollowerThrottle,
    LeaderFetcher,
    ReplicaFetcherManager,
    _Followed,
    fetch_request,
    fetcher_id,
)

# Each config, the FetchSettings field it sets, and a value other than its default.
CONFIGS = [
    ("replica.fetch.wait.max.ms", "max_wait_ms", 123),
    ("replica.fetch.min.bytes", "min_bytes", 7),
    ("replica.fetch.max.bytes", "partition_max_bytes", 54321),
    ("replica.fetch.response.max.bytes", "response_max_bytes", 654321),
    ("replica.fetch.backoff.ms", "backoff_ms", 250),
    ("replica.socket.timeout.ms", "socket_timeout_ms", 4000),
]


def test_settings_defaults_are_kafkas() -> None:
    assert FetchSettings.from_config(BrokerConfig(broker_id=1)) == FetchSettings(
        max_wait_ms=500,
        min_bytes=1,
        partition_max_bytes=1024 * 1024,
        response_max_bytes=10 * 1024 * 1024,
        backoff_ms=1000,
        socket_timeout_ms=30_000,
    )
    assert FetchSettings() == FetchSettings.from_config(BrokerConfig(broker_id=1))


@pytest.mark.parametrize(("name", "attribute", "value"), CONFIGS)
def test_each_config_sets_its_fetch_setting(name: str, attribute: str, value: int) -> None:
    settings = FetchSettings.from_config(BrokerConfig(broker_id=1, static={name: str(value)}))
    assert getattr(settings, attribute) == value
    others = {a for _, a, _ in CONFIGS} - {attribute}
    assert {a: getattr(settings, a) for a in others} == {
        a: getattr(FetchSettings(), a) for a in others
    }


@pytest.fixture
def followed(tmp_path: Path) -> Iterator[_Followed]:
    log = Log.open(tmp_path / "t-0", config=LogConfig(), time_ms=FakeClock())
    partition = Partition(broker_id=2, topic="t", index=0, topic_id="x", log=log)
    yield _Followed(partition=partition, leader_epoch=0, truncated=True)
    log.close()


def test_fetch_request_carries_the_settings(followed: _Followed) -> None:
    settings = FetchSettings(
        max_wait_ms=123, min_bytes=7, partition_max_bytes=54321, response_max_bytes=654321
    )
    request = fetch_request(2, [followed], settings)
    assert request.replica_id == 2
    assert request.max_wait == timedelta(milliseconds=123)
    assert request.min_bytes == 7
    assert request.max_bytes == 654321
    (topic,) = request.topics
    assert [p.partition_max_bytes for p in topic.partitions] == [54321]


def fetcher_from_1(clock: FakeClock, settings: FetchSettings) -> LeaderFetcher:
    """Broker 2's fetcher from leader 1, never connected (tests call its steps)."""
    return LeaderFetcher(
        leader_id=1, broker_id=2, endpoint=lambda _: None, time_ms=clock, settings=settings
    )


def test_refused_partition_waits_the_configured_backoff(followed: _Followed) -> None:
    clock = FakeClock()
    fetcher = fetcher_from_1(clock, FetchSettings(backoff_ms=250))
    fetcher._back_off(followed, ErrorCode.not_leader_or_follower)
    assert followed.delayed_until_ms == clock.now + 250


@pytest.mark.parametrize(
    ("static", "named"),
    [
        ({"replica.fetch.wait.max.ms": "5000", "replica.socket.timeout.ms": "4000"}, "socket"),
        ({"replica.fetch.wait.max.ms": "5000", "replica.lag.time.max.ms": "4000"}, "lag"),
    ],
)
def test_wait_longer_than_socket_timeout_or_lag_time_is_refused(
    static: dict[str, str], named: str
) -> None:
    with pytest.raises(InvalidConfigError, match=rf"replica\.fetch\.wait\.max\.ms.*{named}"):
        check_broker_constraints(BrokerConfig(broker_id=1, static=static))


@pytest.fixture
def configured_pair(redis_server: str, tmp_path: Path) -> Iterator[dict[int, ThreadedBroker]]:
    configs = [f"{name}={value}" for name, _, value in CONFIGS]
    with threaded_cluster(
        root=tmp_path, redis_url=redis_server, broker_ids=(1, 2), configs=configs
    ) as brokers:
        yield brokers


def test_leader_receives_the_configured_fetch(configured_pair: dict[int, ThreadedBroker]) -> None:
    seen: list[Any] = []
    for broker in configured_pair.values():
        original = broker.broker.handlers[ApiKey.FETCH]

        async def recording(ctx: Any, request: Any, _original: Any = original) -> Any:
            if request.body.replica_id >= 0:
                seen.append(request.body)
            return await _original(ctx, request)

        broker.broker.handlers[ApiKey.FETCH] = recording
    admin = AdminClient({"bootstrap.servers": configured_pair[1].bootstrap})
    admin.create_topics([NewTopic("fetch-configs", 1, 2)])["fetch-configs"].result(15)

    deadline = time.monotonic() + 15
    while not seen and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen, "no follower fetch reached a leader"
    request = seen[0]
    assert request.max_wait == timedelta(milliseconds=123)
    assert request.min_bytes == 7
    assert request.max_bytes == 654321
    assert {p.partition_max_bytes for t in request.topics for p in t.partitions} == {54321}


# -- num.replica.fetchers --------------------------------------------------------------------
def test_fetcher_id_is_kafkas_hash() -> None:
    # Java: "hello".hashCode() == 99162322; 31 * 99162322 + 0 wraps to -1220935314.
    assert fetcher_id("hello", 0, 2**31 - 1) == 1220935314
    # Non-ASCII topics hash their UTF-16 code units, as Java does ("é" is 0xE9).
    assert fetcher_id("é", 1, 2**31 - 1) == 31 * 0xE9 + 1
    assert {fetcher_id("t", p, 1) for p in range(10)} == {0}
    assert {fetcher_id("t", p, 3) for p in range(10)} == {0, 1, 2}


@pytest.fixture
def partitions(tmp_path: Path) -> Iterator[list[Partition]]:
    made = []
    for index in range(6):
        log = Log.open(tmp_path / f"t-{index}", config=LogConfig(), time_ms=FakeClock())
        partition = Partition(broker_id=2, topic="t", index=index, topic_id="x", log=log)
        partition.leader_id = 1
        made.append(partition)
    yield made
    for partition in made:
        partition.log.close()


async def test_partitions_spread_over_num_replica_fetchers_and_resize_moves_them(
    partitions: list[Partition],
) -> None:
    manager = ReplicaFetcherManager(
        broker_id=2, endpoint=lambda _: None, time_ms=FakeClock(), num_fetchers=3
    )
    try:
        for partition in partitions:
            manager.follow(partition)
        assert manager.assignment() == {
            (1, n): {("t", p.index) for p in partitions if fetcher_id("t", p.index, 3) == n}
            for n in range(3)
        }
        manager.resize(1)
        assert manager.assignment() == {(1, 0): {("t", p.index) for p in partitions}}
        # The emptied fetchers were stopped, not left holding connections.
        assert len(manager._fetchers) == 1
    finally:
        await manager.stop()


def test_num_replica_fetchers_must_be_positive() -> None:
    with pytest.raises(InvalidConfigError, match=r"num\.replica\.fetchers"):
        BrokerConfig(broker_id=1, static={"num.replica.fetchers": "0"})


def test_each_fetcher_has_its_own_connection_and_the_count_changes_dynamically(
    redis_server: str, tmp_path: Path
) -> None:
    with threaded_cluster(
        root=tmp_path,
        redis_url=redis_server,
        broker_ids=(1, 2),
        configs=["num.replica.fetchers=3"],
    ) as brokers:
        connections: dict[int, set[int]] = {1: set(), 2: set()}  # leader -> follower conns
        for leader_id, broker in brokers.items():
            original = broker.broker.handlers[ApiKey.FETCH]

            async def recording(
                ctx: Any, request: Any, _original: Any = original, _leader: int = leader_id
            ) -> Any:
                if request.body.replica_id >= 0:
                    connections[_leader].add(id(ctx))
                return await _original(ctx, request)

            broker.broker.handlers[ApiKey.FETCH] = recording
        admin = AdminClient({"bootstrap.servers": brokers[1].bootstrap})
        admin.create_topics([NewTopic("fetchers", 8, 2)])["fetchers"].result(15)

        def assignments() -> dict[tuple[int, int], set[tuple[str, int]]]:
            return {
                key: keys
                for broker in brokers.values()
                for key, keys in broker.run(_assignment(broker)).items()
            }

        deadline = time.monotonic() + 15
        while sum(map(len, assignments().values())) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        # Each leader's partitions, spread by Kafka's hash over the follower's fetchers.
        expected: dict[int, int] = {}
        for leader, _ in assignments():
            expected[leader] = expected.get(leader, 0) + 1
        assert sum(expected.values()) > 2  # some leader is fetched from over several fetchers
        while time.monotonic() < deadline and any(
            len(connections[leader]) < count for leader, count in expected.items()
        ):
            time.sleep(0.05)
        assert {leader: len(connections[leader]) for leader in expected} == expected

        # num.replica.fetchers is dynamic: broker 2 goes back to one fetcher per leader.
        change = ConfigResource(
            "broker",
            "2",
            incremental_configs=[
                ConfigEntry(
                    "num.replica.fetchers", "1", incremental_operation=AlterConfigOpType.SET
                )
            ],
        )
        admin.incremental_alter_configs([change])[change].result(15)
        followed = set().union(*brokers[2].run(_assignment(brokers[2])).values())
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (
            set(brokers[2].run(_assignment(brokers[2]))) != {(1, 0)}
        ):
            time.sleep(0.05)
        assert brokers[2].run(_assignment(brokers[2])) == {(1, 0): followed}


async def _assignment(broker: ThreadedBroker) -> dict[tuple[int, int], set[tuple[str, int]]]:
    """The follower's fetcher assignment, read on the broker's own loop."""
    return broker.broker.fetchers.assignment()


# -- follower.replication.throttled.* --------------------------------------------------------
def _throttle(
    replicas: str, rate: int | None, now: list[float]
) -> tuple[FollowerThrottle, BrokerConfig]:
    dynamic = {} if rate is None else {"follower.replication.throttled.rate": str(rate)}
    config = BrokerConfig(broker_id=2, dynamic_broker=dynamic)
    topic = effective_topic_config(config, {"follower.replication.throttled.replicas": replicas})
    throttle = FollowerThrottle(
        broker_id=2, topic_config=lambda _: topic, config=lambda: config, now_s=lambda: now[0]
    )
    return throttle, config


def test_follower_throttle_applies_to_listed_replicas_outside_the_isr(
    followed: _Followed,
) -> None:
    partition = followed.partition
    partition.isr = (1,)
    assert _throttle("0:2", 100, [0.0])[0].throttled(partition)
    assert _throttle("*", 100, [0.0])[0].throttled(partition)
    assert not _throttle("0:3", 100, [0.0])[0].throttled(partition)  # another broker's
    assert not _throttle("", 100, [0.0])[0].throttled(partition)
    partition.isr = (1, 2)  # in sync: never slowed
    assert not _throttle("*", 100, [0.0])[0].throttled(partition)


def test_throttled_partitions_wait_while_the_rate_is_spent(tmp_path: Path) -> None:
    now = [0.0]
    throttle, _ = _throttle("0:2", 1_000, now)
    logs = [Log.open(tmp_path / f"t-{i}", config=LogConfig(), time_ms=FakeClock()) for i in (0, 1)]
    try:
        items = []
        for index, log in enumerate(logs):
            partition = Partition(broker_id=2, topic="t", index=index, topic_id="x", log=log)
            partition.isr = (1,)
            items.append(_Followed(partition=partition, leader_epoch=0, truncated=True))
        fetcher = LeaderFetcher(
            leader_id=1,
            broker_id=2,
            endpoint=lambda _: None,
            time_ms=FakeClock(),
            throttle=throttle,
        )
        assert fetcher.fetchable(items) == items  # budget left: everything is fetched
        throttle.record(1_500)  # a catch-up fetch took more than a second's worth
        assert fetcher.fetchable(items) == items[1:]  # partition 1 is not listed
        now[0] += 1.0  # a second refills 1000 bytes: 500 left, fetching resumes
        assert fetcher.fetchable(items) == items
    finally:
        for log in logs:
            log.close()


def test_no_follower_rate_means_no_limit(followed: _Followed) -> None:
    throttle, _ = _throttle("*", None, [0.0])
    followed.partition.isr = (1,)
    throttle.record(10**12)
    fetcher = LeaderFetcher(
        leader_id=1, broker_id=2, endpoint=lambda _: None, time_ms=FakeClock(), throttle=throttle
    )
    assert fetcher.fetchable([followed]) == [followed]

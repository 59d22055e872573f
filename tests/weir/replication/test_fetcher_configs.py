"""The follower fetcher obeys ``replica.fetch.*`` and ``replica.socket.timeout.ms``.

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
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from tests.weir.inprocess import ThreadedBroker, threaded_cluster
from tests.weir.log.conftest import FakeClock
from weir.config import BrokerConfig, InvalidConfigError, check_broker_constraints
from weir.log.log import Log, LogConfig
from weir.partition import Partition
from weir.protocol.api_keys import ApiKey
from weir.replication.fetcher import FetchSettings, LeaderFetcher, _Followed, fetch_request

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


def test_refused_partition_waits_the_configured_backoff(followed: _Followed) -> None:
    clock = FakeClock()
    fetcher = LeaderFetcher(
        leader_id=1,
        broker_id=2,
        endpoint=lambda _: None,
        time_ms=clock,
        settings=FetchSettings(backoff_ms=250),
    )
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

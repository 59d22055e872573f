"""The broker's parts on their own: pure inputs, fakes for what they call, a fake clock.

``MetadataView`` is fed ``ClusterImage`` values; ``ControllerLease`` a fake store; the
``IsrManager`` fake lease/controller/channel and a partition stand-in; the replication
throttle a fake replica manager. The handler registry is checked for its
binding rule (a handler gets exactly the parts its signature names), and the rules handlers
share (leader/epoch check, per-partition answers, grouping by topic, the controller gate) on
their own.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from tests.weir.log.conftest import FakeClock, append, make_batch
from weir.config import BrokerConfig, effective_topic_config
from weir.controller_lease import ControllerLease
from weir.handlers import bind
from weir.handlers._authz import Access
from weir.log.log import Log
from weir.metadata.image import (
    BrokerImage,
    ClusterImage,
    ListenerEndpoint,
    PartitionImage,
    TopicImage,
)
from weir.metadata.image import (
    ControllerLease as LeaseImage,
)
from weir.metadata_view import MetadataView, log_config_of
from weir.replication.isr_manager import IsrManager
from weir.replication.throttle import ReplicationThrottle

TOPIC_ID = uuid.UUID(int=7)


def image(*, incarnation: str = "a", leader: int = 1, controller: int | None = 2) -> ClusterImage:
    topic = TopicImage(
        name="t",
        topic_id=TOPIC_ID,
        partitions={
            0: PartitionImage(partition=0, replicas=(1, 2), isr=(1, 2), leader=leader),
            1: PartitionImage(partition=1, replicas=(2, 3), isr=(2,), leader=2),
        },
    )
    brokers = {
        i: BrokerImage(
            broker_id=i,
            epoch=1,
            host=f"b{i}",
            port=9092,
            endpoints=(
                ListenerEndpoint("PLAINTEXT", f"b{i}", 9092, "PLAINTEXT"),
                ListenerEndpoint("INTERNAL", f"i{i}", 9093, "PLAINTEXT"),
            ),
        )
        for i in (1, 2, 3)
    }
    return ClusterImage(
        topics={"t": topic},
        topics_by_id={TOPIC_ID: topic},
        registrations=brokers,
        live_broker_ids=frozenset({1, 2}),
        controller=LeaseImage(broker_id=controller, epoch=4) if controller else None,
        topic_configs={"t": {"retention.ms": "1000"}},
        broker_configs={"1": {"min.insync.replicas": "2"}},
        incarnation=incarnation,
    )


def view(*, controller: bool = False) -> MetadataView:
    return MetadataView(
        broker_id=1,
        cluster_id="c",
        config=BrokerConfig(broker_id=1),
        inter_broker_listener="INTERNAL",
        own_endpoints=lambda: (ListenerEndpoint("PLAINTEXT", "me", 1234, "PLAINTEXT"),),
        is_controller=lambda: controller,
    )


@dataclass
class FakePartition:
    topic: str = "t"
    index: int = 0
    topic_id: str = str(TOPIC_ID)
    is_leader: bool = True
    isr: tuple[int, ...] = (1,)
    replicas: tuple[int, ...] = (1, 2, 3)
    leader_epoch: int = 5
    partition_epoch: int = 9
    isr_change_pending: bool = False
    leader_state: Any = None


# -- MetadataView ---------------------------------------------------------------------------
def test_view_places_only_this_brokers_replicas_and_marks_offline_ones() -> None:
    v = view()
    change = v.apply(image())
    assert [(a.topic, a.index, a.leader) for a in change.placed] == [("t", 0, 1)]
    assert change.live_topics == frozenset({"t"})
    topic = v.topic_views()["t"]
    assert v.topic_view_by_id(TOPIC_ID) is topic
    assert topic.partitions[1].offline_replicas == (3,)


def test_view_applies_dynamic_configs_and_forgets_cached_topic_configs() -> None:
    v = view()
    v.apply(image())
    assert v.config.get("min.insync.replicas") == 2
    assert v.topic_config("t").retention_ms == 1000
    assert v.log_config("t").segment_bytes == v.topic_config("t").segment_bytes
    changed = image()
    changed = ClusterImage(**{**_fields(changed), "topic_configs": {"t": {"retention.ms": "5"}}})
    v.apply(changed)
    assert v.topic_config("t").retention_ms == 5


def test_log_config_takes_file_delete_delay_from_the_topic_then_the_broker() -> None:
    broker = BrokerConfig(broker_id=1, static={"log.segment.delete.delay.ms": "7000"})
    assert log_config_of(effective_topic_config(broker, {})).file_delete_delay_ms == 7000
    topic = effective_topic_config(broker, {"file.delete.delay.ms": "1234"})
    assert log_config_of(topic).file_delete_delay_ms == 1234


def test_log_config_takes_the_flush_policy_from_the_topic_then_the_broker() -> None:
    broker = BrokerConfig(
        broker_id=1,
        static={"log.flush.interval.messages": "10", "log.flush.scheduler.interval.ms": "900"},
    )
    default = log_config_of(effective_topic_config(broker, {}))
    # flush.ms falls back to log.flush.interval.ms, then to the flusher's own interval.
    assert (default.flush_messages, default.flush_ms) == (10, 900)
    topic = effective_topic_config(broker, {"flush.messages": "2", "flush.ms": "300"})
    assert (log_config_of(topic).flush_messages, log_config_of(topic).flush_ms) == (2, 300)


@pytest.mark.parametrize(
    ("overrides", "roll_ms"),
    [
        ({"cleanup.policy": "compact", "max.compaction.lag.ms": "5000"}, 5000),
        ({"cleanup.policy": "compact,delete", "max.compaction.lag.ms": "5000"}, 5000),
        ({"cleanup.policy": "delete", "max.compaction.lag.ms": "5000"}, 60_000),
        ({"cleanup.policy": "compact", "max.compaction.lag.ms": "90000"}, 60_000),
        ({"cleanup.policy": "compact"}, 60_000),  # the default, Long.MAX: segment.ms
    ],
)
def test_a_compacted_log_rolls_by_max_compaction_lag_too(
    tmp_path: Path, overrides: dict[str, str], roll_ms: int
) -> None:
    """Kafka's ``LogConfig.maxSegmentMs``: the active segment, which the cleaner never
    touches, rolls once it is ``max.compaction.lag.ms`` old on a compacted topic."""
    topic = effective_topic_config(BrokerConfig(broker_id=1), {"segment.ms": "60000", **overrides})
    config = log_config_of(topic)
    assert config.segment_ms == roll_ms
    clock = FakeClock()
    log = Log.open(tmp_path / "t-0", config=config, time_ms=clock)
    try:
        append(log, make_batch(base_timestamp=clock.now))
        clock.advance(5001)
        append(log, make_batch(base_timestamp=clock.now))
        assert len(log.segments) == (2 if roll_ms == 5000 else 1)
    finally:
        log.close()


def _fields(img: ClusterImage) -> dict[str, Any]:
    return {name: getattr(img, name) for name in img.__dataclass_fields__}


def test_view_reports_a_store_reset_only_when_the_incarnation_changes() -> None:
    v = view()
    assert not v.apply(image(incarnation="a")).store_reset
    assert not v.apply(image(incarnation="a")).store_reset
    assert v.apply(image(incarnation="b")).store_reset


def test_leader_error_follows_metadata_and_the_local_replica() -> None:
    v = view()
    v.apply(image())
    assert v.leader_error("t", 0, FakePartition()) is ErrorCode.none  # type: ignore[arg-type]
    assert v.leader_error("t", 0, None) is ErrorCode.not_leader_or_follower
    follower = FakePartition(is_leader=False)
    assert v.leader_error("t", 0, follower) is ErrorCode.not_leader_or_follower  # type: ignore[arg-type]
    assert v.leader_error("t", 1, None) is ErrorCode.not_leader_or_follower
    assert v.leader_error("t", 7, None) is ErrorCode.unknown_topic_or_partition
    assert v.leader_error("nope", 0, None) is ErrorCode.unknown_topic_or_partition
    v.apply(image(leader=-1))
    assert v.leader_error("t", 0, None) is ErrorCode.leader_not_available


def test_controller_id_prefers_this_brokers_own_lease() -> None:
    v = view()
    v.apply(image(controller=2))
    assert v.controller_id() == 2
    v.apply(image(controller=None))
    assert v.controller_id() == -1
    mine = view(controller=True)
    mine.apply(image(controller=2))
    assert mine.controller_id() == 1


def test_endpoints_by_listener_include_this_broker_before_it_is_registered() -> None:
    v = view()
    v.apply(image())
    assert v.endpoint_of(2) == ("i2", 9093)
    assert v.endpoint_of(9) is None
    assert v.listener_endpoints("PLAINTEXT") == {1: ("me", 1234), 2: ("b2", 9092), 3: ("b3", 9092)}
    assert [b.broker_id for b in v.live_brokers()] == [1, 2]


async def test_wait_for_metadata_wakes_on_announce() -> None:
    v = view()

    async def later() -> None:
        await asyncio.sleep(0.01)
        v.apply(image())
        v.announce()

    task = asyncio.create_task(later())
    assert await v.wait_for_metadata(lambda: "t" in v.topic_views(), 2.0)
    await task
    assert not await v.wait_for_metadata(lambda: "other" in v.topic_views(), 0.01)


async def test_fresh_live_brokers_fall_back_to_the_image() -> None:
    from weir.metadata.errors import MetadataUnavailableError

    async def unavailable() -> list[BrokerImage]:
        raise MetadataUnavailableError("down")

    v = MetadataView(
        broker_id=1,
        cluster_id="c",
        config=BrokerConfig(broker_id=1),
        inter_broker_listener="PLAINTEXT",
        own_endpoints=lambda: (),
        is_controller=lambda: False,
        fresh_brokers=unavailable,
    )
    v.apply(image())
    assert [b.broker_id for b in await v.fresh_live_brokers()] == [1, 2]


# -- ControllerLease ------------------------------------------------------------------------
@dataclass
class FakeStore:
    acquire: int | None = 3
    renew: bool = True
    fail: bool = False
    resigned: list[tuple[int, int]] = field(default_factory=list)
    trimmed: list[int] = field(default_factory=list)

    async def acquire_controller(self, broker_id: int, lease_ms: int) -> int | None:
        if self.fail:
            raise OSError("redis away")
        return self.acquire

    async def renew_controller(self, broker_id: int, epoch: int, lease_ms: int) -> bool:
        if self.fail:
            raise OSError("redis away")
        return self.renew

    async def resign_controller(self, broker_id: int, epoch: int) -> None:
        self.resigned.append((broker_id, epoch))

    async def trim_log(self, *, older_than_ms: int) -> int:
        self.trimmed.append(older_than_ms)
        return 0


def lease(store: FakeStore, clock: list[float] | None = None) -> ControllerLease:
    now = clock if clock is not None else [0.0]
    return ControllerLease(
        store=store,  # type: ignore[arg-type]
        broker_id=1,
        config=lambda: BrokerConfig(broker_id=1),
        monotonic=lambda: now[0],
        wall_ms=lambda: 1_000_000,
    )


async def test_lease_is_taken_renewed_and_lost() -> None:
    store = FakeStore()
    held = lease(store)
    await held.try_acquire()
    assert (held.is_controller, held.epoch) == (True, 3)
    await held.try_acquire()
    assert held.epoch == 3
    store.renew = False
    await held.try_acquire()
    assert held.epoch is None


async def test_lease_outlives_a_redis_failover_but_not_its_own_expiry() -> None:
    """Redis away: the holder keeps its epoch while the lease it last renewed runs (its
    writes stay fenced in Redis), renews on the next primary, and gives it up after."""
    store = FakeStore()
    clock = [0.0]
    held = lease(store, clock)
    await held.try_acquire()
    lease_s = int(BrokerConfig(broker_id=1).get("broker.session.timeout.ms")) / 1000
    store.fail = True
    clock[0] = lease_s - 0.5
    await held.try_acquire()
    assert held.epoch == 3
    store.fail = False
    await held.try_acquire()  # a new primary answers: renewed, same epoch
    assert held.epoch == 3
    store.fail = True
    clock[0] += lease_s
    await held.try_acquire()
    assert not held.is_controller


async def test_resign_only_when_held_and_trim_uses_the_retention() -> None:
    store = FakeStore(acquire=None)
    held = lease(store)
    await held.try_acquire()
    await held.resign()
    assert store.resigned == []
    store.acquire = 8
    await held.try_acquire()
    await held.resign()
    assert store.resigned == [(1, 8)]
    await held._trim_metadata_log()
    retention = int(BrokerConfig(broker_id=1).get("metadata.max.retention.ms"))
    assert store.trimmed == [1_000_000 - retention]


# -- IsrManager -----------------------------------------------------------------------------
@dataclass
class FakeLeaderState:
    proposed: frozenset[int]
    joining: frozenset[int] = frozenset()

    def proposed_isr(self, *, now_ms: int, lag_max_ms: int) -> frozenset[int]:
        return self.proposed

    def caught_up_outside_isr(self, *, now_ms: int, lag_max_ms: int) -> frozenset[int]:
        return self.joining


@dataclass
class FakeReplicas:
    parts: list[Any]

    def partitions(self) -> list[Any]:
        return self.parts

    def get(self, topic: str, index: int) -> Any:
        return next((p for p in self.parts if (p.topic, p.index) == (topic, index)), None)


@dataclass
class Recorder:
    calls: list[Any] = field(default_factory=list)
    error: ErrorCode = ErrorCode.none

    async def alter_isr(self, epoch: int, topic: str, index: int, request: Any) -> Any:
        self.calls.append(("controller", epoch, request.new_isr))
        return self.error, None

    async def alter_partition(self, partition: Any, request: Any) -> ErrorCode:
        self.calls.append(("channel", request.new_isr))
        return self.error


@dataclass
class FakeLeaseState:
    epoch: int | None = None


def isr_manager(partitions: list[Any], epoch: int | None, sink: Recorder) -> IsrManager:
    return IsrManager(
        broker_id=1,
        replicas=FakeReplicas(partitions),  # type: ignore[arg-type]
        config=lambda: BrokerConfig(broker_id=1),
        time_ms=lambda: 0,
        lease=FakeLeaseState(epoch),  # type: ignore[arg-type]
        controller=sink,  # type: ignore[arg-type]
        channel=sink,  # type: ignore[arg-type]
    )


async def test_shrink_goes_to_the_local_controller_while_holding_the_lease(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("weir.replication.isr_manager.ACCEPTED_TIMEOUT_S", 0)
    partition = FakePartition(isr=(1, 2, 3), leader_state=FakeLeaderState(frozenset({1, 3})))
    sink = Recorder()
    manager = isr_manager([partition], 6, sink)
    manager.check_shrink(lag_max_ms=100)
    assert partition.isr_change_pending
    manager.check_shrink(lag_max_ms=100)  # pending: no second proposal
    await asyncio.sleep(0.01)
    assert sink.calls == [("controller", 6, (1, 3))]
    assert not partition.isr_change_pending


async def test_expand_goes_over_the_channel_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("weir.replication.isr_manager.REJECTED_RETRY_S", 0)
    state = FakeLeaderState(frozenset({1}), joining=frozenset({3}))
    partition = FakePartition(isr=(1,), leader_state=state)
    sink = Recorder(error=ErrorCode.fenced_leader_epoch)
    manager = isr_manager([partition], None, sink)
    manager.maybe_expand(partition)  # type: ignore[arg-type]
    await asyncio.sleep(0.01)
    # Ordered as the replicas are; rejected, so a later check may try again.
    assert sink.calls == [("channel", (1, 3))]
    assert not partition.isr_change_pending


def test_nothing_is_proposed_for_followers_or_an_isr_in_sync() -> None:
    sink = Recorder()
    in_sync = FakePartition(isr=(1, 2), leader_state=FakeLeaderState(frozenset({1, 2})))
    follower = FakePartition(index=1, is_leader=False)
    isr_manager([in_sync, follower], None, sink).check_shrink(lag_max_ms=100)
    assert not in_sync.isr_change_pending and not follower.isr_change_pending


# -- ReplicationThrottle (the Checkpointer: tests/weir/test_checkpointer.py) -------------
def test_throttle_applies_to_listed_partitions_and_followers_outside_the_isr() -> None:
    from weir.config import effective_topic_config

    config = BrokerConfig(broker_id=1, dynamic_broker={"leader.replication.throttled.rate": "100"})
    topic_config = effective_topic_config(config, {"leader.replication.throttled.replicas": "0:1"})
    now = [0.0]
    throttle = ReplicationThrottle(
        broker_id=1,
        replicas=FakeReplicas([FakePartition(isr=(1, 2))]),  # type: ignore[arg-type]
        topic_config=lambda topic: topic_config,
        config=lambda: config,
        now_s=lambda: now[0],
    )
    assert throttle.throttled("t", 0, 3)
    assert not throttle.throttled("t", 0, 2)  # in sync
    assert not throttle.throttled("t", 5, 3)  # not here
    before = throttle.remaining()
    throttle.record(80)
    assert throttle.remaining() < before


# -- the handler registry -------------------------------------------------------------------
async def test_bind_fills_exactly_the_named_parts() -> None:
    async def handler(ctx: Any, request: Any, *, access: Access, metadata: Any) -> Any:
        return access, metadata

    bound = bind(handler, {"access": Access(), "metadata": "view", "replicas": "unused"})
    assert await bound(None, None) == (Access(), "view")


def test_bind_refuses_a_handler_that_names_an_unknown_part() -> None:
    async def handler(ctx: Any, request: Any, *, broker: Any) -> Any:
        return broker

    with pytest.raises(TypeError, match="unknown parts"):
        bind(handler, {"access": Access()})


def test_access_without_an_authorizer_allows_everything() -> None:
    from weir.security.acl import AclOperation, ResourceType

    access = Access()
    assert not access.enabled
    assert access.authorize(None, AclOperation.WRITE, ResourceType.TOPIC, "t")  # type: ignore[arg-type]
    assert access.may_create_topic(None, "t")  # type: ignore[arg-type]


# -- the shared handler rules ---------------------------------------------------------------
@dataclass
class LocalReplicas:
    local: dict[tuple[str, int], Any] = field(default_factory=dict)
    offline: set[tuple[str, int]] = field(default_factory=set)

    def get(self, topic: str, index: int) -> Any:
        return self.local.get((topic, index))

    def is_offline(self, topic: str, index: int) -> bool:
        return (topic, index) in self.offline


def test_leaders_fence_a_client_whose_leader_epoch_differs() -> None:
    from weir.handlers._leader import Leaders

    v = view()
    v.apply(image())
    replica = FakePartition(leader_epoch=5)
    local = LocalReplicas({("t", 0): replica})
    leaders = Leaders(v, local)  # type: ignore[arg-type]
    assert leaders.led("t", 0) == (ErrorCode.none, replica)
    assert leaders.led("t", 0, 5) == (ErrorCode.none, replica)
    assert leaders.led("t", 0, 4) == (ErrorCode.fenced_leader_epoch, None)
    assert leaders.led("t", 0, 6) == (ErrorCode.unknown_leader_epoch, None)
    assert leaders.led("t", 1, 5) == (ErrorCode.not_leader_or_follower, None)
    # Offline here (its disk failed it): KAFKA_STORAGE_ERROR, as Kafka answers.
    del local.local[("t", 0)]
    local.offline.add(("t", 0))
    assert leaders.led("t", 0, 5) == (ErrorCode.kafka_storage_error, None)


def test_per_partition_denies_a_whole_topic_without_reading_it() -> None:
    from weir.handlers._build import per_partition

    @dataclass
    class Part:
        partition_index: int
        error_code: Any = None

    @dataclass
    class Topic:
        name: str
        partitions: tuple[Any, ...] = ()

    asked: list[tuple[str, int]] = []

    def answer(topic: str, p: Any) -> dict[str, Any]:
        asked.append((topic, p.partition_index))
        return {"error_code": ErrorCode.none}

    request = [Topic("ok", (Part(0), Part(1))), Topic("no", (Part(0),))]
    result = per_partition(
        request,
        topic_cls=Topic,
        partition_cls=Part,
        allowed=lambda name: name == "ok",
        answer=answer,
        denied={"error_code": ErrorCode.topic_authorization_failed},
    )
    assert asked == [("ok", 0), ("ok", 1)]
    assert result == (
        Topic("ok", (Part(0, ErrorCode.none), Part(1, ErrorCode.none))),
        Topic("no", (Part(0, ErrorCode.topic_authorization_failed),)),
    )


def test_by_topic_groups_in_first_seen_order() -> None:
    from weir.handlers._build import by_topic

    rows = [("b", 1), ("a", 2), ("b", 3)]
    assert by_topic(rows, lambda name, parts: (name, parts)) == (("b", (1, 3)), ("a", (2,)))


async def test_controller_requests_need_the_cluster_operation_and_the_lease() -> None:
    from weir.handlers._controller import controller_epoch
    from weir.security.acl import AclOperation

    @dataclass
    class Epoch:
        epoch: int | None

    @dataclass
    class Deny:
        def authorize_connection(self, *_: Any) -> bool:
            return False

    alter = AclOperation.ALTER
    assert controller_epoch(None, Access(), Epoch(4), alter) == (ErrorCode.none, 4)  # type: ignore[arg-type]
    assert controller_epoch(None, Access(), Epoch(None), alter) == (  # type: ignore[arg-type]
        ErrorCode.not_controller,
        None,
    )
    denied = Access(Deny())  # type: ignore[arg-type]
    assert controller_epoch(None, denied, Epoch(4), alter) == (  # type: ignore[arg-type]
        ErrorCode.cluster_authorization_failed,
        None,
    )

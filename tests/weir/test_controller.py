"""The controller's decisions as pure functions of the metadata image (no Redis).

``elect_leader`` / ``partition_changes_for`` (broker liveness), ``preferred_leader_change``
and ``validate_isr_change`` (AlterPartition), plus the asyncio ``Controller`` driven with a
fake store to check what it writes, with which controller epoch, and how it reports errors.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from weir.controller import (
    Controller,
    Grace,
    IsrChangeError,
    IsrChangeRequest,
    elect_leader,
    imbalanced_partitions,
    partition_changes_for,
    preferred_leader_change,
    validate_isr_change,
)
from weir.metadata.errors import FencedError
from weir.metadata.image import (
    BrokerImage,
    ClusterImage,
    ControllerLease,
    PartitionImage,
    TopicImage,
)
from weir.metadata.store import PartitionChange, StalePartitionEpochError

TOPIC_ID = uuid.UUID(int=7)


def part(
    replicas: Iterable[int],
    isr: Iterable[int],
    leader: int,
    *,
    index: int = 0,
    leader_epoch: int = 3,
    partition_epoch: int = 5,
    adding: Iterable[int] = (),
    removing: Iterable[int] = (),
) -> PartitionImage:
    return PartitionImage(
        partition=index,
        replicas=tuple(replicas),
        isr=tuple(isr),
        leader=leader,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        adding_replicas=tuple(adding),
        removing_replicas=tuple(removing),
    )


def image(
    topics: Mapping[str, Iterable[PartitionImage]],
    live: Iterable[int],
    registered: Iterable[int] = (1, 2, 3, 4),
) -> ClusterImage:
    topic_images = {
        name: TopicImage(
            name,
            uuid.uuid5(TOPIC_ID, name),
            MappingProxyType({p.partition: p for p in parts}),
        )
        for name, parts in topics.items()
    }
    return ClusterImage(
        topics=MappingProxyType(topic_images),
        topics_by_id=MappingProxyType({t.topic_id: t for t in topic_images.values()}),
        registrations=MappingProxyType(
            {
                i: BrokerImage(broker_id=i, epoch=i, host="127.0.0.1", port=9000 + i)
                for i in registered
            }
        ),
        live_broker_ids=frozenset(live),
        controller=ControllerLease(1, 1),
    )


def never(_: str) -> bool:
    return False


def always(_: str) -> bool:
    return True


# Grace -----------------------------------------------------------------------------------------
def grace(before: set[int], reconnected_at: float | None, now: float) -> Grace:
    return Grace(
        live_before_outage=before, reconnected_at=reconnected_at, now=now, session_timeout_s=9.0
    )


def test_brokers_alive_before_a_redis_outage_keep_their_leadership_through_the_grace() -> None:
    """Leases expired together during a failover: for one session timeout after Redis is
    back, the brokers alive before it still count, so nothing moves; after, a broker that
    did not renew is dead and its partitions move."""
    after_outage = image({"t": [part([2, 3], [2, 3], 2)]}, live=[3])
    graced = grace({2, 3}, 100.0, 108.9).apply(after_outage)
    assert graced.live_broker_ids == {2, 3}
    assert partition_changes_for(graced, unclean_for=never) == {}
    over = grace({2, 3}, 100.0, 109.0).apply(after_outage)
    assert over is after_outage
    [change] = partition_changes_for(over, unclean_for=never)["t"]
    assert (change.leader, change.isr) == (3, (3,))


def test_grace_never_revives_a_broker_that_deregistered_or_was_dead_before() -> None:
    after_outage = image({"t": [part([1, 2], [1, 2], 1)]}, live=[1], registered=[1, 3])
    graced = grace({1, 2}, 0.0, 1.0).apply(after_outage)
    assert graced.live_broker_ids == {1}  # 2 deregistered; 3 was not alive before
    never_down = grace({1, 2}, None, 1.0).apply(after_outage)
    assert never_down is after_outage


# elect_leader --------------------------------------------------------------------------------
def test_elects_first_live_in_sync_replica_in_replica_order() -> None:
    partition = part(replicas=(1, 2, 3), isr=(3, 2, 1), leader=1)
    assert elect_leader(partition, live={2, 3}, unclean=False) == (2, (3, 2))


def test_election_drops_dead_brokers_from_the_isr() -> None:
    partition = part(replicas=(1, 2, 3, 4), isr=(1, 2, 3, 4), leader=1)
    leader, isr = elect_leader(partition, live={3, 4}, unclean=False)  # type: ignore[misc]
    assert leader == 3
    assert set(isr) == {3, 4}


def test_preferred_replica_wins_when_in_sync_and_live() -> None:
    partition = part(replicas=(2, 1, 3), isr=(1, 2, 3), leader=-1)
    assert elect_leader(partition, live={1, 2, 3}, unclean=False) == (2, (1, 2, 3))


def test_out_of_sync_live_replica_is_not_elected_cleanly() -> None:
    partition = part(replicas=(1, 2, 3), isr=(1,), leader=1)
    # Offline: leader -1, and the ISR keeps its last member so only it may come back.
    assert elect_leader(partition, live={2, 3}, unclean=False) == (-1, (1,))


def test_offline_partition_without_eligible_replica_is_left_alone() -> None:
    partition = part(replicas=(1, 2, 3), isr=(1,), leader=-1)
    assert elect_leader(partition, live={2, 3}, unclean=False) is None


def test_offline_partition_comes_back_when_its_last_isr_member_returns() -> None:
    partition = part(replicas=(1, 2, 3), isr=(1,), leader=-1)
    assert elect_leader(partition, live={1, 2, 3}, unclean=False) == (1, (1,))


def test_unclean_election_picks_first_live_replica_alone_in_the_isr() -> None:
    partition = part(replicas=(1, 2, 3), isr=(1,), leader=1)
    assert elect_leader(partition, live={3, 2}, unclean=True) == (2, (2,))


def test_unclean_prefers_a_live_in_sync_replica() -> None:
    partition = part(replicas=(1, 2, 3), isr=(1, 3), leader=1)
    assert elect_leader(partition, live={2, 3}, unclean=True) == (3, (3,))


def test_unclean_with_nobody_alive_goes_offline() -> None:
    partition = part(replicas=(1, 2, 3), isr=(1,), leader=1)
    assert elect_leader(partition, live={4}, unclean=True) == (-1, (1,))


def test_live_broker_outside_the_replica_set_is_never_elected() -> None:
    partition = part(replicas=(1, 2), isr=(1, 2), leader=1)
    assert elect_leader(partition, live={3, 4}, unclean=True) == (-1, (1, 2))


# partition_changes_for -----------------------------------------------------------------------
def test_healthy_cluster_needs_no_change() -> None:
    img = image({"t": [part((1, 2, 3), (1, 2, 3), 1)]}, live={1, 2, 3})
    assert partition_changes_for(img, unclean_for=never) == {}


def test_dead_leader_gets_a_successor_fenced_by_partition_epoch() -> None:
    img = image(
        {"t": [part((1, 2, 3), (1, 2, 3), 1, partition_epoch=9)]},
        live={2, 3},
    )
    changes = partition_changes_for(img, unclean_for=never)
    assert changes == {
        "t": [PartitionChange(partition=0, leader=2, isr=(2, 3), expected_partition_epoch=9)]
    }


def test_a_leader_reporting_its_partition_offline_loses_it_to_the_isr() -> None:
    """Broker 1's disk failed ``t-0`` (reported in its lease): for that partition alone it
    counts as dead; ``t-1``, also led by 1, keeps its leader."""
    img = image(
        {
            "t": [
                part((1, 2, 3), (1, 2, 3), 1, partition_epoch=9),
                part((1, 2, 3), (1, 2, 3), 1, index=1),
            ]
        },
        live={1, 2, 3},
    ).with_liveness({1, 2, 3}, ControllerLease(1, 1), {1: frozenset({("t", 0)})})
    assert partition_changes_for(img, unclean_for=never) == {
        "t": [PartitionChange(partition=0, leader=2, isr=(2, 3), expected_partition_epoch=9)]
    }


def test_a_follower_reporting_its_partition_offline_leaves_the_isr() -> None:
    img = image({"t": [part((1, 2, 3), (1, 2, 3), 1, partition_epoch=4)]}, live={1, 2, 3})
    img = img.with_liveness({1, 2, 3}, ControllerLease(1, 1), {3: frozenset({("t", 0)})})
    (change,) = partition_changes_for(img, unclean_for=never)["t"]
    assert change.leader is None and change.isr == (1, 2)


def test_an_offline_report_cleared_by_a_restart_lets_the_replica_lead_again() -> None:
    """The only in-sync replica reported it offline (leader -1, ISR kept); restarted, its
    lease no longer lists it and it is elected again."""
    img = image({"t": [part((1, 2), (1,), -1, partition_epoch=6)]}, live={1, 2})
    offline = img.with_liveness({1, 2}, ControllerLease(1, 1), {1: frozenset({("t", 0)})})
    assert partition_changes_for(offline, unclean_for=never) == {}
    back = offline.with_liveness({1, 2}, ControllerLease(1, 1), {})
    assert partition_changes_for(back, unclean_for=never) == {
        "t": [PartitionChange(partition=0, leader=1, isr=(1,), expected_partition_epoch=6)]
    }


def test_dead_follower_leaves_the_isr_and_the_leader_stays() -> None:
    img = image({"t": [part((1, 2, 3), (1, 2, 3), 1, partition_epoch=4)]}, live={1, 3})
    (change,) = partition_changes_for(img, unclean_for=never)["t"]
    assert change.leader is None
    assert change.isr == (1, 3)
    assert change.expected_partition_epoch == 4


def test_dead_follower_outside_the_isr_changes_nothing() -> None:
    img = image({"t": [part((1, 2, 3), (1, 3), 1)]}, live={1, 3})
    assert partition_changes_for(img, unclean_for=never) == {}


def test_partition_goes_offline_once_and_then_stays_quiet() -> None:
    before = part((1, 2, 3), (1,), 1, partition_epoch=2)
    img = image({"t": [before]}, live={2, 3})
    (change,) = partition_changes_for(img, unclean_for=never)["t"]
    assert (change.leader, change.isr) == (-1, (1,))
    after = part((1, 2, 3), (1,), -1, partition_epoch=3)
    # No churn: re-evaluating an offline partition writes nothing.
    assert partition_changes_for(image({"t": [after]}, live={2, 3}), unclean_for=never) == {}


def test_unclean_is_decided_per_topic() -> None:
    img = image(
        {
            "clean": [part((1, 2), (1,), 1)],
            "dirty": [part((1, 2), (1,), 1)],
        },
        live={2},
    )
    changes = partition_changes_for(img, unclean_for=lambda name: name == "dirty")
    assert changes["clean"][0].leader == -1
    assert (changes["dirty"][0].leader, changes["dirty"][0].isr) == (2, (2,))


def test_every_partition_of_every_topic_is_evaluated() -> None:
    img = image(
        {
            "a": [part((1, 2), (1, 2), 1, index=0), part((2, 1), (2, 1), 2, index=1)],
            "b": [part((3, 1), (3, 1), 3, index=0)],
        },
        live={2, 3},
    )
    changes = partition_changes_for(img, unclean_for=never)
    assert {(t, c.partition) for t, cs in changes.items() for c in cs} == {
        ("a", 0),
        ("a", 1),
        ("b", 0),
    }
    by_key = {(t, c.partition): c for t, cs in changes.items() for c in cs}
    assert by_key[("a", 0)].leader == 2
    assert by_key[("a", 1)].leader is None and by_key[("a", 1)].isr == (2,)
    assert by_key[("b", 0)].leader is None and by_key[("b", 0)].isr == (3,)


def test_completed_reassignment_is_settled() -> None:
    moving = part((4, 1, 2), (1, 2, 4), 1, adding=(4,), removing=(2,))
    img = image({"t": [moving]}, live={1, 2, 4})
    (change,) = partition_changes_for(img, unclean_for=never)["t"]
    assert change.replicas == (4, 1)
    assert change.isr == (1, 4)
    assert change.adding_replicas == () and change.removing_replicas == ()


# preferred_leader_change ---------------------------------------------------------------------
def test_preferred_election_moves_leadership_to_the_first_replica() -> None:
    partition = part((2, 1, 3), (1, 2, 3), 1, partition_epoch=8)
    assert preferred_leader_change(partition, live={1, 2, 3}) == PartitionChange(
        partition=0, leader=2, expected_partition_epoch=8
    )


@pytest.mark.parametrize(
    ("partition", "live"),
    [
        (part((2, 1, 3), (1, 2, 3), 2), {1, 2, 3}),  # already the leader
        (part((2, 1, 3), (1, 2, 3), 1), {1, 3}),  # preferred replica is dead
        (part((2, 1, 3), (1, 3), 1), {1, 2, 3}),  # preferred replica is out of sync
        (part((), (), -1), {1, 2, 3}),  # no replicas at all
    ],
    ids=["already-leader", "dead", "out-of-sync", "no-replicas"],
)
def test_preferred_election_not_possible(partition: PartitionImage, live: set[int]) -> None:
    assert preferred_leader_change(partition, live) is None


def test_preferred_election_revives_an_offline_partition_only_from_the_isr() -> None:
    offline = part((2, 1, 3), (2,), -1)
    assert preferred_leader_change(offline, live={1, 2, 3}) == PartitionChange(
        partition=0, leader=2, expected_partition_epoch=5
    )


# validate_isr_change -------------------------------------------------------------------------
LEADING = part((1, 2, 3), (1, 2, 3), 1, leader_epoch=4, partition_epoch=10)


def request(
    new_isr: Iterable[int], *, broker: int = 1, leader_epoch: int = 4, partition_epoch: int = 10
) -> IsrChangeRequest:
    return IsrChangeRequest(
        broker_id=broker,
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        new_isr=tuple(new_isr),
    )


def test_shrink_is_accepted_and_ordered_by_replicas() -> None:
    change = validate_isr_change(LEADING, request((3, 1)), live={1, 2, 3})
    assert change == PartitionChange(partition=0, isr=(1, 3), expected_partition_epoch=10)


def test_expansion_with_a_live_replica_is_accepted() -> None:
    partition = part((1, 2, 3), (1,), 1, leader_epoch=4, partition_epoch=10)
    change = validate_isr_change(partition, request((1, 2, 3)), live={1, 2, 3})
    assert change.isr == (1, 2, 3)
    assert change.leader is None


def test_shrink_may_drop_a_dead_member() -> None:
    change = validate_isr_change(LEADING, request((1, 2)), live={1, 2})
    assert change.isr == (1, 2)


def test_keeping_an_already_in_sync_dead_member_is_not_refused() -> None:
    # Only *added* members must be live (the controller removes dead ones itself).
    change = validate_isr_change(LEADING, request((1, 2, 3)), live={1, 2})
    assert change.isr == (1, 2, 3)


@pytest.mark.parametrize(
    ("req", "live", "error"),
    [
        (request((2, 3), broker=2), {1, 2, 3}, ErrorCode.not_leader_or_follower),
        (request((1, 2), leader_epoch=3), {1, 2, 3}, ErrorCode.fenced_leader_epoch),
        (request((1, 2), leader_epoch=5), {1, 2, 3}, ErrorCode.fenced_leader_epoch),
        (request((1, 2), partition_epoch=9), {1, 2, 3}, ErrorCode.invalid_update_version),
        (request((2, 3)), {1, 2, 3}, ErrorCode.invalid_request),
        (request((1, 2, 4)), {1, 2, 3, 4}, ErrorCode.invalid_request),
    ],
    ids=[
        "not-leader",
        "old-leader-epoch",
        "future-leader-epoch",
        "stale-partition-epoch",
        "isr-without-leader",
        "outside-replicas",
    ],
)
def test_isr_change_refused(req: IsrChangeRequest, live: set[int], error: ErrorCode) -> None:
    with pytest.raises(IsrChangeError) as caught:
        validate_isr_change(LEADING, req, live)
    assert caught.value.error is error


def test_adding_a_dead_replica_is_ineligible() -> None:
    partition = part((1, 2, 3), (1, 2), 1, leader_epoch=4, partition_epoch=10)
    with pytest.raises(IsrChangeError) as caught:
        validate_isr_change(partition, request((1, 2, 3)), live={1, 2})
    assert caught.value.error is ErrorCode.ineligible_replica


def test_zombie_leader_of_an_older_epoch_cannot_change_the_isr() -> None:
    # Broker 1 led at epoch 4; broker 2 was elected (epoch 5) while 1 was paused.
    now = part((1, 2, 3), (2, 3), 2, leader_epoch=5, partition_epoch=11)
    with pytest.raises(IsrChangeError) as caught:
        validate_isr_change(now, request((1,)), live={1, 2, 3})
    assert caught.value.error is ErrorCode.not_leader_or_follower


# Controller (asyncio driver) with a fake store -----------------------------------------------
class FakeStore:
    """Records ``alter_partitions`` calls; can be told to fail."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.calls: list[tuple[int, str, list[PartitionChange]]] = []
        self.fail = fail

    async def alter_partitions(
        self, *, controller_epoch: int, name: str, changes: list[PartitionChange]
    ) -> Any:
        self.calls.append((controller_epoch, name, list(changes)))
        if self.fail is not None:
            raise self.fail
        return TopicImage(name, TOPIC_ID)


def controller(
    img: ClusterImage, store: FakeStore, *, unclean: bool = False, imbalance_percentage: int = 10
) -> Controller:
    return Controller(
        store=store,  # type: ignore[arg-type]
        image=lambda: img,
        epoch=lambda: 7,
        unclean_for=lambda _: unclean,
        auto_rebalance=lambda: False,
        rebalance_interval_s=lambda: 300.0,
        time_s=lambda: 0.0,
        imbalance_percentage=lambda: imbalance_percentage,
    )


async def test_a_death_is_confirmed_by_reading_the_leases_again_before_leadership_moves() -> None:
    """The image polls leases once a second: a broker that registered a moment ago (a
    restart) looks dead in it. The controller reads them again first, and only a death that
    the fresh read confirms moves leadership."""
    stale = image({"t": [part((1, 2), (1, 2), 1)]}, live=[2])
    fresh = image({"t": [part((1, 2), (1, 2), 1)]}, live=[1, 2])
    current = [stale]
    after_refresh = [fresh]
    refreshed: list[bool] = []

    async def refresh() -> None:
        refreshed.append(True)
        current[0] = after_refresh[0]

    store = FakeStore()
    ctl = Controller(
        store=store,  # type: ignore[arg-type]
        image=lambda: current[0],
        epoch=lambda: 7,
        unclean_for=never,
        auto_rebalance=lambda: False,
        rebalance_interval_s=lambda: 300.0,
        time_s=lambda: 0.0,
        refresh_liveness=refresh,
    )
    await ctl.handle_liveness(7)
    assert refreshed == [True] and store.calls == []
    current[0] = after_refresh[0] = stale  # still dead after a fresh read: it moves
    await ctl.handle_liveness(7)
    [(_, _, [change])] = store.calls
    assert change.leader == 2


async def test_liveness_pass_writes_each_topic_with_the_controller_epoch() -> None:
    img = image(
        {"a": [part((1, 2), (1, 2), 1)], "b": [part((2, 3), (2, 3), 2)]},
        live={2},
    )
    store = FakeStore()
    await controller(img, store).handle_liveness(7)
    assert sorted((epoch, name) for epoch, name, _ in store.calls) == [(7, "a"), (7, "b")]


async def test_fenced_liveness_write_is_swallowed() -> None:
    img = image({"a": [part((1, 2), (1, 2), 1)]}, live={2})
    store = FakeStore(fail=FencedError("no longer the controller"))
    await controller(img, store).handle_liveness(7)  # logs, never raises
    assert len(store.calls) == 1


async def test_elect_preferred_reports_per_partition_results() -> None:
    img = image(
        {
            "t": [
                part((2, 1), (1, 2), 1, index=0),  # moves
                part((1, 2), (1, 2), 1, index=1),  # already preferred
                part((2, 1), (1,), 1, index=2),  # preferred out of sync
            ]
        },
        live={1, 2},
    )
    store = FakeStore()
    results = await controller(img, store).elect_preferred(
        7, targets=[("t", 0), ("t", 1), ("t", 2), ("missing", 0)]
    )
    assert results == {
        ("t", 0): ErrorCode.none,
        ("t", 1): ErrorCode.election_not_needed,
        ("t", 2): ErrorCode.preferred_leader_not_available,
        ("missing", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert [(c.partition, c.leader) for _, _, cs in store.calls for c in cs] == [(0, 2)]


async def test_elect_preferred_reports_not_controller_when_the_write_is_fenced() -> None:
    img = image({"t": [part((2, 1), (1, 2), 1)]}, live={1, 2})
    store = FakeStore(fail=FencedError("fenced"))
    results = await controller(img, store).elect_preferred(7, targets=[("t", 0)])
    assert results == {("t", 0): ErrorCode.not_controller}


# auto leader rebalance (leader.imbalance.per.broker.percentage) --------------------------
def ten_partitions(led_elsewhere: int) -> ClusterImage:
    """Ten partitions preferring broker 2, ``led_elsewhere`` of them led by broker 1, and
    one partition preferring broker 1 that broker 3 leads."""
    parts = [part((2, 1), (1, 2), 1 if i < led_elsewhere else 2, index=i) for i in range(10)]
    return image({"t": parts, "u": [part((1, 3), (1, 3), 3)]}, live={1, 2, 3})


@pytest.mark.parametrize(
    ("led_elsewhere", "percentage", "moved"),
    [
        (1, 10, []),  # 10 % is not above 10 %: balanced enough
        (2, 10, [0, 1]),  # 20 % is: every partition of broker 2 led elsewhere moves
        (2, 20, []),
        (1, 0, [0]),  # 0: any partition led elsewhere moves
        (10, 99, list(range(10))),
        (10, 100, []),  # never above 100 %
    ],
)
def test_imbalance_is_judged_per_preferred_broker(
    led_elsewhere: int, percentage: int, moved: list[int]
) -> None:
    candidates = imbalanced_partitions(ten_partitions(led_elsewhere), percentage)
    # Broker 1's one partition is led by broker 3: 100 % imbalance, always a candidate
    # (below 100 %), whatever broker 2's group looks like.
    expected = [("t", i) for i in moved] + ([("u", 0)] if percentage < 100 else [])
    assert sorted(candidates) == sorted(expected)


def test_an_offline_partition_counts_as_led_elsewhere() -> None:
    img = image({"t": [part((2, 1), (2,), -1), part((2, 1), (1, 2), 2, index=1)]}, live={1})
    assert imbalanced_partitions(img, 10) == [("t", 0)]


async def test_auto_rebalance_moves_leaders_only_above_the_threshold() -> None:
    store = FakeStore()
    assert await controller(ten_partitions(1), store).rebalance_leaders(7) == {
        ("u", 0): ErrorCode.none
    }
    assert [(n, c.partition, c.leader) for _, n, cs in store.calls for c in cs] == [("u", 0, 1)]
    store = FakeStore()
    await controller(ten_partitions(3), store, imbalance_percentage=50).rebalance_leaders(7)
    assert [n for _, n, _ in store.calls] == ["u"]
    store = FakeStore()
    await controller(ten_partitions(3), store, imbalance_percentage=20).rebalance_leaders(7)
    moved = sorted((n, c.partition, c.leader) for _, n, cs in store.calls for c in cs)
    assert moved == [("t", 0, 2), ("t", 1, 2), ("t", 2, 2), ("u", 0, 1)]


async def test_elect_unclean_only_for_partitions_without_a_live_leader() -> None:
    img = image(
        {
            "t": [
                part((1, 2, 3), (1,), 1, index=0),  # leader dead, 2 out of sync but live
                part((2, 3), (2, 3), 2, index=1),  # leader alive
                part((1,), (1,), 1, index=2),  # nobody to elect
            ]
        },
        live={2, 3},
    )
    store = FakeStore()
    results = await controller(img, store).elect_unclean(7, targets=None)
    assert results == {
        ("t", 0): ErrorCode.none,
        ("t", 1): ErrorCode.election_not_needed,
        ("t", 2): ErrorCode.eligible_leaders_not_available,
    }
    ((_, _, changes),) = store.calls
    assert [(c.partition, c.leader, c.isr) for c in changes] == [(0, 2, (2,))]


async def test_alter_isr_returns_the_refusal_without_writing() -> None:
    img = image(
        {"t": [part((1, 2, 3), (1, 2, 3), 1, leader_epoch=4, partition_epoch=10)]}, live={1}
    )
    store = FakeStore()
    error, partition = await controller(img, store).alter_isr(7, "t", 0, request((1, 2), broker=2))
    assert error is ErrorCode.not_leader_or_follower
    assert partition is not None and partition.leader == 1
    assert store.calls == []


async def test_alter_isr_maps_a_stale_store_write_to_its_error() -> None:
    img = image(
        {"t": [part((1, 2, 3), (1, 2, 3), 1, leader_epoch=4, partition_epoch=10)]}, live={1, 2, 3}
    )
    store = FakeStore(fail=StalePartitionEpochError("moved on"))
    error, _ = await controller(img, store).alter_isr(7, "t", 0, request((1, 2)))
    assert error is ErrorCode.invalid_update_version


async def test_alter_isr_writes_an_accepted_shrink() -> None:
    img = image(
        {"t": [part((1, 2, 3), (1, 2, 3), 1, leader_epoch=4, partition_epoch=10)]}, live={1, 2, 3}
    )
    store = FakeStore()
    error, _ = await controller(img, store).alter_isr(7, "t", 0, request((1, 3)))
    assert error is ErrorCode.none
    assert store.calls == [
        (7, "t", [PartitionChange(partition=0, isr=(1, 3), expected_partition_epoch=10)])
    ]


async def test_alter_isr_for_an_unknown_partition() -> None:
    img = image({"t": [part((1, 2), (1, 2), 1)]}, live={1, 2})
    error, partition = await controller(img, FakeStore()).alter_isr(7, "t", 3, request((1,)))
    assert (error, partition) == (ErrorCode.unknown_topic_or_partition, None)

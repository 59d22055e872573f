"""Partition health, the one definition behind the dashboard, the monitor and the metrics:
pure functions over the image and the leader's published state."""

from __future__ import annotations

from topics.health import HealthCounts, PartitionHealth, health_counts, partition_health
from weir.metadata.image import PartitionImage
from weir.metadata.partition_state import PartitionStatus

LIVE = frozenset({1, 2, 3})


def partition(leader: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3)):
    return PartitionImage(partition=0, replicas=replicas, isr=isr, leader=leader)


def state(isr: tuple[int, ...]) -> PartitionStatus:
    return PartitionStatus(
        topic="t",
        partition=0,
        leader=1,
        leader_epoch=0,
        isr=isr,
        log_end_offset=0,
        high_watermark=0,
        log_start_offset=0,
        size_bytes=0,
        follower_log_end_offsets={},
        updated_ms=0,
    )


def test_a_full_isr_with_a_live_leader_is_healthy() -> None:
    assert partition_health(partition(1, (1, 2, 3)), live=LIVE, min_isr=2) == PartitionHealth(
        isr=(1, 2, 3), offline=False, under_replicated=False, under_min_isr=False, at_min_isr=False
    )


def test_no_leader_or_a_dead_leader_is_offline() -> None:
    assert partition_health(partition(-1, ()), live=LIVE).offline
    assert partition_health(partition(4, (4,), (4,)), live=LIVE).offline


def test_min_isr_boundaries() -> None:
    at = partition_health(partition(1, (1, 2)), live=LIVE, min_isr=2)
    under = partition_health(partition(1, (1,)), live=LIVE, min_isr=2)
    assert (at.under_replicated, at.at_min_isr, at.under_min_isr) == (True, True, False)
    assert (under.at_min_isr, under.under_min_isr) == (False, True)


def test_the_leaders_published_isr_wins_over_the_images() -> None:
    health = partition_health(partition(1, (1, 2, 3)), live=LIVE, state=state((1,)), min_isr=2)
    assert health.isr == (1,) and health.under_replicated and health.under_min_isr


def test_counts_add_up_over_partitions() -> None:
    found = health_counts(
        [partition(1, (1, 2, 3)), partition(1, (1, 2)), partition(-1, ())], live=LIVE, min_isr=2
    )
    assert found == HealthCounts(
        partitions=3, offline=1, under_replicated=2, under_min_isr=1, at_min_isr=1
    )

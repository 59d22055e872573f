"""Committed offsets: OffsetCommit validation, OffsetFetch, OffsetDelete, expiry."""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import SESSION_MS, Driver, subscription
from weir.coordinator import (
    FetchedOffset,
    Group,
    GroupState,
    MemberIdentity,
    OffsetAndMetadata,
    OffsetCommitRecord,
    OffsetConfig,
    OffsetStore,
    PartitionCommit,
)
from weir.coordinator.offsets import CommitOutcome

E = ErrorCode
MINUTE = 60_000
RETENTION_MS = 10_080 * MINUTE


def commit(
    store: OffsetStore,
    group: Group | None,
    *,
    now_ms: int,
    member_id: str = "",
    generation_id: int = -1,
    instance_id: str | None = None,
    partitions: Sequence[PartitionCommit] = (PartitionCommit("orders", 0, 42),),
    api_version: int = 8,
    retention_time_ms: int = -1,
    group_id: str = "payments",
) -> CommitOutcome:
    outcome = store.commit(
        group_id=group_id,
        group=group,
        member_id=member_id,
        group_instance_id=instance_id,
        generation_id=generation_id,
        partitions=partitions,
        api_version=api_version,
        now_ms=now_ms,
        retention_time_ms=retention_time_ms,
    )
    for record in outcome.records:  # the append succeeded
        store.apply(record)
    return outcome


def errors(outcome: CommitOutcome) -> list[ErrorCode]:
    return [p.error for p in outcome.partitions]


def orders_subscriber_committed(*partitions: PartitionCommit) -> tuple[Driver, OffsetStore]:
    """A stable one-member group subscribed to "orders" whose member committed ``partitions``."""
    driver = Driver()
    (a,), generation = driver.stable_group(1, protocols=(("range", subscription("orders")),))
    store = OffsetStore()
    commit(
        store,
        driver.group,
        now_ms=driver.now,
        member_id=a,
        generation_id=generation,
        partitions=list(partitions),
    )
    return driver, store


def test_member_commit_is_stored_with_commit_time_epoch_and_metadata() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    store = OffsetStore()
    outcome = commit(
        store,
        driver.group,
        now_ms=driver.now,
        member_id=a,
        generation_id=generation,
        partitions=[
            PartitionCommit("orders", 0, 42, leader_epoch=7, metadata="batch-17"),
            PartitionCommit("orders", 1, 10, metadata=None),
        ],
    )
    assert errors(outcome) == [E.none, E.none]
    assert outcome.records[0] == OffsetCommitRecord(
        "payments", "orders", 0, OffsetAndMetadata(42, 7, "batch-17", driver.now)
    )
    assert store.committed("payments", "orders", 1) == OffsetAndMetadata(10, -1, "", driver.now)


def test_commit_validation_against_the_group() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    store = OffsetStore()
    now = driver.now
    assert errors(commit(store, driver.group, now_ms=now, member_id=a, generation_id=9)) == [
        E.illegal_generation
    ]
    assert errors(commit(store, driver.group, now_ms=now, member_id="x", generation_id=1)) == [
        E.unknown_member_id
    ]
    # Generation -1 without a member id is only for groups with no members.
    assert errors(commit(store, driver.group, now_ms=now)) == [E.unknown_member_id]
    # PreparingRebalance still accepts commits of the current generation.
    driver.force_rebalance()
    assert errors(
        commit(store, driver.group, now_ms=now, member_id=a, generation_id=generation)
    ) == [E.none]
    assert store.fetch("payments") != ()


def test_commit_during_completing_rebalance_is_rebalance_in_progress() -> None:
    driver = Driver()
    a, reply = driver.join_new()
    driver.until_resolved([reply])
    assert driver.group.state is GroupState.COMPLETING_REBALANCE
    outcome = commit(OffsetStore(), driver.group, now_ms=driver.now, member_id=a, generation_id=1)
    assert errors(outcome) == [E.rebalance_in_progress]
    assert outcome.records == ()


def test_commit_with_stale_static_member_id_is_fenced() -> None:
    driver = Driver()
    old = driver.join("", instance_id="host-a")
    (old_join,) = driver.until_resolved([old])
    driver.sync(old_join.member_id, 1, {old_join.member_id: b"x"}, instance_id="host-a")
    driver.join_response(driver.join("", instance_id="host-a"))
    outcome = commit(
        OffsetStore(),
        driver.group,
        now_ms=driver.now,
        member_id=old_join.member_id,
        generation_id=1,
        instance_id="host-a",
    )
    assert errors(outcome) == [E.fenced_instance_id]


def test_simple_commit_without_group_or_to_empty_group_is_accepted() -> None:
    store = OffsetStore()
    assert errors(commit(store, None, now_ms=1_000)) == [E.none]
    empty = Group("payments", now_ms=1_000)
    assert errors(commit(store, empty, now_ms=2_000)) == [E.none]
    assert store.committed("payments", "orders", 0) == OffsetAndMetadata(42, -1, "", 2_000)


def test_generation_commit_to_unknown_group_depends_on_api_version() -> None:
    store = OffsetStore()
    assert errors(commit(store, None, now_ms=1, member_id="m", generation_id=3)) == [
        E.illegal_generation
    ]
    assert errors(commit(store, None, now_ms=1, member_id="m", generation_id=3, api_version=9)) == [
        E.group_id_not_found
    ]
    assert store.group_ids() == frozenset()


def test_oversized_metadata_is_refused_per_partition() -> None:
    store = OffsetStore(OffsetConfig(metadata_max_bytes=4))
    outcome = commit(
        store,
        None,
        now_ms=1,
        partitions=[
            PartitionCommit("t", 0, 1, metadata="four"),
            PartitionCommit("t", 1, 1, metadata="fives"),
        ],
    )
    assert errors(outcome) == [E.none, E.offset_metadata_too_large]
    assert [r.partition for r in outcome.records] == [0]


def test_commit_refreshes_the_member_session() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    store = OffsetStore()
    for _ in range(4):
        driver.advance(SESSION_MS - 1)
        commit(store, driver.group, now_ms=driver.now, member_id=a, generation_id=generation)
    assert a in driver.group.members


def test_fetch_returns_all_or_requested_partitions_with_minus_one_for_missing() -> None:
    store = OffsetStore()
    commit(
        store,
        None,
        now_ms=5,
        partitions=[PartitionCommit("b", 1, 11, 3, "m"), PartitionCommit("a", 0, 7)],
    )
    assert store.fetch("payments") == (
        FetchedOffset("a", 0, 7, -1, ""),
        FetchedOffset("b", 1, 11, 3, "m"),
    )
    assert store.fetch("payments", [("b", 1), ("b", 2)]) == (
        FetchedOffset("b", 1, 11, 3, "m"),
        FetchedOffset("b", 2, -1, -1, ""),
    )
    assert store.fetch("other") == ()


def test_delete_refuses_topics_a_live_member_subscribes_to() -> None:
    driver, store = orders_subscriber_committed(
        PartitionCommit("orders", 0, 1), PartitionCommit("audit", 0, 2)
    )
    outcome = store.delete(
        group_id="payments",
        group=driver.group,
        partitions=[("orders", 0), ("audit", 0), ("audit", 1)],
    )
    assert outcome.error is E.none
    assert [p.error for p in outcome.partitions] == [
        E.group_subscribed_to_topic,
        E.none,
        E.none,
    ]
    assert outcome.records == (OffsetCommitRecord("payments", "audit", 0, None),)


def test_delete_after_members_leave_is_allowed() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    store = OffsetStore()
    commit(store, driver.group, now_ms=driver.now, member_id=a, generation_id=generation)
    driver.leave(MemberIdentity(a))
    outcome = store.delete(group_id="payments", group=driver.group, partitions=[("orders", 0)])
    assert outcome.records == (OffsetCommitRecord("payments", "orders", 0, None),)
    store.apply(outcome.records[0])
    assert store.fetch("payments", [("orders", 0)])[0].offset == -1


def test_delete_of_unknown_dead_or_busy_non_consumer_group_is_refused() -> None:
    store = OffsetStore()
    assert store.delete(group_id="nope", group=None, partitions=[("t", 0)]).error is (
        E.group_id_not_found
    )
    driver = Driver()
    driver.stable_group(1, protocol_type="connect")
    assert store.delete(group_id="payments", group=driver.group, partitions=[]).error is (
        E.non_empty_group
    )
    dead = Group("payments", now_ms=0)
    assert dead.delete(0) is E.none
    assert store.delete(group_id="payments", group=dead, partitions=[]).error is (
        E.group_id_not_found
    )


def test_offsets_of_empty_group_expire_retention_after_it_became_empty() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    store = OffsetStore()
    commit(store, driver.group, now_ms=driver.now, member_id=a, generation_id=generation)
    # Stable for a long time: subscribed offsets never expire.
    driver.now += 2 * RETENTION_MS
    driver.heartbeat(a, generation)
    assert store.expire({"payments": driver.group}, now_ms=driver.now).records == ()
    driver.leave(MemberIdentity(a))
    emptied_at = driver.now
    assert driver.group.state_timestamp_ms == emptied_at
    early = store.expire({"payments": driver.group}, now_ms=emptied_at + RETENTION_MS - 1)
    assert early.records == () and early.groups_to_delete == ()
    due = store.expire({"payments": driver.group}, now_ms=emptied_at + RETENTION_MS)
    assert due.records == (OffsetCommitRecord("payments", "orders", 0, None),)
    assert due.groups_to_delete == ("payments",)


def test_simple_group_offsets_expire_by_commit_time() -> None:
    store = OffsetStore()
    commit(store, None, now_ms=0, partitions=[PartitionCommit("t", 0, 1)])
    commit(store, None, now_ms=5 * MINUTE, partitions=[PartitionCommit("t", 1, 1)])
    outcome = store.expire({}, now_ms=RETENTION_MS)
    assert outcome.records == (OffsetCommitRecord("payments", "t", 0, None),)
    assert outcome.groups_to_delete == ()


def test_stable_consumer_group_expires_only_unsubscribed_topics() -> None:
    driver, store = orders_subscriber_committed(
        PartitionCommit("orders", 0, 1), PartitionCommit("old-topic", 0, 1)
    )
    outcome = store.expire({"payments": driver.group}, now_ms=driver.now + RETENTION_MS)
    assert outcome.records == (OffsetCommitRecord("payments", "old-topic", 0, None),)


def test_explicit_retention_time_sets_an_expire_timestamp() -> None:
    store = OffsetStore()
    outcome = commit(store, None, now_ms=1_000, retention_time_ms=60_000)
    assert outcome.records[0].value == OffsetAndMetadata(42, -1, "", 1_000, 61_000)
    assert store.expire({}, now_ms=60_999).records == ()
    assert len(store.expire({}, now_ms=61_000).records) == 1


def test_delete_group_and_deleted_partitions_produce_tombstones() -> None:
    store = OffsetStore()
    commit(
        store, None, now_ms=1, partitions=[PartitionCommit("t", 0, 1), PartitionCommit("u", 0, 1)]
    )
    commit(store, None, now_ms=1, group_id="other", partitions=[PartitionCommit("t", 0, 5)])
    assert store.delete_group("payments") == (
        OffsetCommitRecord("payments", "t", 0, None),
        OffsetCommitRecord("payments", "u", 0, None),
    )
    assert store.on_partitions_deleted([("t", 0)]) == (
        OffsetCommitRecord("other", "t", 0, None),
        OffsetCommitRecord("payments", "t", 0, None),
    )

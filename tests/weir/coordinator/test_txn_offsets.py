"""Transactional offset commits (TxnOffsetCommit) in the pure offset store: KIP-447 checks,
offsets pending per producer until the marker, ordering against plain commits, replay."""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.errors import ErrorCode

from tests.weir.coordinator.harness import Driver
from weir.coordinator import (
    FetchedOffset,
    Group,
    GroupState,
    OffsetAndMetadata,
    OffsetCommitRecord,
    OffsetStore,
    PartitionCommit,
    TxnMarker,
    TxnRecord,
    encode,
    replay,
)
from weir.coordinator.offsets import CommitOutcome

E = ErrorCode
NOW = 1_700_000_000_000
PID = 4000
OTHER_PID = 4001


def txn_commit(
    store: OffsetStore,
    group: Group | None,
    *,
    member_id: str = "",
    generation_id: int = -1,
    instance_id: str | None = None,
    partitions: Sequence[PartitionCommit] = (PartitionCommit("orders", 0, 42),),
    api_version: int = 3,
) -> CommitOutcome:
    return store.commit(
        group_id="payments",
        group=group,
        member_id=member_id,
        group_instance_id=instance_id,
        generation_id=generation_id,
        partitions=partitions,
        api_version=api_version,
        now_ms=NOW,
        transactional=True,
    )


def errors(outcome: CommitOutcome) -> list[ErrorCode]:
    return [p.error for p in outcome.partitions]


def offset(store: OffsetStore, partition: int = 0) -> int | None:
    value = store.committed("payments", "orders", partition)
    return None if value is None else value.offset


def record(value: int | None, partition: int = 0) -> OffsetCommitRecord:
    return OffsetCommitRecord(
        "payments",
        "orders",
        partition,
        None if value is None else OffsetAndMetadata(value, commit_timestamp_ms=NOW),
    )


# -- KIP-447: the consumer's group metadata ------------------------------------------------


def test_txn_commit_checks_generation_member_and_instance_when_given() -> None:
    driver = Driver()
    (a,), generation = driver.stable_group(1)
    group = driver.group
    store = OffsetStore()
    assert errors(txn_commit(store, group, member_id=a, generation_id=generation)) == [E.none]
    assert errors(txn_commit(store, group, member_id=a, generation_id=generation + 1)) == [
        E.illegal_generation
    ]
    assert errors(txn_commit(store, group, member_id="gone", generation_id=generation)) == [
        E.unknown_member_id
    ]
    assert errors(
        txn_commit(store, group, member_id=a, generation_id=generation, instance_id="host-x")
    ) == [E.unknown_member_id]
    # v0-v2 (or a producer not given the consumer's metadata): accepted in a live group,
    # where a plain OffsetCommit without a member would be UNKNOWN_MEMBER_ID.
    assert errors(txn_commit(store, group, api_version=2)) == [E.none]


def test_txn_commit_with_stale_static_member_is_fenced() -> None:
    driver = Driver()
    old = driver.join("", instance_id="host-a")
    (old_join,) = driver.until_resolved([old])
    driver.sync(old_join.member_id, 1, {old_join.member_id: b"x"}, instance_id="host-a")
    driver.join_response(driver.join("", instance_id="host-a"))
    outcome = txn_commit(
        OffsetStore(),
        driver.group,
        member_id=old_join.member_id,
        generation_id=1,
        instance_id="host-a",
    )
    assert errors(outcome) == [E.fenced_instance_id]
    assert outcome.records == ()


def test_txn_commit_is_not_refused_during_completing_rebalance() -> None:
    driver = Driver()
    a, reply = driver.join_new()
    driver.until_resolved([reply])
    assert driver.group.state is GroupState.COMPLETING_REBALANCE
    outcome = txn_commit(OffsetStore(), driver.group, member_id=a, generation_id=1)
    assert errors(outcome) == [E.none]
    assert len(outcome.records) == 1


def test_txn_commit_to_unknown_group_needs_generation_minus_one() -> None:
    store = OffsetStore()
    assert errors(txn_commit(store, None)) == [E.none]
    assert errors(txn_commit(store, None, member_id="m", generation_id=3)) == [E.illegal_generation]


# -- pending until the marker ----------------------------------------------------------------


def test_pending_offsets_are_invisible_until_commit() -> None:
    store = OffsetStore()
    store.apply(record(10), 0)
    store.add_pending(PID, [record(42)], 5)
    assert offset(store) == 10
    assert store.fetch("payments") == (FetchedOffset("orders", 0, 10, -1, ""),)
    assert store.has_pending("payments", "orders", 0)
    assert store.complete_transaction(PID, commit=True) == [record(42)]
    assert offset(store) == 42
    assert not store.has_pending("payments", "orders", 0)
    assert store.pending_producer_ids() == frozenset()


def test_abort_drops_pending_offsets() -> None:
    store = OffsetStore()
    store.apply(record(10), 0)
    store.add_pending(PID, [record(42), record(7, partition=1)], 5)
    assert store.complete_transaction(PID, commit=False) == []
    assert offset(store) == 10
    assert store.committed("payments", "orders", 1) is None
    assert not store.has_pending("payments", "orders", 1)


def test_require_stable_answers_unstable_for_pending_partitions_only() -> None:
    store = OffsetStore()
    store.apply(record(10), 0)
    store.apply(record(20, partition=1), 1)
    store.add_pending(PID, [record(42)], 5)
    wanted = [("orders", 0), ("orders", 1)]
    assert store.fetch("payments", wanted, require_stable=True) == (
        FetchedOffset("orders", 0, -1, -1, "", E.unstable_offset_commit),
        FetchedOffset("orders", 1, 20, -1, ""),
    )
    # Without require_stable the last committed offset is answered.
    assert store.fetch("payments", wanted)[0] == FetchedOffset("orders", 0, 10, -1, "")
    store.complete_transaction(PID, commit=True)
    assert store.fetch("payments", wanted, require_stable=True)[0] == FetchedOffset(
        "orders", 0, 42, -1, ""
    )


def test_a_later_plain_commit_wins_over_an_earlier_pending_one() -> None:
    store = OffsetStore()
    store.add_pending(PID, [record(42)], 5)
    store.apply(record(50), 6)  # appended after the transactional batch
    assert store.has_pending("payments", "orders", 0)  # still unstable until the marker
    store.complete_transaction(PID, commit=True)
    assert offset(store) == 50


def test_a_pending_offset_appended_after_a_plain_commit_wins_at_commit() -> None:
    store = OffsetStore()
    store.add_pending(PID, [record(42)], 7)
    store.apply(record(50), 6)  # acknowledged later, but earlier in the log
    store.complete_transaction(PID, commit=True)
    assert offset(store) == 42


def test_between_two_transactions_the_later_offset_in_the_log_wins() -> None:
    store = OffsetStore()
    store.add_pending(PID, [record(42)], 5)
    store.add_pending(OTHER_PID, [record(60)], 8)
    store.complete_transaction(OTHER_PID, commit=True)
    assert offset(store) == 60
    store.complete_transaction(PID, commit=True)
    assert offset(store) == 60


def test_a_marker_leaves_the_next_transactions_offsets_pending() -> None:
    store = OffsetStore()
    store.add_pending(PID, [record(42)], 5)
    store.add_pending(PID, [record(7, partition=1)], 9)  # written after the marker at 8
    assert store.complete_transaction(PID, commit=True, marker_offset=8) == [record(42)]
    assert offset(store) == 42
    assert store.has_pending("payments", "orders", 1)
    store.complete_transaction(PID, commit=False, marker_offset=10)
    assert store.committed("payments", "orders", 1) is None
    assert store.pending_producer_ids() == frozenset()


def test_failed_append_withdraws_only_its_own_pending_offsets() -> None:
    store = OffsetStore()
    store.add_pending(PID, [record(42)], 5)
    store.add_pending(PID, [record(43)], 9)
    store.drop_pending(PID, [record(42)], 5)  # superseded by the batch at 9 already
    assert store.has_pending("payments", "orders", 0)
    store.drop_pending(PID, [record(43)], 9)
    assert not store.has_pending("payments", "orders", 0)


def test_an_empty_group_with_pending_offsets_is_not_deleted_by_expiry() -> None:
    store = OffsetStore()
    store.apply(record(10), 0)
    store.add_pending(PID, [record(42, partition=1)], 5)
    group = Group("payments", now_ms=NOW)
    later = NOW + store.config.retention_ms + 1
    outcome = store.expire({"payments": group}, now_ms=later)
    assert outcome.records == (record(None),)  # the committed offset expires
    assert outcome.groups_to_delete == ()  # but the group stays for its open transaction
    store.complete_transaction(PID, commit=False)
    assert store.expire({"payments": group}, now_ms=later).groups_to_delete == ("payments",)


# -- loading ---------------------------------------------------------------------------------


def txn(producer_id: int, log_offset: int, value: int, partition: int = 0) -> TxnRecord:
    return TxnRecord(producer_id, log_offset, *encode(record(value, partition)))


def test_replay_applies_committed_drops_aborted_and_keeps_open_transactions_pending() -> None:
    log = [
        encode(record(10)),  # plain commits
        encode(record(20, partition=1)),
        txn(PID, 2, 11),  # committed
        txn(OTHER_PID, 3, 21, partition=1),  # aborted
        TxnMarker(PID, commit=True),
        TxnMarker(OTHER_PID, commit=False),
        txn(5000, 6, 99, partition=2),  # open at the end of the log
        encode(
            OffsetCommitRecord(
                "other-group", "orders", 0, OffsetAndMetadata(1, commit_timestamp_ms=NOW)
            )
        ),
    ]
    groups, store = replay(log, now_ms=NOW)
    assert offset(store, 0) == 11
    assert offset(store, 1) == 20
    assert offset(store, 2) is None
    assert store.has_pending("payments", "orders", 2)
    assert store.pending_producer_ids() == {5000}
    assert set(groups) == {"payments", "other-group"}
    # The open transaction's marker arriving later completes it.
    store.complete_transaction(5000, commit=True)
    assert offset(store, 2) == 99


def test_replay_of_a_group_with_only_pending_offsets_creates_the_group() -> None:
    groups, store = replay([txn(PID, 0, 42)], now_ms=NOW)
    assert "payments" in groups
    assert store.fetch("payments", [("orders", 0)], require_stable=True) == (
        FetchedOffset("orders", 0, -1, -1, "", E.unstable_offset_commit),
    )


def test_replay_orders_plain_and_transactional_offsets_by_log_position() -> None:
    log = [
        txn(PID, 0, 42),
        encode(record(50)),  # later plain commit: wins over the earlier pending offset
        TxnMarker(PID, commit=True),
        encode(record(60, partition=1)),
        txn(OTHER_PID, 4, 61, partition=1),  # later than the plain commit: wins
        TxnMarker(OTHER_PID, commit=True),
    ]
    _, store = replay(log, now_ms=NOW)
    assert offset(store, 0) == 50
    assert offset(store, 1) == 61

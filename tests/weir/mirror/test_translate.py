"""Exact offset translation (pure): worked examples of each rule, then property tests that run
the real ``OffsetSyncPolicy`` over random mirror histories -- sources with gaps (compaction,
transaction markers), restarts from the last commit, rewinds, uncommitted copies left by a
crash, foreign records on the target, a small ``offset.lag.max`` -- and compare every
translation with the brute-force answer read off the simulated target log."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import accumulate

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weir.mirror.formats import OffsetSync
from weir.mirror.replicate import OffsetSyncPolicy
from weir.mirror.translate import PartitionHistory, SyncHistory, Translation


def history_of(*pairs: tuple[int, int]) -> PartitionHistory:
    history = PartitionHistory()
    for up, down in pairs:
        history.add(up, down)
    return history


def test_each_rule_on_a_worked_history() -> None:
    # 10..14 -> 100..104 (a run), 15..19 compacted away, 20 -> 105, 21..23 -> 106..108.
    history = history_of((10, 100), (14, 104), (20, 105), (23, 108))
    assert history.translate(9) is None  # before the oldest sync: unknown
    assert history.translate(10) == Translation(100, exact=True)  # on a sync
    assert history.translate(12) == Translation(102, exact=True)  # inside a run
    assert history.translate(15) == Translation(105, exact=True)  # inside a break
    assert history.translate(19) == Translation(105, exact=True)
    assert history.translate(22) == Translation(107, exact=True)
    assert history.translate(24) == Translation(109, exact=True)  # one past the last sync
    assert history.translate(30) == Translation(109, exact=False)  # not copied yet
    # Never beyond the target's end; a capped answer is not exact.
    assert history.translate(24, end_offset=109) == Translation(109, exact=True)
    assert history.translate(24, end_offset=107) == Translation(107, exact=False)


def test_runs_keep_only_their_ends_and_resends_change_nothing() -> None:
    history = history_of((0, 0), (3, 3), (6, 6), (6, 6), (9, 9), (10, 12), (11, 13), (12, 14))
    assert history.pairs() == [(0, 0), (9, 9), (10, 12), (12, 14)]


def test_a_rewind_replaces_the_history_after_it_and_keeps_the_old_runs_end() -> None:
    # Lifetime 1 copied 10..20 to 100..110; lifetime 2 re-copies from 13 at 111.
    history = history_of((10, 100), (20, 110), (13, 111), (15, 113))
    assert history.pairs() == [(10, 100), (12, 102), (13, 111), (15, 113)]
    assert history.translate(12) == Translation(102, exact=True)
    assert history.translate(13) == Translation(111, exact=True)  # the newer copy
    assert history.translate(17) == Translation(114, exact=False)
    # A rewind before everything known starts over.
    history.add(5, 120)
    assert history.pairs() == [(5, 120)]
    assert history.translate(4) is None


def test_the_same_sync_again_truncates_after_it() -> None:
    history = history_of((0, 0), (5, 9), (8, 12))
    history.add(5, 9)  # a second writer re-sent it: what it wrote next is what counts
    assert history.pairs() == [(0, 0), (5, 9)]


def test_oldest_syncs_go_first_when_full() -> None:
    history = PartitionHistory(max_syncs=3)
    for up in range(0, 40, 10):  # every step a break (+10 source, +1 target)
        history.add(up, up // 10)
    assert history.pairs() == [(10, 1), (20, 2), (30, 3)]
    assert history.translate(9) is None
    assert history.translate(15) == Translation(2, exact=True)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        PartitionHistory().add(-1, 0)
    with pytest.raises(ValueError, match="max_syncs"):
        PartitionHistory(max_syncs=1)


def test_sync_history_keys_by_source_partition() -> None:
    syncs = SyncHistory()
    syncs.add_all(
        [
            OffsetSync("orders", 0, 0, 0),
            OffsetSync("orders", 1, 0, 50),
            OffsetSync("orders", 0, 9, 9),
        ]
    )
    assert syncs.translate("orders", 0, 4) == Translation(4, exact=True)
    assert syncs.translate("orders", 1, 1) == Translation(51, exact=True)
    assert syncs.translate("orders", 2, 0) is None
    assert syncs.translate("payments", 0, 0) is None
    syncs.clear()
    assert syncs.translate("orders", 0, 4) is None


# -- property tests -----------------------------------------------------------------------


@dataclass
class MirrorRun:
    """One source partition mirrored by successive replicator lifetimes."""

    syncs: list[tuple[int, int]] = field(default_factory=list)  # as written, in order
    target: list[int | None] = field(default_factory=list)  # source offset, None: foreign
    latest: dict[int, int] = field(default_factory=dict)  # source offset -> its current copy


def simulate(data: st.DataObject, *, foreign: bool, crash_tails: bool) -> MirrorRun:
    """Copy a gappy source with the real sync policy and the replicator's queueing (urgent
    syncs in order, then the delayed one, at each commit)."""
    gaps = data.draw(st.lists(st.sampled_from((1, 1, 1, 1, 2, 3, 6)), min_size=1, max_size=40))
    source = list(accumulate(gaps, initial=data.draw(st.integers(0, 3))))
    policy = OffsetSyncPolicy(data.draw(st.integers(0, 4)))
    tp = ("t", 0)
    run = MirrorRun()
    committed = source[0]
    tail_left = False  # the last lifetime crashed with uncommitted copies on the target
    lifetimes = data.draw(st.integers(1, 4))
    for lifetime in range(lifetimes):
        kinds = ["resume", "rewind"] if tail_left else ["resume", "rewind", "ahead"]
        kind = data.draw(st.sampled_from(kinds))
        position = committed
        if kind == "rewind":
            position = data.draw(st.integers(0, committed))
        elif kind == "ahead":  # the source deleted records (retention) while no one copied
            position = committed + data.draw(st.integers(1, 6))
        records = [o for o in source if o >= position]
        copies = data.draw(st.integers(1 if records else 0, len(records)))
        batch = data.draw(st.integers(1, 5))
        policy.forget(tp)
        urgent: list[tuple[int, int]] = []
        delayed: tuple[int, int] | None = None
        for i, up in enumerate(records[:copies]):
            if i == 0:  # this lifetime's copies replace every older copy from here on
                run.latest = {k: v for k, v in run.latest.items() if k < up}
            if foreign:
                run.target.extend([None] * data.draw(st.sampled_from((0, 0, 0, 1, 2, 3))))
            down = len(run.target)
            run.target.append(up)
            run.latest[up] = down
            pairs = policy.update(tp, up, down)
            if pairs:
                urgent.extend(pairs)
                delayed = None
            else:
                delayed = (up, down)
            if (i + 1) % batch == 0 or i == copies - 1:  # commit, then write the syncs
                run.syncs.extend(urgent + ([delayed] if delayed else []))
                urgent, delayed = [], None
                committed = up + 1
        tail_left = False
        if crash_tails and lifetime < lifetimes - 1:  # copied, never committed nor synced
            for up in records[copies : copies + data.draw(st.integers(0, 3))]:
                run.latest[up] = len(run.target)
                run.target.append(up)
                tail_left = True
    return run


def check_every_offset(run: MirrorRun, *, strict: bool) -> None:
    history = PartitionHistory()
    for up, down in run.syncs:
        history.add(up, down)
    end = len(run.target)
    top = max(run.latest, default=0) + 3
    for c in range(top + 1):
        got = history.translate(c, end_offset=end)
        if not run.latest or c < min(run.latest):
            assert got is None, (c, got)
            continue
        assert got is not None, c
        last = max(run.latest)
        if c > last:
            assert got == Translation(run.latest[last] + 1, exact=c == last + 1), (c, got)
            assert got.downstream_offset <= end
            continue
        brute = run.latest[min(k for k in run.latest if k >= c)]
        assert got.exact, (c, got)
        if strict:
            assert got.downstream_offset == brute, (c, got, brute)
        # A consumer starting there reads no record before c and skips none from c on.
        t = got.downstream_offset
        assert all(up >= c for up in run.target[t:] if up is not None), (c, t)
        assert all(down >= t for up, down in run.latest.items() if up >= c), (c, t)


PROPERTY = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(data=st.data())
def test_translation_equals_brute_force_over_restarts_rewinds_and_gaps(
    data: st.DataObject,
) -> None:
    check_every_offset(simulate(data, foreign=False, crash_tails=False), strict=True)


@PROPERTY
@given(data=st.data())
def test_failover_neither_skips_nor_rereads_with_crash_duplicates_and_foreign_records(
    data: st.DataObject,
) -> None:
    check_every_offset(simulate(data, foreign=True, crash_tails=True), strict=False)

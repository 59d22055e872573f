"""The driver's pure decisions: Kafka's retention rules and the choice of partitions to clean."""

from __future__ import annotations

from typing import Any

from brokers.ops.housekeeping import (
    CompactionCandidate,
    compaction_candidates,
    retention_decision,
)

NOW = 10_000_000


def entry(
    segments: list[tuple[int, int, int]],
    *,
    end: int,
    hw: int | None = None,
    start: int | None = None,
    policy: tuple[str, ...] = ("delete",),
    retention_ms: int = -1,
    retention_bytes: int = -1,
    dirty: dict[str, Any] | None = None,
    ratio: float = 0.5,
    topic: str = "t",
    partition: int = 0,
) -> dict[str, Any]:
    """An inventory entry from ``(base offset, size, largest timestamp)`` per segment."""
    rows = []
    for i, (base, size, timestamp) in enumerate(segments):
        following = segments[i + 1][0] if i + 1 < len(segments) else end
        rows.append(
            {
                "base_offset": base,
                "next_offset": following,
                "size": size,
                "largest_timestamp": timestamp,
            }
        )
    return {
        "topic": topic,
        "partition": partition,
        "is_leader": True,
        "log_start_offset": segments[0][0] if start is None else start,
        "log_end_offset": end,
        "high_watermark": end if hw is None else hw,
        "size_bytes": sum(s[1] for s in segments),
        "segments": rows,
        "config": {
            "cleanup.policy": list(policy),
            "retention.ms": retention_ms,
            "retention.bytes": retention_bytes,
            "min.cleanable.dirty.ratio": ratio,
        },
        "dirty": dirty,
    }


OLD, NEW = NOW - 5_000, NOW - 10


def test_time_retention_deletes_the_expired_prefix_up_to_the_first_recent_segment() -> None:
    e = entry(
        [(0, 100, OLD), (10, 100, OLD), (20, 100, NEW), (30, 100, OLD), (40, 50, OLD)],
        end=45,
        retention_ms=1_000,
    )
    decision = retention_decision(e, now_ms=NOW)
    # Kafka stops at the first segment that is not expired, even if later ones are.
    assert (decision.new_log_start, decision.segments, decision.bytes) == (20, 2, 200)
    assert decision.reasons == ("retention.ms",)


def test_expiry_is_strictly_older_than_retention_ms() -> None:
    e = entry([(0, 100, NOW - 1_000), (10, 100, NOW)], end=15, retention_ms=1_000)
    assert retention_decision(e, now_ms=NOW).new_log_start is None
    assert retention_decision(e, now_ms=NOW + 1).new_log_start == 10


def test_the_active_segment_is_never_deleted() -> None:
    e = entry([(0, 100, OLD), (10, 100, OLD)], end=15, retention_ms=0, retention_bytes=0)
    decision = retention_decision(e, now_ms=NOW)
    assert (decision.new_log_start, decision.segments) == (10, 1)


def test_only_segments_wholly_below_the_high_watermark_go() -> None:
    e = entry([(0, 100, OLD), (10, 100, OLD), (20, 100, OLD)], end=25, hw=15, retention_ms=1)
    assert retention_decision(e, now_ms=NOW).new_log_start == 10


def test_size_retention_keeps_at_least_retention_bytes() -> None:
    segments = [(0, 100, NEW), (10, 300, NEW), (20, 100, NEW), (30, 100, NEW), (40, 10, NEW)]
    # 610 bytes, limit 250: 0 (->510), 10 (->210 < 250: stop before it)
    assert (
        retention_decision(entry(segments, end=45, retention_bytes=250), now_ms=NOW).new_log_start
        == 10
    )
    decision = retention_decision(entry(segments, end=45, retention_bytes=200), now_ms=NOW)
    assert (decision.new_log_start, decision.reasons) == (20, ("retention.bytes",))
    assert (
        retention_decision(entry(segments, end=45, retention_bytes=610), now_ms=NOW).new_log_start
        is None
    )


def test_size_applies_after_time() -> None:
    segments = [(0, 100, OLD), (10, 100, NEW), (20, 100, NEW), (30, 10, NEW)]
    decision = retention_decision(
        entry(segments, end=35, retention_ms=1_000, retention_bytes=100), now_ms=NOW
    )
    assert decision.new_log_start == 20
    assert decision.reasons == ("retention.ms", "retention.bytes")


def test_unlimited_and_compact_only_topics_keep_everything() -> None:
    segments = [(0, 100, OLD), (10, 100, OLD), (20, 1, OLD)]
    assert retention_decision(entry(segments, end=25), now_ms=NOW).new_log_start is None
    compact = entry(segments, end=25, policy=("compact",), retention_ms=1, retention_bytes=1)
    assert retention_decision(compact, now_ms=NOW).new_log_start is None
    both = entry(segments, end=25, policy=("compact", "delete"), retention_ms=1)
    assert retention_decision(both, now_ms=NOW).new_log_start == 20


def test_compaction_picks_dirty_enough_partitions_dirtiest_first() -> None:
    def dirty(ratio: float, size: int = 100) -> dict[str, Any]:
        return {"dirty_bytes": size, "cleanable_bytes": 1000, "ratio": ratio}

    segments = [(0, 100, NEW), (10, 1, NEW)]
    entries = [
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.6), partition=0),
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.4), partition=1),
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.9), partition=2),
        entry(segments, end=15, policy=("compact", "delete"), dirty=dirty(0.7), partition=3),
        entry(segments, end=15, policy=("delete",), dirty=dirty(1.0), partition=4),
        entry(segments, end=15, policy=("compact",), dirty=dirty(1.0, 0), partition=5),
        entry(segments, end=15, policy=("compact",), dirty=None, partition=6),
    ]
    assert [c.partition for c in compaction_candidates(entries)] == [2, 3, 0]
    assert compaction_candidates(entries, max_partitions=1) == [
        CompactionCandidate(topic="t", partition=2, dirty_ratio=0.9, dirty_bytes=100)
    ]


def test_a_log_past_max_compaction_lag_is_compacted_whatever_its_ratio() -> None:
    """Kafka's ``needCompactionNow``: an overdue dirty record (``max.compaction.lag.ms``)
    makes the log a candidate below ``min.cleanable.dirty.ratio``, if anything is dirty."""

    def dirty(ratio: float, overdue_ms: int, size: int = 100) -> dict[str, Any]:
        return {
            "dirty_bytes": size,
            "cleanable_bytes": 1000,
            "ratio": ratio,
            "max_compaction_delay_ms": overdue_ms,
        }

    segments = [(0, 100, NEW), (10, 1, NEW)]
    entries = [
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.1, 5), partition=0),
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.1, 0), partition=1),
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.0, 5, size=0), partition=2),
        entry(segments, end=15, policy=("delete",), dirty=dirty(0.1, 5), partition=3),
        entry(segments, end=15, policy=("compact",), dirty=dirty(0.6, 0), partition=4),
    ]
    assert [c.partition for c in compaction_candidates(entries)] == [4, 0]

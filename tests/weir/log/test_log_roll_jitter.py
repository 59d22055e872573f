"""segment.jitter.ms: each segment rolls ``segment.ms`` minus its own random jitter.

Kafka draws the jitter per segment (when it is created, or loaded as the active one),
uniform in ``[0, min(segment.jitter.ms, segment.ms))``. The tests give the log a Random
whose draws they choose, so the roll time is exact.
"""

from __future__ import annotations

import random
from pathlib import Path

from weir.log.log import Log, LogConfig

from .conftest import START_MS, FakeClock, append, make_batch


class Draws(random.Random):
    """A Random whose ``randrange(n)`` returns the scripted values, recording each ``n``."""

    def __init__(self, *values: int) -> None:
        super().__init__(0)
        self.values = list(values)
        self.bounds: list[int] = []

    def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        (stop,) = args
        assert isinstance(stop, int)
        self.bounds.append(stop)
        return self.values.pop(0)


def _at(ms: int) -> bytes:
    return make_batch([b"v"], timestamps=[START_MS + ms])


def test_each_segment_rolls_segment_ms_minus_its_own_jitter(log_dir: Path) -> None:
    draws = Draws(400, 100)
    config = LogConfig(segment_ms=1000, segment_jitter_ms=600)
    log = Log.open(log_dir, config=config, time_ms=FakeClock(), jitter_random=draws)
    try:
        append(log, _at(0))
        append(log, _at(600))  # 600 ms waited: the first segment rolls after 1000 - 400
        assert len(log.segments) == 1
        append(log, _at(601))
        assert [s.base_offset for s in log.segments] == [0, 2]
        # The second segment drew 100: it rolls 900 ms after its first batch, not 600.
        append(log, _at(601 + 900))
        assert len(log.segments) == 2
        assert draws.bounds == [600, 600]  # min(segment.jitter.ms, segment.ms)
    finally:
        log.close()


def test_jitter_is_bounded_by_segment_ms_and_zero_draws_nothing(log_dir: Path) -> None:
    draws = Draws(999, 0)
    config = LogConfig(segment_ms=1000, segment_jitter_ms=10**9)
    log = Log.open(log_dir, config=config, time_ms=FakeClock(), jitter_random=draws)
    try:
        append(log, _at(0))
        append(log, _at(2))  # waited 2 > 1000 - 999
        assert len(log.segments) == 2
        assert draws.bounds == [1000, 1000]
    finally:
        log.close()
    unused = Draws()
    log = Log.open(
        log_dir, config=LogConfig(segment_ms=1000), time_ms=FakeClock(), jitter_random=unused
    )
    log.close()
    assert unused.bounds == []

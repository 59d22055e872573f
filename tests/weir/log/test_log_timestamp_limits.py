"""message.timestamp.before/after.max.ms (KIP-937) and the deprecated difference.max.ms.

With CreateTime, a batch holding a record more than ``before`` ms older or ``after`` ms newer
than the broker's clock is refused whole with INVALID_TIMESTAMP; records are judged one by
one (a record may be older than its batch's base timestamp). LogAppendTime topics and
records without a timestamp are never refused. ``difference.max.ms`` sets both limits while
they are left at their default, at topic and at broker level.
"""

from __future__ import annotations

import pytest

from weir.config import BrokerConfig, effective_topic_config
from weir.log.errors import InvalidTimestampError
from weir.log.log import LogConfig
from weir.metadata_view import log_config_of

from .conftest import LogFactory, append, make_batch

HOUR = 3_600_000


def _batch(*timestamps: int, codec: str = "none") -> bytes:
    return make_batch([b"v"] * len(timestamps), timestamps=timestamps, codec=codec)


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_a_record_too_far_before_the_clock_refuses_its_batch(
    open_log: LogFactory, codec: str
) -> None:
    log = open_log(LogConfig(message_timestamp_before_max_ms=HOUR))
    now = log.time_ms()
    append(log, _batch(now - HOUR, now, codec=codec))  # the edge is inside
    # The base timestamp is fine; the third record is one ms too old.
    late = _batch(now, now - 5, now - HOUR - 1, now, codec=codec)
    with pytest.raises(InvalidTimestampError, match=r"offset 2 is out of range") as caught:
        append(log, late)
    assert caught.value.error_code == 32  # INVALID_TIMESTAMP
    assert log.log_end_offset == 2


def test_a_record_too_far_after_the_clock_refuses_its_batch(open_log: LogFactory) -> None:
    log = open_log(LogConfig(message_timestamp_after_max_ms=HOUR))
    now = log.time_ms()
    append(log, _batch(now + HOUR, 0))  # long ago is fine: before is unbounded
    with pytest.raises(InvalidTimestampError, match=rf"within \[.*, {now + HOUR}\]"):
        append(log, _batch(now + HOUR + 1))
    assert log.log_end_offset == 2


def test_records_without_timestamp_and_log_append_time_topics_are_not_judged(
    open_log: LogFactory,
) -> None:
    log = open_log(LogConfig(message_timestamp_before_max_ms=0, message_timestamp_after_max_ms=0))
    append(log, _batch(-1, -1))
    log.update_config(
        LogConfig(
            message_timestamp_type="LogAppendTime",
            message_timestamp_before_max_ms=0,
            message_timestamp_after_max_ms=0,
        )
    )
    append(log, _batch(1, 2))
    assert log.log_end_offset == 4


def test_default_limits_accept_any_timestamp(open_log: LogFactory) -> None:
    log = open_log(LogConfig())
    append(log, _batch(0, 2**62))
    assert log.log_end_offset == 2


def _limits(broker: BrokerConfig, overrides: dict[str, str]) -> tuple[int, int]:
    config = log_config_of(effective_topic_config(broker, overrides))
    return config.message_timestamp_before_max_ms, config.message_timestamp_after_max_ms


def test_difference_max_ms_sets_both_limits_left_at_their_default() -> None:
    broker = BrokerConfig(broker_id=1)
    assert _limits(broker, {"message.timestamp.difference.max.ms": "1000"}) == (1000, 1000)
    assert _limits(
        broker,
        {"message.timestamp.difference.max.ms": "1000", "message.timestamp.after.max.ms": "5"},
    ) == (1000, 5)
    synonyms = BrokerConfig(
        broker_id=1,
        static={
            "log.message.timestamp.difference.max.ms": "700",
            "log.message.timestamp.before.max.ms": "300",
        },
    )
    assert _limits(synonyms, {}) == (300, 700)

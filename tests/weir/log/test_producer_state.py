"""Idempotent producers: duplicate, out-of-order and fenced batches, durable state."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir.log.log import Log, LogConfig
from weir.log.producer_state import (
    DuplicateBatch,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    ProducerStateManager,
)
from weir.protocol.records import parse_header

from .conftest import (
    START_MS,
    LogFactory,
    append,
    disk_headers,
    idempotent_batch,
    make_batch,
    payload,
)

PID = 4000


def header(epoch: int, seq: int, count: int = 1, pid: int = PID):
    return parse_header(idempotent_batch(pid, epoch, seq, count))


@pytest.fixture
def state(tmp_path: Path) -> ProducerStateManager:
    state = ProducerStateManager(tmp_path)
    offset = 0
    for seq in range(0, 12, 2):  # six batches of two records: seq 0..11, offsets 0..11
        state.update(header(1, seq, 2), offset)
        offset += 2
    return state


def test_unknown_producer_is_accepted_at_any_sequence(state: ProducerStateManager) -> None:
    assert state.check(header(0, 0, pid=1)) is None
    # Kafka >= 2.5 (KIP-360) accepts this: the producer's state may have expired.
    assert state.check(header(0, 77, pid=2)) is None


def test_next_sequence_in_the_same_epoch_is_accepted(state: ProducerStateManager) -> None:
    assert state.check(header(1, 12, 3)) is None


def test_retry_of_one_of_the_last_five_batches_is_a_duplicate(
    state: ProducerStateManager,
) -> None:
    assert state.check(header(1, 10, 2)) == DuplicateBatch(10, 11, START_MS + 1)
    assert state.check(header(1, 2, 2)) == DuplicateBatch(2, 3, START_MS + 1)


def test_retry_older_than_the_last_five_batches_is_out_of_order(
    state: ProducerStateManager,
) -> None:
    with pytest.raises(OutOfOrderSequenceError) as exc:
        state.check(header(1, 0, 2))
    assert exc.value.error_code == 45


def test_sequence_gap_is_out_of_order(state: ProducerStateManager) -> None:
    with pytest.raises(OutOfOrderSequenceError, match="sent sequence 13, expected 12"):
        state.check(header(1, 13))


def test_older_epoch_is_fenced(state: ProducerStateManager) -> None:
    with pytest.raises(InvalidProducerEpochError) as exc:
        state.check(header(0, 12))
    assert exc.value.error_code == 47


def test_new_epoch_must_start_at_sequence_zero(state: ProducerStateManager) -> None:
    assert state.check(header(2, 0)) is None
    with pytest.raises(OutOfOrderSequenceError, match="new epoch 2 at sequence 5"):
        state.check(header(2, 5))


def test_new_epoch_forgets_the_old_epochs_batches(state: ProducerStateManager) -> None:
    state.update(header(2, 0), 12)
    assert state.check(header(2, 1)) is None
    with pytest.raises(InvalidProducerEpochError):
        state.check(header(1, 10, 2))


def test_sequence_wraps_after_int32_max(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    state.update(header(0, 2**31 - 1), 0)
    assert state.check(header(0, 0)) is None


def test_several_batches_of_one_producer_in_one_payload_are_checked_in_order(
    state: ProducerStateManager,
) -> None:
    assert state.check_batches([header(1, 12, 2), header(1, 14, 1)]) is None
    with pytest.raises(OutOfOrderSequenceError):
        state.check_batches([header(1, 12, 2), header(1, 15, 1)])


def test_snapshot_round_trips_every_cached_batch(
    state: ProducerStateManager, tmp_path: Path
) -> None:
    state.map_end_offset = 12
    path = state.take_snapshot()
    assert path.name == "00000000000000000012.snapshot"
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_latest_snapshot(12) == 12
    assert loaded.producers[PID] == state.producers[PID]


def test_corrupt_snapshot_is_deleted_and_skipped(
    state: ProducerStateManager, tmp_path: Path
) -> None:
    state.map_end_offset = 4
    state.take_snapshot()
    state.map_end_offset = 12
    path = state.take_snapshot()
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load_latest_snapshot(100) == 4
    assert not path.exists()


# -- through the log ------------------------------------------------------------------------


def produce(log: Log, epoch: int, seq: int, count: int = 2):
    return append(log, idempotent_batch(PID, epoch, seq, count))


def test_duplicate_append_returns_the_original_offsets_and_writes_nothing(
    open_log: LogFactory,
) -> None:
    log = open_log()
    first = produce(log, 0, 0)
    append(log, make_batch(count=3))
    size = log.size_bytes
    retry = produce(log, 0, 0)
    assert retry.duplicate
    assert (retry.base_offset, retry.last_offset) == (first.base_offset, first.last_offset)
    assert log.size_bytes == size and log.log_end_offset == 5


def test_out_of_order_and_fenced_appends_are_rejected_without_writing(
    open_log: LogFactory,
) -> None:
    log = open_log()
    produce(log, 3, 0)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 3, 5)
    with pytest.raises(InvalidProducerEpochError):
        produce(log, 2, 2)
    assert log.log_end_offset == 2
    assert len(disk_headers(log)) == 1


def idempotence_survives(log: Log) -> None:
    """The state a reopened log must have after batches seq 0..5 (offsets 0..7)."""
    retry = produce(log, 0, 4)
    assert retry.duplicate and (retry.base_offset, retry.last_offset) == (6, 7)
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 0, 7)
    assert produce(log, 0, 6).base_offset == 8


def write_history(log: Log) -> None:
    produce(log, 0, 0)
    produce(log, 0, 2)
    append(log, make_batch(count=2))
    produce(log, 0, 4)


def test_producer_state_survives_close_and_reopen(open_log: LogFactory) -> None:
    log = open_log()
    write_history(log)
    log.close()
    assert (log.directory / "00000000000000000008.snapshot").exists()
    idempotence_survives(open_log())


def test_producer_state_survives_an_unclean_stop(open_log: LogFactory) -> None:
    log = open_log()
    write_history(log)
    log.close_handlers()  # no flush, no snapshot: the state comes from replaying the log
    assert log.producer_state.snapshot_offsets() == []
    idempotence_survives(open_log())


def test_producer_state_replays_from_the_snapshot_taken_at_roll(open_log: LogFactory) -> None:
    config = LogConfig(segment_bytes=300)
    log = open_log(config)
    write_history(log)
    assert len(log.segments) > 1
    log.flush()
    log.close_handlers()
    assert log.producer_state.snapshot_offsets()
    idempotence_survives(open_log(config, recovery_point=log.recovery_point))


def test_producer_state_is_rebuilt_after_truncation(open_log: LogFactory) -> None:
    log = open_log()
    write_history(log)
    log.truncate_to(6)  # the seq 4-5 batch is gone
    retry = produce(log, 0, 4)
    assert not retry.duplicate and retry.base_offset == 6


def test_multi_batch_payload_from_one_producer_is_appended(open_log: LogFactory) -> None:
    log = open_log()
    buf, batches = payload(idempotent_batch(PID, 0, 0, 2), idempotent_batch(PID, 0, 2, 3))
    result = log.append(buf, batches, leader_epoch=0)
    assert (result.base_offset, result.last_offset) == (0, 4)
    assert produce(log, 0, 5).base_offset == 5

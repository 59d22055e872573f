"""Transaction markers: Kafka's control record key and value, built and parsed."""

from __future__ import annotations

import struct

import pytest

from weir.protocol.batch_builder import build_batch, end_txn_marker_batch
from weir.protocol.control_records import EndTxnMarker, parse_end_txn_marker
from weir.protocol.inflate import iter_records
from weir.protocol.records import CONTROL_MASK, CorruptBatchError, validate_batches

CONTROL_TXN = CONTROL_MASK | 0x10


@pytest.mark.parametrize(("commit", "control_type"), [(True, 1), (False, 0)])
def test_a_built_marker_holds_kafkas_key_and_value(commit: bool, control_type: int) -> None:
    batch = end_txn_marker_batch(
        producer_id=77, producer_epoch=3, commit=commit, coordinator_epoch=12, timestamp_ms=5
    )
    ((_, header),) = validate_batches(batch)
    assert header.attributes == CONTROL_TXN
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, -1)
    (record,) = iter_records(bytes(batch))
    assert record.key == struct.pack(">hh", 0, control_type)
    assert record.value == struct.pack(">hi", 0, 12)
    assert parse_end_txn_marker(batch) == EndTxnMarker(commit=commit, coordinator_epoch=12)


def test_other_control_types_are_not_markers() -> None:
    leader_change = build_batch(
        [(struct.pack(">hh", 0, 2), b"\x00\x00")], timestamp_ms=0, attributes=CONTROL_MASK
    )
    assert parse_end_txn_marker(leader_change) is None


def test_a_longer_marker_value_is_read_for_its_coordinator_epoch() -> None:
    batch = build_batch(
        [(struct.pack(">hh", 0, 0), struct.pack(">hi", 1, 9) + b"\x00")],
        timestamp_ms=0,
        attributes=CONTROL_TXN,
        producer_id=1,
        producer_epoch=0,
    )
    assert parse_end_txn_marker(batch) == EndTxnMarker(commit=False, coordinator_epoch=9)


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        (b"\x00", b"", "not a ControlRecordType"),
        (struct.pack(">hh", 0, 1), b"\x00", "EndTxnMarker"),
    ],
)
def test_a_malformed_marker_is_corrupt(key: bytes, value: bytes, problem: str) -> None:
    batch = build_batch([(key, value)], timestamp_ms=0, attributes=CONTROL_TXN, producer_id=1)
    with pytest.raises(CorruptBatchError, match=problem):
        parse_end_txn_marker(batch)


def test_a_data_batch_is_not_parsed_as_a_marker() -> None:
    with pytest.raises(CorruptBatchError, match="not a control batch"):
        parse_end_txn_marker(build_batch([(b"k", b"v")], timestamp_ms=0))

"""Record batch headers: parsing, CRC checks, and the fields the broker stamps."""

from __future__ import annotations

import pytest

from tests.weir.log.conftest import make_batch
from weir.protocol.records import (
    CorruptBatchError,
    compute_crc,
    iter_batches,
    parse_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batches,
)


def test_header_fields_parse_and_crc_validates() -> None:
    batch = make_batch([b"a", b"bb", b"ccc"], base_timestamp=1000)
    header = parse_header(batch)
    assert header.magic == 2
    assert header.records_count == 3
    assert header.last_offset_delta == 2
    assert header.size == len(batch)
    assert compute_crc(batch, 0, len(batch)) == header.crc


def test_stamping_offset_and_epoch_keeps_crc_valid() -> None:
    batch = bytearray(make_batch([b"x"] * 5, base_timestamp=1))
    set_base_offset(batch, 0, 12345)
    set_partition_leader_epoch(batch, 0, 7)
    [(_, header)] = validate_batches(batch)
    assert header.base_offset == 12345
    assert header.partition_leader_epoch == 7
    assert header.next_offset == 12350


def test_log_append_time_rewrites_max_timestamp_and_crc() -> None:
    batch = bytearray(make_batch([b"x"], base_timestamp=5))
    set_log_append_time(batch, 0, len(batch), 99_999)
    [(_, header)] = validate_batches(batch)
    assert header.is_log_append_time
    assert header.max_timestamp == 99_999


def test_flipped_byte_fails_crc() -> None:
    batch = bytearray(make_batch([b"payload"], base_timestamp=1))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError, match="CRC"):
        validate_batches(batch)


def test_truncated_batch_and_wrong_magic_are_corrupt() -> None:
    batch = make_batch([b"payload"], base_timestamp=1)
    with pytest.raises(CorruptBatchError, match="truncated"):
        list(iter_batches(batch[:-3]))
    wrong_magic = bytearray(batch)
    wrong_magic[16] = 1
    with pytest.raises(CorruptBatchError, match="magic"):
        validate_batches(wrong_magic)
    with pytest.raises(CorruptBatchError):
        validate_batches(b"")


def test_concatenated_batches_iterate_with_positions() -> None:
    first = make_batch([b"a"], base_timestamp=1)
    second = make_batch([b"b", b"c"], base_timestamp=2)
    buf = first + second
    assert [pos for pos, _ in iter_batches(buf)] == [0, len(first)]

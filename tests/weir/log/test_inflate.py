"""weir.protocol.inflate: record decoding for every codec, checked against kio."""

from __future__ import annotations

import datetime
import io

import pytest
from kio.records.readers import read_batch
from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros, i8, i16, i32, i64

from weir.protocol.inflate import iter_offsets_and_timestamps, iter_records
from weir.protocol.records import CorruptBatchError, set_base_offset, set_log_append_time

from .conftest import COMPRESSORS, START_MS, make_batch

TIMESTAMPS = [START_MS + 5, START_MS, START_MS + 9, START_MS + 2, START_MS + 9]


@pytest.mark.parametrize("codec", sorted(COMPRESSORS))
def test_offsets_and_timestamps_are_decoded_for_every_codec(codec: str) -> None:
    batch = bytearray(make_batch(count=5, timestamps=TIMESTAMPS, codec=codec, value_size=300))
    set_base_offset(batch, 0, 1000)
    assert list(iter_offsets_and_timestamps(batch)) == [
        (1000 + i, ts) for i, ts in enumerate(TIMESTAMPS)
    ]


@pytest.mark.parametrize("codec", sorted(COMPRESSORS))
def test_iter_records_decodes_keys_values_and_nulls(codec: str) -> None:
    batch = make_batch([b"v0", b"", b"v2"], keys=[b"k0", None, b"k2"], codec=codec)
    records = list(iter_records(batch))
    assert [(r.offset, r.key, r.value) for r in records] == [
        (0, b"k0", b"v0"),
        (1, None, b""),
        (2, b"k2", b"v2"),
    ]


def test_log_append_time_batches_give_every_record_the_max_timestamp() -> None:
    batch = bytearray(make_batch(count=3, timestamps=[1, 2, 3]))
    set_log_append_time(batch, 0, len(batch), 777)
    assert [ts for _, ts in iter_offsets_and_timestamps(batch)] == [777, 777, 777]


def test_test_encoder_agrees_with_kio_reader() -> None:
    batch = make_batch([b"a", b"bb"], keys=[b"k", None], timestamps=[START_MS, START_MS + 1000])
    decoded, size = read_batch(batch, 0)
    assert size == len(batch)
    assert [(r.key, r.value) for r in decoded.records] == [(b"k", b"a"), (None, b"bb")]


def test_batches_written_by_kio_are_decoded() -> None:
    ts = TZAwareMicros.parse(datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC))
    new = NewRecordBatch(
        producer_id=i64(-1),
        producer_epoch=i16(-1),
        base_sequence=i32(-1),
        attributes=i16(0),
        records=tuple(
            Record(
                attributes=i8(0),
                timestamp=ts,
                offset=i64(i),
                key=None,
                value=b"value-%d" % i,
                headers=(),
            )
            for i in range(3)
        ),
    )
    buf = io.BytesIO()
    write_new_batch(buf, new)
    records = list(iter_records(buf.getvalue()))
    expected_ts = int(ts.timestamp() * 1000)
    assert [(r.offset, r.timestamp, r.value) for r in records] == [
        (i, expected_ts, b"value-%d" % i) for i in range(3)
    ]


def test_undecompressable_records_raise_corrupt_batch_error() -> None:
    batch = bytearray(make_batch(count=2, codec="gzip"))
    batch[70:80] = b"\xff" * 10
    with pytest.raises(CorruptBatchError, match="codec 1"):
        list(iter_offsets_and_timestamps(batch))


def test_truncated_records_raise_corrupt_batch_error() -> None:
    batch = make_batch(count=2)
    # Claim more records than the batch holds.
    lying = bytearray(batch)
    lying[57:61] = (5).to_bytes(4, "big")
    with pytest.raises(CorruptBatchError, match="truncated"):
        list(iter_offsets_and_timestamps(lying))

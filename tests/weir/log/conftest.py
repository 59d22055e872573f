"""Helpers for log tests: a fake clock, a v2 batch encoder with every codec, log fixtures.

The encoder is deliberately independent of ``weir.protocol.inflate`` (and is checked
against kio's reader in ``test_inflate``), so the log's record decoding is tested against a
second implementation rather than itself.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import cramjam
import crc32c
import lz4.frame
import pytest
import zstandard

from weir.log.index_file import IndexFile
from weir.log.log import AppendResult, FileSlice, Log, LogConfig
from weir.log.offset_index import OffsetIndex
from weir.log.segment import INDEX_SUFFIX, TIME_INDEX_SUFFIX, segment_file_stem
from weir.log.time_index import TimeIndex
from weir.protocol.batch_builder import blob, zigzag
from weir.protocol.records import BatchHeader, iter_batches, validate_batches

START_MS = 1_700_000_000_000


class FakeClock:
    """A clock tests move by hand; ``Log`` only ever calls it."""

    def __init__(self, now: int = START_MS) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    body = bytearray(b"\x00")
    body += zigzag(timestamp_delta) + zigzag(offset_delta) + blob(key) + blob(value)
    body += zigzag(len(headers))
    for name, header_value in headers:
        body += blob(name.encode()) + blob(header_value)
    return zigzag(len(body)) + bytes(body)


def xerial_snappy(data: bytes, block: int = 32 * 1024) -> bytes:
    """The framing the Java client's SnappyOutputStream writes."""
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for start in range(0, len(data), block):
        chunk = bytes(cramjam.snappy.compress_raw(data[start : start + block]))
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)


def zstd_streamed(data: bytes) -> bytes:
    """A zstd frame without a content size, as streaming compressors write it."""
    buf = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(buf, closefd=False) as writer:
        writer.write(data)
    return buf.getvalue()


COMPRESSORS: dict[str, tuple[int, Callable[[bytes], bytes]]] = {
    "none": (0, bytes),
    "gzip": (1, gzip.compress),
    "snappy": (2, lambda d: bytes(cramjam.snappy.compress_raw(d))),
    "snappy-xerial": (2, xerial_snappy),
    "lz4": (3, lz4.frame.compress),
    "zstd": (4, zstd_streamed),
}


def make_batch(
    values: Sequence[bytes] | None = None,
    *,
    count: int = 1,
    value_size: int = 10,
    timestamps: Sequence[int] | None = None,
    base_timestamp: int = START_MS,
    codec: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
    leader_epoch: int = -1,
    keys: Sequence[bytes | None] | None = None,
) -> bytes:
    """Encode a v2 batch the way a producer does (offset deltas 0..n-1)."""
    if values is None:
        values = [bytes([65 + i % 26]) * value_size for i in range(count)]
    n = len(values)
    if timestamps is None:
        timestamps = [base_timestamp + i for i in range(n)]
    if keys is None:
        keys = [None] * n
    first_ts = timestamps[0]
    records = b"".join(
        encode_record(i, ts - first_ts, key, value)
        for i, (ts, key, value) in enumerate(zip(timestamps, keys, values, strict=True))
    )
    codec_id, compress = COMPRESSORS[codec]
    body = compress(records)
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            codec_id,
            n - 1,
            first_ts,
            max(timestamps),
            producer_id,
            producer_epoch,
            base_sequence,
            n,
        )
        + body
    )
    batch_length = 4 + 1 + 4 + len(after_crc)
    head = struct.pack(
        ">qiibI", base_offset, batch_length, leader_epoch, 2, crc32c.crc32c(after_crc)
    )
    return head + after_crc


def idempotent_batch(pid: int, epoch: int, seq: int, count: int = 1, **kw: object) -> bytes:
    return make_batch(
        count=count,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        **kw,  # type: ignore[arg-type]
    )


def payload(*batches: bytes) -> tuple[bytearray, list[tuple[int, BatchHeader]]]:
    buf = bytearray(b"".join(batches))
    return buf, validate_batches(buf)


def append(log: Log, *batches: bytes, epoch: int = 0) -> AppendResult:
    buf, parsed = payload(*batches)
    return log.append(buf, parsed, leader_epoch=epoch)


def slice_bytes(slices: Sequence[FileSlice]) -> bytes:
    return b"".join(os.pread(s.file.fileno(), s.size, s.position) for s in slices)


def read_headers(slices: Sequence[FileSlice]) -> list[BatchHeader]:
    """Headers of the batches the slices carry; fails unless they are whole, valid batches."""
    return [header for _, header in iter_batches(slice_bytes(slices))]


def disk_headers(log: Log) -> list[BatchHeader]:
    """Every batch on disk, CRC-checked."""
    headers: list[BatchHeader] = []
    for segment in log.segments:
        headers += [h for _, h in iter_batches(segment.log_path.read_bytes())]
    return headers


def corrupt_batch_at(log_path: Path, position: int) -> None:
    """Flip a byte inside the records of the batch at ``position`` (its CRC no longer fits)."""
    with log_path.open("r+b") as f:
        f.seek(position + 70)
        byte = f.read(1)
        f.seek(position + 70)
        f.write(bytes([byte[0] ^ 0xFF]))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


class LogFactory:
    """Opens logs on one directory and closes whatever is still open at the end."""

    def __init__(self, directory: Path, clock: FakeClock) -> None:
        self.directory = directory
        self.clock = clock
        self.opened: list[Log] = []

    def __call__(self, config: LogConfig | None = None, **kwargs: int) -> Log:
        log = Log.open(self.directory, config=config or LogConfig(), time_ms=self.clock, **kwargs)
        self.opened.append(log)
        return log

    def close_all(self) -> None:
        for log in self.opened:
            if not log.closed:
                log.close()


@pytest.fixture
def open_log(log_dir: Path, clock: FakeClock) -> Iterator[LogFactory]:
    factory = LogFactory(log_dir, clock)
    yield factory
    factory.close_all()


IndexT = TypeVar("IndexT", bound=IndexFile)
_INDEX_SUFFIXES: dict[type[IndexFile], str] = {
    OffsetIndex: INDEX_SUFFIX,
    TimeIndex: TIME_INDEX_SUFFIX,
}


@pytest.fixture
def new_index(tmp_path: Path) -> Iterator[Callable[[type[IndexT], int, int], IndexT]]:
    """Creates index files named as Kafka names them (``<base>.index``); closes them after."""
    opened: list[IndexFile] = []

    def create(kind: type[IndexT], base_offset: int, max_index_size: int) -> IndexT:
        path = tmp_path / (segment_file_stem(base_offset) + _INDEX_SUFFIXES[kind])
        index = kind(path, base_offset, max_index_size)
        opened.append(index)
        return index

    yield create
    for index in opened:
        index.close()

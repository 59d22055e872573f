"""Deflating record batches: compress a records section and frame a v2 batch around it.

Theory of operation
-------------------
The produce and fetch paths keep batches as the producer wrote them. Two places write a
batch's records section anew: the log cleaner (a batch that lost records is recompressed
with its own codec) and the leader's append when the topic's ``compression.type`` names a
codec other than the producer's (Kafka's ``LogValidator`` recompression). Both go through
``frame_batch``, which keeps every header field it is not told to change and computes the
new ``batchLength`` and CRC-32C.

Recompression (``recompress_batches``) decompresses a batch's records section and
compresses the same bytes with the topic's codec: the records are not re-encoded, so their
offset and timestamp deltas stay valid against the unchanged ``baseOffset`` and
``baseTimestamp``; ``maxTimestamp``, the producer id, epoch and base sequence, the leader
epoch and the other attribute bits are kept as they were. A batch already in the topic's
codec is not touched, so ``compression.type=producer`` (the default) never decodes anything.

Framings are those the Java client writes, which every client reads: gzip; snappy in the
xerial block framing (``\\x82SNAPPY\\x00``, version 1, blocks of 32 KiB with int32 lengths),
or raw when the cleaner rewrites a raw-snappy batch; the LZ4 frame format with independent
64 KiB blocks; a zstd frame.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import cramjam
import crc32c
import lz4.frame
import zstandard

from weir.protocol.inflate import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
    records_section,
)
from weir.protocol.records import (
    COMPRESSION_MASK,
    BatchHeader,
    CorruptBatchError,
    parse_header,
)

__all__ = [
    "CODEC_OF_COMPRESSION_TYPE",
    "compress",
    "frame_batch",
    "is_xerial_snappy",
    "recompress_batches",
]

# ``compression.type`` -> the codec the broker writes; ``producer`` keeps the producer's.
CODEC_OF_COMPRESSION_TYPE: Mapping[str, int] = {
    "uncompressed": CODEC_NONE,
    "gzip": CODEC_GZIP,
    "snappy": CODEC_SNAPPY,
    "lz4": CODEC_LZ4,
    "zstd": CODEC_ZSTD,
}

_HEAD = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
_AFTER_CRC = struct.Struct(">hiqqqhii")
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_BLOCK = 32 * 1024


def _xerial_snappy(data: bytes) -> bytes:
    """Snappy in the block framing the Java client writes (magic, version 1, blocks)."""
    out = bytearray(_XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def is_xerial_snappy(body: bytes | memoryview) -> bool:
    """Whether a snappy records section uses the xerial framing (else it is raw)."""
    return bytes(body[: len(_XERIAL_MAGIC)]) == _XERIAL_MAGIC


def compress(codec: int, data: bytes, *, xerial: bool = True) -> bytes:
    """``data`` (a records section) compressed with ``codec``; ``xerial``: snappy framing."""
    if codec == CODEC_NONE:
        return data
    if codec == CODEC_GZIP:
        return bytes(cramjam.gzip.compress(data))
    if codec == CODEC_SNAPPY:
        return _xerial_snappy(data) if xerial else bytes(cramjam.snappy.compress_raw(data))
    if codec == CODEC_LZ4:
        # The frame the Java client writes: independent 64 KB blocks, no content size or
        # checksum, which every client's LZ4 reader accepts.
        return lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    if codec == CODEC_ZSTD:
        return zstandard.ZstdCompressor().compress(data)
    raise CorruptBatchError(f"unknown compression codec {codec}")


def frame_batch(
    header: BatchHeader,
    body: bytes,
    *,
    attributes: int,
    records_count: int,
    max_timestamp: int,
) -> bytes:
    """A v2 batch: ``header``'s other fields around a (compressed) records ``body``."""
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            header.last_offset_delta,
            header.base_timestamp,
            max_timestamp,
            header.producer_id,
            header.producer_epoch,
            header.base_sequence,
            records_count,
        )
        + body
    )
    head = _HEAD.pack(
        header.base_offset,
        len(after_crc) + 9,  # partitionLeaderEpoch + magic + crc
        header.partition_leader_epoch,
        header.magic,
        crc32c.crc32c(after_crc),
    )
    return head + after_crc


def recompress_batches(
    payload: bytes | bytearray | memoryview,
    batches: Sequence[tuple[int, BatchHeader]],
    codec: int,
) -> tuple[bytearray, list[tuple[int, BatchHeader]]]:
    """The payload with every batch not in ``codec`` recompressed to it, and its batches.

    Raises CorruptBatchError when a records section does not decompress.
    """
    out = bytearray()
    rebuilt: list[tuple[int, BatchHeader]] = []
    view = memoryview(payload)
    for position, header in batches:
        start = len(out)
        if header.compression == codec:
            out += view[position : position + header.size]
        else:
            records = records_section(view, header, position)
            out += frame_batch(
                header,
                compress(codec, records),
                attributes=(header.attributes & ~COMPRESSION_MASK) | codec,
                records_count=header.records_count,
                max_timestamp=header.max_timestamp,
            )
        rebuilt.append((start, parse_header(out, start)))
    return out, rebuilt

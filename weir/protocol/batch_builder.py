"""Encoding v2 record batches for the records the broker writes itself.

The broker never re-encodes clients' batches; it only writes batches of its own: records of
internal topics (the group coordinator's ``__consumer_offsets`` records), with no producer
id, and transaction markers (``end_txn_marker_batch``: one control record, the producer id
and epoch of the transaction it ends). They are small, so they go uncompressed, every
record stamped with the same timestamp.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from weir.protocol.control_records import (
    ABORT,
    COMMIT,
    encode_control_key,
    encode_end_txn_marker_value,
)
from weir.protocol.records import CONTROL_MASK, TRANSACTIONAL_MASK

__all__ = ["blob", "build_batch", "end_txn_marker_batch", "zigzag"]

_AFTER_CRC = struct.Struct(">hiqqqhii")
_HEAD = struct.Struct(">qiibI")
NO_PRODUCER_ID = -1


def zigzag(value: int) -> bytes:
    """A zigzag varint, as record fields use."""
    encoded = (value << 1) ^ (value >> 63)  # zigzag
    out = bytearray()
    while True:
        byte = encoded & 0x7F
        encoded >>= 7
        if encoded:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def blob(data: bytes | None) -> bytes:
    """A length-prefixed (varint) byte string; length -1 for null."""
    return zigzag(-1) if data is None else zigzag(len(data)) + data


def _record(offset_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    # attributes, timestampDelta 0, offsetDelta, key, value, no headers
    body = b"\x00" + zigzag(0) + zigzag(offset_delta) + blob(key) + blob(value) + zigzag(0)
    return zigzag(len(body)) + body


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamp_ms: int,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
) -> bytearray:
    """One uncompressed magic-v2 batch holding ``(key, value)`` records (base offset 0).

    ``attributes`` defaults to no compression, CreateTime, not transactional; the base
    sequence is always -1 (the broker's own batches are never deduplicated)."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    body = b"".join(_record(i, key, value) for i, (key, value) in enumerate(records))
    after_crc = (
        _AFTER_CRC.pack(
            attributes,
            len(records) - 1,
            timestamp_ms,
            timestamp_ms,
            producer_id,
            producer_epoch,
            -1,
            len(records),
        )
        + body
    )
    head = _HEAD.pack(0, 4 + 1 + 4 + len(after_crc), -1, 2, crc32c.crc32c(after_crc))
    return bytearray(head + after_crc)


def end_txn_marker_batch(
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytearray:
    """A COMMIT or ABORT control batch, as Kafka's leader writes one for WriteTxnMarkers
    (see ``weir.protocol.control_records`` for the record's key and value)."""
    key = encode_control_key(COMMIT if commit else ABORT)
    value = encode_end_txn_marker_value(coordinator_epoch)
    return build_batch(
        [(key, value)],
        timestamp_ms=timestamp_ms,
        attributes=CONTROL_MASK | TRANSACTIONAL_MASK,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )

"""Transaction markers: the control records that commit or abort a transaction.

Theory of operation
-------------------
A transaction ends on each of its partitions with a *control batch* (attributes bit 5 set,
plus the transactional bit 4) written by the partition leader on the coordinator's behalf
(WriteTxnMarkers). The batch carries the producer id and epoch of the transaction, base
sequence -1 and exactly one record, whose key and value are Kafka's (big-endian)::

    key   ControlRecordType  version int16 = 0, type int16 (0 = ABORT, 1 = COMMIT)
    value EndTxnMarker       version int16 = 0, coordinatorEpoch int32

Other control types exist (KRaft's LEADER_CHANGE, snapshot headers, ...) but never carry a
producer id; ``parse_end_txn_marker`` answers None for them, as for a control batch whose
record the cleaner removed. A value longer than six bytes (a newer marker version) is read
for its coordinator epoch, as Kafka's ``EndTransactionMarker.deserialize`` does.

Only the log looks inside a control batch, and only because it must know commit or abort
and the coordinator epoch; ordinary batches are never decoded on the produce path.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from weir.protocol.inflate import iter_records
from weir.protocol.records import CorruptBatchError, parse_header

__all__ = [
    "ABORT",
    "COMMIT",
    "CONTROL_RECORD_KEY_VERSION",
    "END_TXN_MARKER_VERSION",
    "EndTxnMarker",
    "encode_control_key",
    "encode_end_txn_marker_value",
    "parse_end_txn_marker",
]

ABORT = 0
COMMIT = 1
CONTROL_RECORD_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class EndTxnMarker:
    """What a COMMIT or ABORT control record says."""

    commit: bool
    coordinator_epoch: int

    @property
    def control_type(self) -> int:
        return COMMIT if self.commit else ABORT


def encode_control_key(control_type: int) -> bytes:
    """The ControlRecordType key of a control record."""
    return _KEY.pack(CONTROL_RECORD_KEY_VERSION, control_type)


def encode_end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """The EndTxnMarker value of a COMMIT/ABORT control record."""
    return _VALUE.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def parse_end_txn_marker(
    batch: bytes | bytearray | memoryview, pos: int = 0
) -> EndTxnMarker | None:
    """The marker of the control batch at ``pos``; None when it holds no COMMIT/ABORT record.

    Raises CorruptBatchError when the record's key or value is not Kafka's layout.
    """
    header = parse_header(batch, pos)
    if not header.is_control:
        raise CorruptBatchError(f"batch at offset {header.base_offset} is not a control batch")
    for record in iter_records(batch, pos):
        key, value = record.key, record.value
        if key is None or len(key) < _KEY.size:
            raise CorruptBatchError(
                f"control record at offset {record.offset} has a key of "
                f"{0 if key is None else len(key)} bytes, not a ControlRecordType"
            )
        _, control_type = _KEY.unpack_from(key)
        if control_type not in (ABORT, COMMIT):
            return None
        if value is None or len(value) < _VALUE.size:
            raise CorruptBatchError(
                f"transaction marker at offset {record.offset} has a value of "
                f"{0 if value is None else len(value)} bytes, not an EndTxnMarker"
            )
        _, coordinator_epoch = _VALUE.unpack_from(value)
        return EndTxnMarker(commit=control_type == COMMIT, coordinator_epoch=coordinator_epoch)
    return None

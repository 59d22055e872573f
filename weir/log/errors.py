"""Errors raised by the log layer, each carrying the Kafka error code the broker answers with.

The broker translates them in one place: ``ErrorCode(exc.error_code)``. Errors that only
happen on the broker's own disk (corrupt files it cannot repair, checkpoints it cannot
parse) map to KAFKA_STORAGE_ERROR; the rest are the client-visible codes Kafka uses.
"""

from __future__ import annotations

from typing import ClassVar

from kio.schema.errors import ErrorCode

__all__ = [
    "CheckpointError",
    "CorruptIndexError",
    "InvalidRecordError",
    "KafkaStorageError",
    "LogError",
    "OffsetOutOfRangeError",
    "RecordBatchTooLargeError",
    "RecordTooLargeError",
    "UnexpectedAppendOffsetError",
]


class LogError(Exception):
    """Base of every error the log layer raises on purpose."""

    error_code: ClassVar[ErrorCode] = ErrorCode.unknown_server_error


class OffsetOutOfRangeError(LogError):
    """A read or DeleteRecords offset outside [log start offset, LEO]."""

    error_code = ErrorCode.offset_out_of_range


class RecordTooLargeError(LogError):
    """A batch is larger than ``max.message.bytes`` (MESSAGE_TOO_LARGE)."""

    error_code = ErrorCode.message_too_large


class RecordBatchTooLargeError(LogError):
    """A produce payload is larger than ``segment.bytes`` (RECORD_LIST_TOO_LARGE)."""

    error_code = ErrorCode.record_list_too_large


class InvalidRecordError(LogError):
    """A batch whose header contradicts itself (e.g. record count vs. offset delta)."""

    error_code = ErrorCode.invalid_record


class InvalidTimestampError(LogError):
    """A CreateTime record too far before or after the broker's clock (INVALID_TIMESTAMP)."""

    error_code = ErrorCode.invalid_timestamp


class UnexpectedAppendOffsetError(LogError):
    """A follower append whose offsets go backwards relative to the LEO."""

    error_code = ErrorCode.unknown_server_error


class KafkaStorageError(LogError):
    """The disk failed us (write error, unreadable segment); the partition needs attention."""

    error_code = ErrorCode.kafka_storage_error


class CorruptIndexError(KafkaStorageError):
    """An index file failed its sanity check; recovery rebuilds it from the log."""


class CheckpointError(KafkaStorageError, ValueError):
    """A checkpoint file could not be parsed; the message names the file and the line."""

"""Kafka's log layer: partition directories of segments, indexes and checkpoints.

``Log`` is the entry point (one per partition); the other modules are its parts, each
named after the Kafka class it mirrors: ``LogSegment``, ``OffsetIndex``, ``TimeIndex``,
``LeaderEpochCache``, ``ProducerStateManager``, ``TransactionIndex``, the checkpoint files
and the loader that recovers a directory after a crash, and the ``cleaner`` that compacts
a log by key.
"""

from weir.log.cleaner import (
    CleanAbortedError,
    CleanStats,
    PreparedClean,
    cleanable_range,
    commit_clean,
    dirty_ratio,
    max_compaction_delay,
    prepare_clean,
)
from weir.log.errors import LogError, OffsetOutOfRangeError
from weir.log.log import AbortedTxn, ActiveProducer, AppendResult, FileSlice, Log, LogConfig

__all__ = [
    "AbortedTxn",
    "ActiveProducer",
    "AppendResult",
    "CleanAbortedError",
    "CleanStats",
    "FileSlice",
    "Log",
    "LogConfig",
    "LogError",
    "OffsetOutOfRangeError",
    "PreparedClean",
    "cleanable_range",
    "commit_clean",
    "dirty_ratio",
    "max_compaction_delay",
    "prepare_clean",
]

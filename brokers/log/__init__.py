"""Kafka's log layer: partition directories of segments, indexes and checkpoints.

``Log`` is the entry point (one per partition); the other modules are its parts, each
named after the Kafka class it mirrors: ``LogSegment``, ``OffsetIndex``, ``TimeIndex``,
``LeaderEpochCache``, ``ProducerStateManager``, the checkpoint files and the loader that
recovers a directory after a crash.
"""

from brokers.log.errors import LogError, OffsetOutOfRangeError
from brokers.log.log import AppendResult, FileSlice, Log, LogConfig

__all__ = ["AppendResult", "FileSlice", "Log", "LogConfig", "LogError", "OffsetOutOfRangeError"]

"""Kafka's checkpoint files: small text files replaced atomically.

Disk format (every checkpoint Kafka writes)::

    0                   version
    2                   number of entries
    orders 0 1500       one entry per line, fields separated by one space
    orders 1 1320

Offset checkpoints (``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``
in the root of a data directory) hold ``topic partition offset`` entries; the leader-epoch
checkpoint of a partition holds ``epoch startOffset`` entries (see ``leader_epoch``).

Writes go to ``<name>.tmp``, are fsynced, renamed over the old file and the directory is
fsynced, so a crash leaves either the old or the new checkpoint, never a mix. Reads are
strict and name the file and line of anything they cannot parse (``CheckpointError``, a
``ValueError``); a missing file reads as empty.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from weir.log.errors import CheckpointError

__all__ = [
    "LOG_START_OFFSET_CHECKPOINT_FILE",
    "RECOVERY_POINT_CHECKPOINT_FILE",
    "TopicPartition",
    "fsync_directory",
    "read_checkpoint",
    "read_offset_checkpoint",
    "write_checkpoint",
    "write_offset_checkpoint",
]

RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
CHECKPOINT_VERSION = 0


@dataclass(frozen=True, slots=True)
class TopicPartition:
    """A topic name and partition index; the partition directory is ``<topic>-<partition>``."""

    topic: str
    partition: int

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def from_dir_name(cls, name: str) -> TopicPartition:
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
        return cls(topic, int(partition))


def fsync_directory(directory: Path) -> None:
    """Make renames, creations and deletions inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(
    path: Path, entries: Sequence[str], *, version: int = CHECKPOINT_VERSION
) -> None:
    """Atomically replace ``path`` with ``version``, the entry count and ``entries``."""
    text = "".join([f"{version}\n{len(entries)}\n", *(f"{line}\n" for line in entries)])
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(text.encode("utf-8"))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def read_checkpoint(
    path: Path, *, fields: int, version: int = CHECKPOINT_VERSION
) -> list[list[str]]:
    """The entries of ``path``, each split into exactly ``fields`` fields; [] if missing."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"cannot read checkpoint file {path}: {exc}") from exc
    lines = text.splitlines()
    if len(lines) < 2:
        raise CheckpointError(f"checkpoint file {path} is truncated: no version and count lines")
    if lines[0].strip() != str(version):
        raise CheckpointError(
            f"checkpoint file {path} line 1: unsupported version {lines[0].strip()!r}, "
            f"expected {version}"
        )
    count_text = lines[1].strip()
    if not count_text.isdigit():
        raise CheckpointError(f"checkpoint file {path} line 2: bad entry count {count_text!r}")
    count = int(count_text)
    body = [line for line in lines[2:] if line.strip()]
    if len(body) != count:
        raise CheckpointError(
            f"checkpoint file {path} declares {count} entries but holds {len(body)}"
        )
    entries = []
    for number, line in enumerate(body, start=3):
        parts = line.split()
        if len(parts) != fields:
            raise CheckpointError(
                f"checkpoint file {path} line {number}: expected {fields} fields, got {line!r}"
            )
        entries.append(parts)
    return entries


def _int_field(path: Path, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise CheckpointError(f"checkpoint file {path}: {what} {value!r} is not a number") from None


def write_offset_checkpoint(path: Path, offsets: Mapping[tuple[str, int], int]) -> None:
    """Write ``{(topic, partition): offset}`` as a Kafka offset checkpoint."""
    entries = [
        f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())
    ]
    write_checkpoint(path, entries)


def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Read a Kafka offset checkpoint as ``{(topic, partition): offset}``; {} if missing."""
    result: dict[tuple[str, int], int] = {}
    for topic, partition, offset in read_checkpoint(path, fields=3):
        key = (topic, _int_field(path, partition, "partition"))
        result[key] = _int_field(path, offset, f"offset of {topic}-{partition}")
    return result

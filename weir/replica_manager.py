"""The partitions this broker hosts, kept in step with the cluster metadata.

Theory of operation
-------------------
The metadata image says which partitions have a replica on this broker, who leads them and
at which leader epoch. ``reconcile`` turns that into local state: it opens (or creates) the
log of every assigned partition, updates leadership and configs, and closes and deletes the
logs of topics that were deleted. A partition directory that metadata does not know about is
left alone (and logged): losing data because Redis was reset would be worse than a stray
directory.

Kafka's checkpoint files live in the data directory root: ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint`` and ``replication-offset-checkpoint`` (high watermarks); they
are written periodically and on shutdown, and read at start so recovery only rescans what may
not have reached the disk and a restarted replica knows its last HW.

A partition whose log cannot be opened (an unreadable file, an error the loader could not
repair: ``LogLoader`` truncates what it can, so what reaches here is a disk or a directory
it cannot trust), or whose disk fails while it runs (an append, a read or a truncation
raised ``KafkaStorageError``: ENOSPC, EIO, EROFS, EFBIG, a corrupt batch found before it
was served; see ``Partition``), goes **offline on this broker**: one error line names it and
the cause, it leaves the hosted partitions (a leader's waiting ``acks=all`` produces and
parked fetches wake and fail over; handlers answer KAFKA_STORAGE_ERROR, as Kafka does for a
replica on an offline log directory; the fetcher stops following it) and ``on_offline`` is
called, so the broker reports it to the controller (``BrokerRegistration.report_offline``),
which moves its leadership and ISR to the other replicas. It is not retried until the
broker restarts. A failed log keeps its files open (a fetch response being sent from them
still completes) and is closed without a flush or a clean-shutdown marker, so the next
start recovers its tail; its checkpoint entries are kept.

Kafka takes the whole log directory offline on such an error (and stops the broker when
none is left). Weir has one data directory per broker, so that would mean every partition;
it takes only the failing partition offline instead: other partitions on a disk that is
full fail on their own next write and follow, while those on a disk with one bad region
keep serving. ``offline_partitions`` lists the offline partitions with their causes.

A checkpoint file that cannot be read does not stop the broker: one warning names it and
what is assumed instead. Without the recovery points every log is CRC-scanned from its
start, clean-shutdown markers notwithstanding (the disk lied about one file, so the markers
are not trusted either); without the log starts each log starts at its first segment; without
the high watermarks a replica learns its HW from the leader again.

Logs are opened (loaded and recovered) on ``num.recovery.threads.per.data.dir`` threads, as
Kafka's ``LogManager.loadLogs`` does: reading, CRC-32C checks and index rebuilds release the
GIL, so N threads recover N logs at once. Closing at shutdown uses the same pool.

``cleaner-offset-checkpoint`` is Kafka's log cleaner checkpoint: per compacted partition, the
first dirty offset (everything below it was compacted). It is written whenever a clean
finishes or retention moves a log start (housekeeping), and read at start; an entry outside
``[log start, LEO]`` (the log was truncated or deleted from below) counts as the log start.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from weir.log.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from weir.log.errors import KafkaStorageError
from weir.log.log import Log, LogConfig
from weir.partition import Partition

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["Assignment", "ReplicaManager", "RoleChanges"]

log = logging.getLogger("weir.replicas")

RECOVERY_POINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_FILE = "log-start-offset-checkpoint"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
CLEANER_OFFSET_FILE = "cleaner-offset-checkpoint"


@dataclass(frozen=True, slots=True)
class Assignment:
    """One partition that metadata places on this broker."""

    topic: str
    index: int
    topic_id: str
    leader: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RoleChanges:
    """What ``reconcile`` changed: partitions to (re)start following, and to stop."""

    follow: tuple[Partition, ...]
    unfollow: tuple[tuple[str, int], ...]


class ReplicaManager:
    """Local partitions by (topic, index)."""

    def __init__(
        self,
        *,
        broker_id: int,
        data_dir: Path,
        time_ms: Callable[[], int],
        log_config_for: Callable[[str], LogConfig],
        on_offline: Callable[[tuple[str, int]], None] | None = None,
        recovery_threads: Callable[[], int] = lambda: 1,
    ) -> None:
        self.broker_id = broker_id
        self._on_offline = on_offline
        self.data_dir = data_dir
        self._time_ms = time_ms
        self._log_config_for = log_config_for
        # num.recovery.threads.per.data.dir, read each time logs are opened (it is dynamic).
        self._recovery_threads = recovery_threads
        self._partitions: dict[tuple[str, int], Partition] = {}
        # Partitions whose log failed to open, with why; see the module docstring.
        self._offline: dict[tuple[str, int], str] = {}
        # Replicas whose disk failed while running: closed at shutdown (module docstring).
        self._failed: dict[tuple[str, int], Partition] = {}
        data_dir.mkdir(parents=True, exist_ok=True)
        recovery_points = self._read_checkpoint(
            RECOVERY_POINT_FILE,
            "CRC-scanning every log from its start, clean-shutdown markers notwithstanding",
        )
        # None: unreadable, so the logs opened at this start distrust their clean markers.
        self._distrust_clean_markers = recovery_points is None
        self._recovery_points = recovery_points or {}
        self._log_starts = (
            self._read_checkpoint(LOG_START_FILE, "each log starts at its first segment") or {}
        )
        self._high_watermarks = (
            self._read_checkpoint(
                HIGH_WATERMARK_FILE, "high watermarks are learned from the leaders again"
            )
            or {}
        )
        self._cleaner_offsets = (
            self._read_checkpoint(
                CLEANER_OFFSET_FILE, "compacted logs are cleaned from their start"
            )
            or {}
        )

    def _read_checkpoint(self, name: str, instead: str) -> dict[tuple[str, int], int] | None:
        """The checkpoint's entries ({} when there is none), or None when it is unreadable,
        after one warning saying what is done ``instead``."""
        path = self.data_dir / name
        if not path.exists():
            return {}
        try:
            return read_offset_checkpoint(path)
        except ValueError as exc:
            # A damaged checkpoint only costs a longer recovery, never the broker.
            log.warning("ignoring unreadable %s (%s): %s", path, exc, instead)
            return None

    def get(self, topic: str, index: int) -> Partition | None:
        return self._partitions.get((topic, index))

    def offline_partitions(self) -> Mapping[tuple[str, int], str]:
        """Assigned partitions whose log could not be opened here, with the cause."""
        return dict(self._offline)

    def is_offline(self, topic: str, index: int) -> bool:
        """True when ``topic``-``index`` is offline on this broker (its disk failed it)."""
        return (topic, index) in self._offline

    def in_sync_replica_count(self, topic: str, index: int) -> int:
        """The size of the ISR of a local replica (0 when there is none here)."""
        local = self._partitions.get((topic, index))
        return 0 if local is None else len(local.isr)

    def partitions(self) -> Iterable[Partition]:
        return self._partitions.values()

    def reconcile(
        self,
        assignments: Iterable[Assignment],
        live_topics: set[str],
        now_ms: int,
        *,
        allow_delete: bool = True,
    ) -> RoleChanges:
        """Make local partitions match ``assignments``; delete logs of vanished replicas.

        ``allow_delete`` is False when the metadata store itself was reset: then replicas
        that vanished are only closed, never deleted.
        """
        wanted = {(a.topic, a.index): a for a in assignments}
        follow: list[Partition] = []
        unfollow: list[tuple[str, int]] = []
        to_open = [
            a
            for key, a in wanted.items()
            if key not in self._partitions and key not in self._offline
        ]
        for assignment, opened in zip(
            to_open, self._on_recovery_threads(self._open_or_offline, to_open), strict=True
        ):
            if opened is not None:
                self._partitions[(assignment.topic, assignment.index)] = opened
        for key, assignment in wanted.items():
            partition = self._partitions.get(key)
            if partition is None:
                continue  # offline here
            if assignment.leader == self.broker_id:
                if not partition.is_leader:
                    unfollow.append(key)
                partition.make_leader(
                    leader_epoch=assignment.leader_epoch,
                    partition_epoch=assignment.partition_epoch,
                    replicas=assignment.replicas,
                    isr=assignment.isr,
                    now_ms=now_ms,
                )
            else:
                if partition.make_follower(
                    leader_id=assignment.leader,
                    leader_epoch=assignment.leader_epoch,
                    partition_epoch=assignment.partition_epoch,
                    replicas=assignment.replicas,
                    isr=assignment.isr,
                ):
                    unfollow.append(key)
                    if assignment.leader >= 0:
                        follow.append(partition)
        for key in [k for k in self._offline if k not in wanted]:
            # Deleted or moved away: forget it (its directory stays for the operator).
            del self._offline[key]
            failed = self._failed.pop(key, None)
            if failed is not None:
                failed.log.close_handlers()
        for key in list(self._partitions):
            if key in wanted:
                continue
            partition = self._partitions.pop(key)
            self._cleaner_offsets.pop(key, None)
            unfollow.append(key)
            partition.make_follower(
                leader_id=-1, leader_epoch=-1, partition_epoch=-1, replicas=(), isr=()
            )
            if not allow_delete:
                log.warning("metadata store was reset: closing (not deleting) %s-%d", *key)
                partition.close()
            elif key[0] not in live_topics:
                log.info("topic %s deleted: removing %s", key[0], partition.log.directory)
                partition.delete()
            else:
                log.info("replica %s-%d moved away: removing %s", *key, partition.log.directory)
                partition.delete()
        return RoleChanges(follow=tuple(follow), unfollow=tuple(unfollow))

    def _on_recovery_threads(self, work: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[work(item) for item in items]``, on up to ``num.recovery.threads.per.data.dir``
        threads (inline with one, Kafka's default)."""
        threads = min(max(1, self._recovery_threads()), len(items))
        if threads <= 1:
            return [work(item) for item in items]
        with ThreadPoolExecutor(threads, thread_name_prefix="log-recovery") as pool:
            return list(pool.map(work, items))

    def _open_or_offline(self, assignment: Assignment) -> Partition | None:
        """The opened partition, or None after marking it offline on this broker."""
        try:
            return self._open(assignment)
        except Exception as exc:  # any failure is this partition's alone
            self._go_offline(
                (assignment.topic, assignment.index),
                f"its log in {self.data_dir / f'{assignment.topic}-{assignment.index}'} "
                f"cannot be opened ({type(exc).__name__}: {exc})",
            )
            return None

    def _storage_failed(self, partition: Partition, cause: str) -> None:
        """``Partition.on_storage_error``: its disk failed while running; take it offline."""
        key = (partition.topic, partition.index)
        if self._partitions.get(key) is not partition:
            return  # already offline (or replaced)
        del self._partitions[key]
        self._failed[key] = partition
        self._go_offline(key, f"{partition.log.directory}: {cause}")
        # No leader state any more: waiting acks=all produces and parked fetches wake and
        # find it offline.
        partition.make_follower(
            leader_id=-1, leader_epoch=-1, partition_epoch=-1, replicas=(), isr=()
        )

    def _go_offline(self, key: tuple[str, int], cause: str) -> None:
        self._offline[key] = cause
        log.error(
            "%s-%d is offline on broker %d: %s; other replicas must serve it until this "
            "broker restarts",
            *key,
            self.broker_id,
            cause,
        )
        if self._on_offline is not None:
            self._on_offline(key)

    def _open(self, assignment: Assignment) -> Partition:
        key = (assignment.topic, assignment.index)
        directory = self.data_dir / f"{assignment.topic}-{assignment.index}"
        topic_id_file = directory / "partition.metadata"
        if topic_id_file.exists():
            recorded = _read_topic_id(topic_id_file)
            if recorded and recorded != assignment.topic_id:
                # Same name, new topic: the old one was deleted while we were away.
                log.info(
                    "replacing %s (topic id %s, now %s)", directory, recorded, assignment.topic_id
                )
                shutil.rmtree(directory)
        log_obj = Log.open(
            directory,
            config=self._log_config_for(assignment.topic),
            time_ms=self._time_ms,
            recovery_point=self._recovery_points.get(key, 0),
            log_start_offset=self._log_starts.get(key, 0),
            assume_unclean=self._distrust_clean_markers,
        )
        if not topic_id_file.exists():
            _write_topic_id(topic_id_file, assignment.topic_id)
        partition = Partition(
            broker_id=self.broker_id,
            topic=assignment.topic,
            index=assignment.index,
            topic_id=assignment.topic_id,
            log=log_obj,
            on_storage_error=self._storage_failed,
        )
        # The last HW this replica knew (Kafka's replication-offset-checkpoint): a replica
        # elected leader after a restart serves consumers from it at once.
        partition.update_follower_hw(self._high_watermarks.get(key, 0))
        return partition

    def update_configs(self) -> None:
        for partition in self._partitions.values():
            partition.update_config(self._log_config_for(partition.topic))

    def checkpoint(self, *, flush: bool = False, log_starts: bool = True) -> None:
        """Write the recovery-point, high-watermark and (unless ``log_starts`` is false: the
        checkpointer writes them on their own schedule) log-start checkpoints, flushing logs
        first if asked."""
        if flush:
            for partition in list(self._partitions.values()):
                # A failed fsync takes that partition offline; the others still flush.
                with contextlib.suppress(KafkaStorageError):
                    partition.flush()
        # A failed log keeps its entries: recovery scans from its last recovery point.
        hosted = {**self._failed, **self._partitions}
        recovery = {k: p.log.recovery_point for k, p in hosted.items()}
        write_offset_checkpoint(self.data_dir / RECOVERY_POINT_FILE, recovery)
        if log_starts:
            self.checkpoint_log_starts()
        self.checkpoint_high_watermarks()

    def checkpoint_log_starts(self) -> None:
        """Write ``log-start-offset-checkpoint`` now (periodically, and when retention just
        moved log starts)."""
        hosted = {**self._failed, **self._partitions}
        starts = {k: p.log.log_start_offset for k, p in hosted.items()}
        write_offset_checkpoint(self.data_dir / LOG_START_FILE, starts)

    # log cleaner checkpoint ----------------------------------------------------------------
    def cleaner_offset(self, partition: Partition) -> int:
        """The first dirty offset of ``partition``: its checkpoint, or the log start when
        there is none or it lies outside ``[log start, LEO]`` (Kafka resets it the same way)."""
        log_obj = partition.log
        checkpoint = self._cleaner_offsets.get((partition.topic, partition.index))
        if checkpoint is None or not (
            log_obj.log_start_offset <= checkpoint <= log_obj.log_end_offset
        ):
            return log_obj.log_start_offset
        return checkpoint

    def cleaner_checkpoint(self, topic: str, index: int) -> int | None:
        """The raw checkpoint entry of ``topic``-``index`` (None: never cleaned)."""
        return self._cleaner_offsets.get((topic, index))

    def update_cleaner_offset(self, partition: Partition, first_dirty_offset: int) -> None:
        """Record a finished clean and write ``cleaner-offset-checkpoint``."""
        self._cleaner_offsets[(partition.topic, partition.index)] = first_dirty_offset
        self.checkpoint_cleaner_offsets()

    def checkpoint_cleaner_offsets(self) -> None:
        # Only partitions still hosted here: a removed replica's entry must not resurrect
        # as a stale dirty offset if the partition comes back.
        offsets = {k: v for k, v in self._cleaner_offsets.items() if k in self._partitions}
        write_offset_checkpoint(self.data_dir / CLEANER_OFFSET_FILE, offsets)

    def checkpoint_high_watermarks(self) -> None:
        """Write ``replication-offset-checkpoint`` (Kafka does it every 5 s)."""
        hosted = {**self._failed, **self._partitions}
        high_watermarks = {k: p.high_watermark for k, p in hosted.items()}
        write_offset_checkpoint(self.data_dir / HIGH_WATERMARK_FILE, high_watermarks)

    def close(self) -> None:
        self._on_recovery_threads(Partition.close, list(self._partitions.values()))
        for partition in self._failed.values():
            # As a crash leaves it: no flush, no clean-shutdown marker (see the docstring).
            partition.log.close_handlers()
        self.checkpoint()
        self._partitions.clear()
        self._failed.clear()


def _read_topic_id(path: Path) -> str | None:
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "topic_id":
            return value.strip()
    return None


def _write_topic_id(path: Path, topic_id: str) -> None:
    # Kafka's partition.metadata format (KIP-516).
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"version: 0\ntopic_id: {topic_id}\n")
    tmp.replace(path)

"""One flow in one ``mirror-maker`` process: the loop that keeps it running whatever happens.

A ``FlowWorker`` runs on two threads of its own, so that slow or failing admin calls (a
cluster away makes each wait for its timeout) never hold up the records: the *records*
thread owns the replicator and does nothing else; the *tasks* thread does every periodic
step when it is due. Each confluent-kafka client is driven from one thread only. The steps:

- **Topics** (every ``refresh.topics.interval.seconds``; configs every
  ``sync.topic.configs.interval.seconds``): describe the source, plan the target
  (``topics.plan_topics``) and apply the plan -- create remote topics, grow partitions, copy
  configs -- *before* the replicator subscribes to a new topic, so a record never arrives
  for a partition the target lacks. Several processes with the same properties apply the
  same plan; "already exists" answers are not errors.
- **Records** (the records thread): ``Replicator.run_once`` batches, one after the other (the
  replicator's consumer group ``mirror-<src>-><dst>`` on the source splits the partitions
  between processes); a plan the tasks thread applied is handed over between two batches.
- **Topic ACLs** (``sync.topic.acls.interval.seconds``): ``acls.sync_acls``, MM2's rule.
- **Checkpoints and group offsets** (``emit.checkpoints.interval.seconds``,
  ``sync.group.offsets.interval.seconds``): ``checkpoints.CheckpointTask``, which acts only in
  the one process its leader group elects.
- **Heartbeats** (``emit.heartbeats.interval.seconds``): ``checkpoints.HeartbeatTask``; a flow
  that is not enabled only does this, as MM2 runs a heartbeat connector for every pair.
- **Status**: a ``status.FlowStatus`` snapshot for the process to publish.

Failures never end the thread. A cluster that cannot be reached, a refused record or a
failed admin call is recorded as the flow's ``error`` (state ``retrying``) and retried: the
replicator and the topic refresh with exponential backoff (1 s doubling to 30 s, with
jitter), ACL sync, checkpoints and heartbeats at their next interval. A replicator that failed is
abandoned without committing and a new one resumes from the last commit, so records after
it may be copied twice but none is lost. While the target does not acknowledge a batch the
replicator waits (the producer retries) and the worker keeps its status fresh through the
replicator's ``on_wait`` hook.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient

from weir.mirror.acls import sync_acls
from weir.mirror.checkpoints import CheckpointTask, HeartbeatTask
from weir.mirror.config import Flow, MirrorConfig
from weir.mirror.replicate import Replicator
from weir.mirror.status import FlowStatus, GroupCheckpoint, PartitionStatus, now_ms
from weir.mirror.topics import (
    TopicsPlan,
    apply_plan,
    config_exclude_pattern,
    describe_source,
    describe_target,
    plan_topics,
)

__all__ = ["Backoff", "FlowWorker"]

log = logging.getLogger("weir.mirror")

_IDLE_WAIT_S = 0.2  # poll timeout of a batch; also the pause of a flow with nothing to copy
_RECENT_ERRORS = 10
_EXCLUDE_KEY = "config.properties.exclude"
_SNAPSHOT_INTERVAL_S = 0.5  # how often the records thread refreshes positions and rates
_STALLED_S = 5.0  # records in flight and no acknowledgement for this long: say so
_MAX_CHECKPOINTS = 1000  # translated offsets kept in the published status


@dataclass(slots=True)
class Backoff:
    """Exponential backoff with equal jitter: 1, 2, 4 ... ``maximum_s`` seconds."""

    initial_s: float = 1.0
    maximum_s: float = 30.0
    failures: int = 0

    def next_delay(self) -> float:
        base = min(self.maximum_s, self.initial_s * 2**self.failures)
        self.failures += 1
        return base / 2 + random.uniform(0, base / 2)

    def reset(self) -> None:
        self.failures = 0


class _Due:
    """When a periodic step runs next (monotonic seconds); ``None`` interval: never."""

    def __init__(self, interval_s: float | None, clock: Callable[[], float]) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self.at = clock() if interval_s is not None else float("inf")

    def ready(self) -> bool:
        return self.clock() >= self.at

    def done(self) -> None:
        if self.interval_s is not None:
            self.at = self.clock() + self.interval_s

    def retry_in(self, delay_s: float) -> None:
        self.at = self.clock() + delay_s


class FlowWorker:
    """Runs one flow until ``stop`` is set (see the module docstring)."""

    def __init__(
        self,
        config: MirrorConfig,
        flow: Flow,
        *,
        process_id: str,
        stop: threading.Event,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.flow = flow
        self.stop = stop
        self.clock = clock
        self.status = FlowStatus(
            flow=flow.name,
            source=flow.source,
            target=flow.target,
            process_id=process_id,
            replicating=flow.enabled,
        )
        self._lock = threading.Lock()
        self._snapshot = self._copy_status()
        self._plan: TopicsPlan | None = None
        self._replicator: Replicator | None = None
        self._checkpoints: Any = None
        self._heartbeats: Any = None
        self._records_backoff = Backoff()
        self._topics_backoff = Backoff()
        self._problems: dict[str, str] = {}  # step -> what is wrong with it now
        self._replicator_retry_at = 0.0
        exclude = flow.settings.get(_EXCLUDE_KEY, config.raw.get(_EXCLUDE_KEY))
        self._config_exclude = (
            config_exclude_pattern() if exclude is None else config_exclude_pattern(exclude)
        )
        self._topics_due = _Due(flow.refresh_topics_interval_s if flow.enabled else None, clock)
        self._acls_due = _Due(flow.sync_topic_acls_interval_s if flow.enabled else None, clock)
        self._acls_unsupported_logged = False
        self._configs_due = _Due(
            flow.sync_topic_configs_interval_s if flow.enabled else None, clock
        )
        self._checkpoints_due = _Due(
            flow.emit_checkpoints_interval_s if flow.enabled else None, clock
        )
        self._group_sync_due = _Due(
            flow.sync_group_offsets_interval_s if flow.enabled else None, clock
        )
        self._checkpointed: dict[tuple[str, str, int], GroupCheckpoint] = {}
        self._heartbeats_due = _Due(flow.emit_heartbeats_interval_s, clock)
        self._last_rate_at = clock()
        self._next_snapshot_at = 0.0
        self._last_rate_totals = (0, 0)
        self._applied: dict[str, str] | None = None  # the latest applied plan's topics
        self._threads: list[threading.Thread] = []

    # -- thread --------------------------------------------------------------------------------
    def start(self) -> None:
        self._set_state("running")
        self._threads = [
            threading.Thread(target=target, name=f"mirror-{self.flow.name}-{name}", daemon=True)
            for name, target in (("records", self.run_records), ("tasks", self.run_tasks))
        ]
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else self.clock() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - self.clock()))
        if not any(thread.is_alive() for thread in self._threads):
            self._set_state("stopped")

    def snapshot(self) -> FlowStatus:
        """The latest status (thread-safe copy, refreshed by the worker's own thread)."""
        with self._lock:
            return self._snapshot

    def run_records(self) -> None:
        """The records thread: batches until ``stop``; then commit what was acknowledged."""
        try:
            while not self.stop.is_set():
                try:
                    copied = self._replicate()
                    # Positions cost client calls and the snapshot a copy: not every batch,
                    # only as often as anyone reads it (statuses publish every 2 s).
                    if self.clock() >= self._next_snapshot_at:
                        self._next_snapshot_at = self.clock() + _SNAPSHOT_INTERVAL_S
                        self._refresh_snapshot()
                except Exception:  # a bug must not end the flow: say it, pause, go on
                    log.exception("mirror %s: records thread", self.flow.name)
                    copied = 0
                    self.stop.wait(1.0)
                if not copied and self._replicator is None:
                    self.stop.wait(_IDLE_WAIT_S)
        finally:
            self._close_replicator()

    def run_tasks(self) -> None:
        """The tasks thread: topics, checkpoints and heartbeats, each when it is due."""
        try:
            while not self.stop.is_set():
                try:
                    self.run_due_tasks()
                except Exception:  # a bug must not end the flow: say it, pause, go on
                    log.exception("mirror %s: tasks thread", self.flow.name)
                    self.stop.wait(1.0)
                due = [d.at for d in self._task_dues()]
                self.stop.wait(max(0.05, min(min(due) - self.clock(), _IDLE_WAIT_S * 5)))
        finally:
            self._close_tasks()

    def run_due_tasks(self) -> None:
        if self._topics_due.ready():
            self._refresh_topics()
        if self._acls_due.ready() and self._plan is not None:
            self._sync_acls(self._plan.remote_names)
        if self._checkpoints_due.ready() or self._group_sync_due.ready():
            self._run_checkpoints()
        if self._heartbeats_due.ready():
            self._run_heartbeats()
        self._refresh_snapshot(with_positions=False)

    def _task_dues(self) -> list[_Due]:
        return [
            self._topics_due,
            self._acls_due,
            self._checkpoints_due,
            self._group_sync_due,
            self._heartbeats_due,
        ]

    # -- steps ---------------------------------------------------------------------------------
    def _refresh_topics(self) -> None:
        with_configs = self._configs_due.ready()
        try:
            source_admin = AdminClient(self.config.client_config(self.flow.source, "admin"))
            target_admin = AdminClient(self.config.client_config(self.flow.target, "admin"))
            source = describe_source(
                source_admin, cluster=self.flow.source, with_configs=with_configs
            )
            target = describe_target(target_admin, cluster=self.flow.target)
            plan = plan_topics(self.flow, source, target, config_exclude=self._config_exclude)
            apply_plan(
                target_admin,
                plan,
                cluster=self.flow.target,
                replication_factor=self.flow.replication_factor,
            )
        except Exception as exc:  # TopicSyncError or a client failure: retried
            delay = self._topics_backoff.next_delay()
            self._problem("topics", str(exc), retry_in=delay)
            self._topics_due.retry_in(delay)
            return
        self._topics_backoff.reset()
        self._solved("topics")
        if self._plan is None or plan.remote_names != self._plan.remote_names:
            log.info(
                "mirror %s: mirroring %d topics: %s",
                self.flow.name,
                len(plan.topics),
                ", ".join(f"{s} -> {t}" for s, t in plan.remote_names.items()) or "none",
            )
        self._topics_due.done()
        if with_configs:
            self._configs_due.done()
        with self._lock:
            self._plan = plan  # the records thread picks it up between two batches
            self.status.topics = sorted(plan.remote_names)
            self.status.skipped_topics = dict(plan.skipped)
        if self._checkpoints is not None:
            self._checkpoints.set_topics(plan.remote_names)

    def _sync_acls(self, remote_names: dict[str, str]) -> None:
        flow = self.flow
        try:
            sent = sync_acls(
                AdminClient(self.config.client_config(flow.source, "admin")),
                AdminClient(self.config.client_config(flow.target, "admin")),
                remote_names,
                cluster=flow.target,
            )
        except Exception as exc:  # AclSyncError or a client failure: next interval
            self._problem("acls", str(exc))
        else:
            self._solved("acls")
            if sent is None and not self._acls_unsupported_logged:
                log.info("mirror %s: %s has no authorizer: no ACLs to sync", flow.name, flow.source)
                self._acls_unsupported_logged = True
        self._acls_due.done()

    def _replicate(self) -> int:
        with self._lock:
            plan = self._plan
        if plan is None or not self.flow.enabled:
            return 0
        if self._replicator is not None and plan.remote_names != self._applied:
            self._replicator.set_topics(plan.remote_names)
            self._applied = plan.remote_names
        if self._replicator is None:
            if self.clock() < self._replicator_retry_at:
                return 0
            try:
                self._replicator = self._new_replicator(plan.remote_names)
                self._applied = plan.remote_names
                self._replicator.start()
            except Exception as exc:  # a cluster away at start is retried
                self._drop_replicator()
                self._replicator_failed(exc)
                return 0
        try:
            copied = self._replicator.run_once(_IDLE_WAIT_S)
        except Exception as exc:  # ReplicationError or a client failure
            self._drop_replicator()
            if self.stop.is_set():
                return 0
            self._replicator_failed(exc)
            return 0
        self._records_backoff.reset()
        self._solved("replication")
        self._check_stalled()
        return copied

    def _new_replicator(self, topics: dict[str, str]) -> Replicator:
        flow = self.flow
        syncs_cluster = flow.offset_syncs_cluster
        return Replicator(
            flow,
            topics=topics,
            source_config=self.config.client_config(flow.source, "consumer"),
            target_config=self.config.client_config(flow.target, "producer"),
            offset_syncs_config=self.config.client_config(syncs_cluster, "producer"),
            stop_event=self.stop,
            on_wait=self._waiting,
        )

    def _drop_replicator(self) -> None:
        replicator, self._replicator = self._replicator, None
        if replicator is None:
            return
        try:
            replicator.abandon()
        except Exception as exc:  # closing a broken client may fail too
            log.debug("mirror %s: closing a failed replicator: %s", self.flow.name, exc)

    def _replicator_failed(self, exc: Exception) -> None:
        delay = self._records_backoff.next_delay()
        self._replicator_retry_at = self.clock() + delay
        self._problem("replication", str(exc), retry_in=delay)

    def _waiting(self, records: int) -> None:
        """The replicator waits for room or for the target's acknowledgements."""
        self._check_stalled()
        self._refresh_snapshot(with_positions=False)

    def _check_stalled(self) -> None:
        replicator = self._replicator
        if replicator is not None and replicator.stalled_for() >= _STALLED_S:
            self._problem(
                "target",
                f"{self.flow.target} acknowledges no records (the producer retries them)",
                quiet=True,
            )
        else:
            self._solved("target")

    def _run_checkpoints(self) -> None:
        flow = self.flow
        emit, sync = self._checkpoints_due.ready(), self._group_sync_due.ready()
        try:
            if self._checkpoints is None:
                self._checkpoints = CheckpointTask(
                    flow,
                    source_admin_config=self.config.client_config(flow.source, "admin"),
                    target_admin_config=self.config.client_config(flow.target, "admin"),
                    target_producer_config=self.config.client_config(flow.target, "producer"),
                    syncs_consumer_config=self.config.client_config(
                        flow.offset_syncs_cluster, "consumer"
                    ),
                    topics=self._plan.remote_names if self._plan is not None else {},
                )
            result = self._checkpoints.run_once(emit_checkpoints=emit, sync_group_offsets=sync)
        except Exception as exc:  # retried at the next interval
            self._problem("checkpoints", str(exc))
            result = None
        for due, ran in ((self._checkpoints_due, emit), (self._group_sync_due, sync)):
            if ran:
                due.done()
        if result is None:
            return
        if getattr(result, "errors", ()):
            self._problem("checkpoints", "; ".join(result.errors))
        else:
            self._solved("checkpoints")
        for c in result.checkpoints:
            self._checkpointed[(c.group, c.source_topic, c.partition)] = c
        with self._lock:
            self.status.leader = result.leader
            if result.leader:
                if emit:
                    self.status.last_checkpoint_ms = now_ms()
                self.status.checkpoints = [
                    self._checkpointed[k] for k in sorted(self._checkpointed)[:_MAX_CHECKPOINTS]
                ]
                if sync:
                    self.status.synced_groups = list(result.synced_groups)
                    self.status.skipped_active_groups = list(result.skipped_active_groups)

    def _run_heartbeats(self) -> None:
        flow = self.flow
        try:
            if self._heartbeats is None:
                self._heartbeats = HeartbeatTask(
                    flow,
                    target_producer_config=self.config.client_config(flow.target, "producer"),
                    target_admin_config=self.config.client_config(flow.target, "admin"),
                )
            self._heartbeats.run_once()
        except Exception as exc:  # retried at the next interval
            self._problem("heartbeats", str(exc))
        else:
            self._solved("heartbeats")
            with self._lock:
                self.status.last_heartbeat_ms = now_ms()
        self._heartbeats_due.done()

    # -- status --------------------------------------------------------------------------------
    def _set_state(self, state: str) -> None:
        with self._lock:
            self.status.state = state  # type: ignore[assignment]
            if state == "running":
                self._update_state()
        self._refresh_snapshot(with_positions=False)

    def _problem(
        self, step: str, message: str, *, retry_in: float | None = None, quiet: bool = False
    ) -> None:
        """``step`` fails with ``message``: the flow is ``retrying`` until ``_solved(step)``.
        Logged and listed in ``errors`` when it is new (not at every retry)."""
        text = f"{step}: {message}"
        with self._lock:
            new = self._problems.get(step) != text
            self._problems[step] = text
            if new:
                self.status.errors = [*self.status.errors, {"at_ms": now_ms(), "message": text}][
                    -_RECENT_ERRORS:
                ]
            self._update_state()
        if new or not quiet:
            suffix = f" (retrying in {retry_in:.1f} s)" if retry_in is not None else ""
            level = logging.WARNING if new else logging.DEBUG
            log.log(level, "mirror %s: %s%s", self.flow.name, text, suffix)

    def _solved(self, step: str) -> None:
        with self._lock:
            if self._problems.pop(step, None) is None:
                return
            self._update_state()
        log.info("mirror %s: %s works again", self.flow.name, step)

    def _update_state(self) -> None:
        """Under the lock: state and error from the open problems."""
        if self.status.state == "stopped":
            return
        self.status.state = "retrying" if self._problems else "running"
        self.status.error = "; ".join(self._problems.values()) or None

    def _refresh_snapshot(self, *, with_positions: bool = True) -> None:
        """With ``with_positions``, from the records thread only (it reads the replicator's
        consumer); without, from any thread."""
        replicator = self._replicator
        partitions: list[PartitionStatus] | None = None
        if with_positions and replicator is not None and self._applied is not None:
            partitions = self._partitions(replicator, self._applied)
        with self._lock:
            if partitions is not None:
                self.status.partitions = partitions
                records = sum(s.records for s in replicator.stats.values())  # type: ignore[union-attr]
                size = sum(s.bytes for s in replicator.stats.values())  # type: ignore[union-attr]
                now = self.clock()
                elapsed = now - self._last_rate_at
                if elapsed >= 1.0:
                    before_records, before_bytes = self._last_rate_totals
                    self.status.record_rate = max(0, records - before_records) / elapsed
                    self.status.byte_rate = max(0, size - before_bytes) / elapsed
                    self._last_rate_at, self._last_rate_totals = now, (records, size)
                    replicator.reset_latency_max()  # type: ignore[union-attr]
                self.status.records_total = records
                self.status.bytes_total = size
            self._snapshot = self._copy_status()

    def _partitions(self, replicator: Replicator, names: dict[str, str]) -> list[PartitionStatus]:
        now = now_ms()
        out = []
        for (topic, partition), (position, high) in sorted(replicator.positions().items()):
            stats = replicator.stats.get((topic, partition))
            lag = max(0, high - position) if high >= 0 and position >= 0 else 0
            status = PartitionStatus(
                source_topic=topic,
                partition=partition,
                target_topic=names.get(topic, ""),
                source_end_offset=high,
                lag_records=lag,
            )
            if stats is not None:
                status.records = stats.records
                status.bytes = stats.bytes
                status.last_source_offset = stats.last_source_offset
                status.last_target_offset = stats.last_target_offset
                status.committed_offset = stats.committed_offset
                status.replication_latency_ms = stats.replication_latency_ms
                status.replication_latency_max_ms = stats.replication_latency_max_ms
                status.record_age_ms = stats.record_age_ms
                if lag and stats.last_timestamp_ms >= 0:
                    # Records wait: the flow is behind by at least the age of the last copy.
                    status.lag_seconds = max(0.0, (now - stats.last_timestamp_ms) / 1000)
            out.append(status)
        return out

    def _copy_status(self) -> FlowStatus:
        return FlowStatus.from_json(self.status.to_json())

    def _close_replicator(self) -> None:
        replicator, self._replicator = self._replicator, None
        if replicator is not None:
            try:
                replicator.close()
            except Exception as exc:  # stopping: what was not committed is redone
                log.warning("mirror %s: closing: %s", self.flow.name, exc)
                with contextlib.suppress(Exception):
                    replicator.abandon()

    def _close_tasks(self) -> None:
        for task in (self._checkpoints, self._heartbeats):
            if task is not None:
                try:
                    task.close()
                except Exception as exc:
                    log.warning("mirror %s: closing: %s", self.flow.name, exc)

"""The controller: leader elections and ISR changes, decided here and written fenced.

Theory of operation
-------------------
Exactly one broker holds the controller lease in Redis at a time, and every write it makes
goes through a Lua script that checks its controller epoch (``MetadataStore``), so a paused
controller that wakes up after losing the lease cannot change anything.

The decisions are pure functions of the metadata image (``partition_changes_for``,
``validate_isr_change``, ``preferred_leader_change``), tested without Redis:

* a partition whose leader is not live gets a new leader: the first replica (in replica
  order, so the preferred leader wins when it can) that is in the ISR and live; only with
  ``unclean.leader.election.enable`` may an out-of-sync live replica lead; otherwise the
  partition goes offline (leader -1) and keeps its last ISR, waiting for an ISR member;
* dead brokers leave the ISR of partitions whose leader is alive (KRaft fences them);
* a broker that reports a partition offline (its log failed on that broker's disk, see
  ``ClusterImage.offline_brokers``) counts as dead for that partition alone: it loses the
  leadership and leaves the ISR, as a Kafka replica on an offline log directory does;
* a broker in controlled shutdown (``ClusterImage.shutting_down``) counts as dead for every
  partition that another live ISR member can lead: it loses those leaderships and leaves
  those ISRs while it still serves, as KRaft's controller does for a broker whose heartbeat
  asks to shut down; a partition with nobody else in sync keeps it (Kafka's ZooKeeper-mode
  controlled shutdown likewise skips partitions of replication factor 1), so a lone broker's
  clean stop does not leave every partition leaderless in the metadata;
* an ISR change proposed by a leader (AlterPartition) is accepted only for the current
  leader epoch and partition epoch, keeps the leader, stays inside the replicas and only adds
  live brokers;
* preferred-leader election moves leadership back to the first replica when it is live and
  in sync;
* auto leader rebalance (``auto.leader.rebalance.enable``, every
  ``leader.imbalance.check.interval.seconds``) elects preferred leaders only for the brokers
  whose imbalance ratio (``imbalanced_partitions``) is above
  ``leader.imbalance.per.broker.percentage``, as Kafka's controller does, so one partition
  led elsewhere does not move leadership on its own.

A Redis outage (a Sentinel failover takes seconds) stops every broker's lease renewals at
once, so when Redis is back the leases may have expired together although every broker is
fine. Like Kafka's controller, which gives brokers a session timeout to heartbeat after it
takes over, the controller then decides on ``Grace.apply``'s image: for one
``broker.session.timeout.ms`` after its own connection came back, the brokers alive before the
outage still count as alive. Live brokers renew within a heartbeat and nothing moves; a broker
that really died during the outage does not, and is declared dead when the grace ends.

``Controller`` is the asyncio driver: while the lease is held it re-evaluates the image on
every change and once a second, and executes what the pure functions decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from weir.metadata.errors import MetadataError
from weir.metadata.image import (
    ClusterImage,
    PartitionImage,
    original_replicas,
    target_replicas,
)
from weir.metadata.store import MetadataStore, PartitionChange

__all__ = [
    "Controller",
    "Grace",
    "IsrChangeError",
    "ReassignmentError",
    "completed_reassignment",
    "elect_leader",
    "imbalanced_partitions",
    "leads_movable_partitions",
    "live_replicas",
    "partition_changes_for",
    "preferred_leader_change",
    "reassignment_change",
    "validate_isr_change",
]

log = logging.getLogger("weir.controller")

LEADER_IMBALANCE_PER_BROKER_PERCENTAGE = 10  # Kafka's default


def elect_leader(
    partition: PartitionImage, live: Collection[int], *, unclean: bool
) -> tuple[int, tuple[int, ...]] | None:
    """(leader, ISR) for a partition whose leader is gone; None when nothing changes."""
    in_sync = [r for r in partition.replicas if r in partition.isr and r in live]
    if in_sync:
        isr = tuple(r for r in partition.isr if r in live)
        return in_sync[0], isr
    if unclean:
        alive = [r for r in partition.replicas if r in live]
        if alive:
            # Data loss is accepted here by configuration: the new leader's log is the truth.
            return alive[0], (alive[0],)
    if partition.leader == -1:
        return None
    # Offline: no leader, and the ISR keeps its last member(s) so only they may come back.
    return -1, partition.isr


@dataclass(frozen=True, slots=True)
class Grace:
    """The brokers' grace after a Redis outage (see the module docstring): for one session
    timeout after Redis came back (``reconnected_at``), the brokers alive before it went away
    still count as alive, registered ones only."""

    live_before_outage: Collection[int]
    reconnected_at: float | None
    now: float
    session_timeout_s: float

    def brokers(self, image: ClusterImage) -> frozenset[int]:
        """The registered brokers that count as alive through the grace (none outside it)."""
        if self.reconnected_at is None or self.now - self.reconnected_at >= self.session_timeout_s:
            return frozenset()
        return frozenset(b for b in self.live_before_outage if b in image.registrations)

    def apply(self, image: ClusterImage) -> ClusterImage:
        """The image the controller decides on: ``image`` with the graced brokers alive."""
        kept = self.brokers(image)
        if kept <= image.live_broker_ids:
            return image
        return image.with_liveness(image.live_broker_ids | kept, image.controller)


def partition_changes_for(
    image: ClusterImage, *, unclean_for: Callable[[str], bool]
) -> dict[str, list[PartitionChange]]:
    """Changes that broker liveness calls for, by topic name."""
    live = set(image.brokers)
    changes: dict[str, list[PartitionChange]] = {}
    for topic in image.topics.values():
        for partition in topic.partitions.values():
            here = live_replicas(image, live, topic.name, partition)
            change = _change_for(partition, here, unclean=unclean_for(topic.name))
            if change is not None:
                changes.setdefault(topic.name, []).append(change)
    return changes


def live_replicas(
    image: ClusterImage, live: set[int], topic: str, partition: PartitionImage
) -> set[int]:
    """``live`` less the brokers that report ``topic``-``partition`` offline, and less the
    brokers in controlled shutdown while another live member of its ISR can take over
    (``can_hand_over``): a partition with nobody else in sync stays led by the stopping
    broker until it is gone, rather than going offline while it still serves."""
    offline = image.offline_brokers(topic, partition.partition)
    here = live - offline if offline else live
    stopping = image.shutting_down & here
    if stopping and can_hand_over(partition, here - stopping):
        here = here - stopping
    return here


def can_hand_over(partition: PartitionImage, others: Collection[int]) -> bool:
    """Whether a live ISR member among ``others`` (brokers not shutting down) can lead."""
    return any(r in others for r in partition.isr)


def leads_movable_partitions(image: ClusterImage, broker_id: int) -> bool:
    """Whether ``broker_id`` still leads a partition that a controlled shutdown would move
    (one with another live in-sync replica): the stopping broker waits until it does not."""
    others = set(image.brokers) - image.shutting_down - {broker_id}
    for topic in image.topics.values():
        for partition in topic.partitions.values():
            if partition.leader != broker_id:
                continue
            here = others - image.offline_brokers(topic.name, partition.partition)
            if can_hand_over(partition, here):
                return True
    return False


def _change_for(
    partition: PartitionImage, live: set[int], *, unclean: bool
) -> PartitionChange | None:
    done = completed_reassignment(partition)
    if done is not None and (done.leader is None or done.leader in live):
        return done
    if partition.leader not in live:
        elected = elect_leader(partition, live, unclean=unclean)
        if elected is None:
            return None
        leader, isr = elected
        if leader == partition.leader and isr == partition.isr:
            return None
        return PartitionChange(
            partition=partition.partition,
            leader=leader,
            isr=isr,
            expected_partition_epoch=partition.partition_epoch,
        )
    dead_in_isr = [r for r in partition.isr if r not in live]
    if dead_in_isr:
        return PartitionChange(
            partition=partition.partition,
            isr=tuple(r for r in partition.isr if r in live),
            expected_partition_epoch=partition.partition_epoch,
        )
    return None


def preferred_leader_change(
    partition: PartitionImage, live: Collection[int]
) -> PartitionChange | None:
    """Move leadership to the preferred (first) replica when it is live and in sync."""
    if not partition.replicas:
        return None
    preferred = partition.replicas[0]
    if partition.leader == preferred or preferred not in live or preferred not in partition.isr:
        return None
    return PartitionChange(
        partition=partition.partition,
        leader=preferred,
        expected_partition_epoch=partition.partition_epoch,
    )


def imbalanced_partitions(image: ClusterImage, percentage: int) -> list[tuple[str, int]]:
    """The partitions an auto leader rebalance elects preferred leaders for.

    Kafka's ``checkAndTriggerAutoLeaderRebalance``: partitions are grouped by their preferred
    (first) replica; a broker's imbalance ratio is the share of its group led by another
    broker (or by none); when that ratio is above ``percentage`` / 100, every partition of
    the group not led by its preferred replica is a candidate. Whether the preferred replica
    can lead (live, in sync) is the election's business.
    """
    by_preferred: dict[int, list[tuple[tuple[str, int], bool]]] = {}
    for topic in image.topics.values():
        for partition in topic.partitions.values():
            if not partition.replicas:
                continue
            preferred = partition.replicas[0]
            led_elsewhere = partition.leader != preferred
            key = (topic.name, partition.partition)
            by_preferred.setdefault(preferred, []).append((key, led_elsewhere))
    candidates: list[tuple[str, int]] = []
    for group in by_preferred.values():
        elsewhere = [key for key, led_elsewhere in group if led_elsewhere]
        if len(elsewhere) / len(group) > percentage / 100:
            candidates.extend(elsewhere)
    return candidates


class ReassignmentError(Exception):
    """A reassignment request the controller refuses."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def reassignment_change(
    partition: PartitionImage, target: tuple[int, ...] | None, registered: Collection[int]
) -> PartitionChange | None:
    """Start, replace or (``target`` None) cancel a reassignment, as KIP-455 does.

    While moving, ``replicas`` = target + the original replicas not in it; ``adding`` and
    ``removing`` say which is which. New replicas follow the leader and join the ISR; the
    controller completes the move once every target replica is in sync.
    """
    origin = original_replicas(partition)
    ongoing = bool(partition.adding_replicas or partition.removing_replicas)
    if target is None:
        if not ongoing:
            raise ReassignmentError(
                ErrorCode.no_reassignment_in_progress,
                "There is no ongoing reassignment for this partition.",
            )
        return _settle(partition, origin)
    if not target:
        raise ReassignmentError(
            ErrorCode.invalid_replica_assignment, "The target replica set is empty."
        )
    if len(set(target)) != len(target):
        raise ReassignmentError(
            ErrorCode.invalid_replica_assignment, f"Duplicate brokers in {list(target)}."
        )
    unknown = [r for r in target if r not in registered]
    if unknown:
        raise ReassignmentError(
            ErrorCode.invalid_replica_assignment, f"Unknown brokers {unknown} in the target."
        )
    adding = tuple(r for r in target if r not in origin)
    removing = tuple(r for r in origin if r not in target)
    if not adding:
        # Nothing to copy: the move completes at once.
        return _settle(partition, target)
    return PartitionChange(
        partition=partition.partition,
        replicas=tuple(target) + removing,
        adding_replicas=adding,
        removing_replicas=removing,
        expected_partition_epoch=partition.partition_epoch,
    )


def _settle(partition: PartitionImage, replicas: tuple[int, ...]) -> PartitionChange | None:
    """Make ``replicas`` the final set: trim the ISR, move leadership if it must."""
    isr = tuple(r for r in partition.isr if r in replicas)
    leader = partition.leader
    if leader not in replicas:
        candidates = [r for r in replicas if r in isr]
        leader = candidates[0] if candidates else -1
    if not isr:
        isr = (leader,) if leader >= 0 else partition.isr
    if (
        replicas == partition.replicas
        and isr == partition.isr
        and not partition.adding_replicas
        and not partition.removing_replicas
    ):
        return None
    return PartitionChange(
        partition=partition.partition,
        leader=leader if leader != partition.leader else None,
        replicas=replicas,
        isr=isr,
        adding_replicas=(),
        removing_replicas=(),
        expected_partition_epoch=partition.partition_epoch,
    )


def completed_reassignment(partition: PartitionImage) -> PartitionChange | None:
    """When every target replica is in the ISR, finish the move."""
    if not (partition.adding_replicas or partition.removing_replicas):
        return None
    target = target_replicas(partition)
    if any(r not in partition.isr for r in target):
        return None
    return _settle(partition, target)


class IsrChangeError(Exception):
    """An AlterPartition the controller refuses, with the Kafka error for the leader."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


@dataclass(frozen=True, slots=True)
class IsrChangeRequest:
    broker_id: int
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]


def validate_isr_change(
    partition: PartitionImage, request: IsrChangeRequest, live: Collection[int]
) -> PartitionChange:
    """Check a leader's ISR proposal against the current partition state (KRaft's rules)."""
    if request.broker_id != partition.leader:
        raise IsrChangeError(
            ErrorCode.not_leader_or_follower,
            f"broker {request.broker_id} is not the leader ({partition.leader})",
        )
    if request.leader_epoch != partition.leader_epoch:
        raise IsrChangeError(
            ErrorCode.fenced_leader_epoch,
            f"leader epoch {request.leader_epoch} is not the current {partition.leader_epoch}",
        )
    if request.partition_epoch != partition.partition_epoch:
        raise IsrChangeError(
            ErrorCode.invalid_update_version,
            f"partition epoch {request.partition_epoch} is not the current "
            f"{partition.partition_epoch}",
        )
    new_isr = request.new_isr
    if partition.leader not in new_isr:
        raise IsrChangeError(ErrorCode.invalid_request, "the ISR must contain the leader")
    outside = [r for r in new_isr if r not in partition.replicas]
    if outside:
        raise IsrChangeError(ErrorCode.invalid_request, f"brokers {outside} are not replicas")
    added_dead = [r for r in new_isr if r not in partition.isr and r not in live]
    if added_dead:
        raise IsrChangeError(ErrorCode.ineligible_replica, f"brokers {added_dead} are not live")
    return PartitionChange(
        partition=partition.partition,
        isr=tuple(r for r in partition.replicas if r in new_isr),
        expected_partition_epoch=partition.partition_epoch,
    )


class Controller:
    """Acts on the metadata image while this broker holds the controller lease."""

    def __init__(
        self,
        *,
        store: MetadataStore,
        image: Callable[[], ClusterImage],
        epoch: Callable[[], int | None],
        unclean_for: Callable[[str], bool],
        auto_rebalance: Callable[[], bool],
        rebalance_interval_s: Callable[[], float],
        time_s: Callable[[], float],
        imbalance_percentage: Callable[[], int] = lambda: LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
        refresh_liveness: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._store = store
        self._refresh_liveness = refresh_liveness
        self._image = image
        self._epoch = epoch
        self._unclean_for = unclean_for
        self._auto_rebalance = auto_rebalance
        self._rebalance_interval_s = rebalance_interval_s
        self._imbalance_percentage = imbalance_percentage
        self._time_s = time_s
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_rebalance = 0.0

    @property
    def epoch(self) -> int | None:
        """The controller lease epoch while this broker holds it, else None; the controller's
        writes are fenced by it."""
        return self._epoch()

    def start(self) -> None:
        self._last_rebalance = self._time_s()
        self._task = asyncio.create_task(self._run(), name="controller")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def poke(self) -> None:
        """The image changed: re-evaluate now."""
        self._wake.set()

    async def _run(self) -> None:
        while True:
            # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await self._wake.wait()
            self._wake.clear()
            epoch = self._epoch()
            if epoch is None:
                continue
            try:
                await self.handle_liveness(epoch)
                if (
                    self._auto_rebalance()
                    and self._time_s() - self._last_rebalance >= self._rebalance_interval_s()
                ):
                    self._last_rebalance = self._time_s()
                    await self.rebalance_leaders(epoch)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller pass failed; retrying")

    async def handle_liveness(self, epoch: int) -> None:
        """Elect leaders for partitions whose leader died; drop dead brokers from ISRs.

        A death is confirmed with a fresh read of the leases first: the image polls them
        once a second, and a broker that registered a moment ago (a restart, a lease
        re-acquired after a Redis outage) must not lose a leadership it was just given."""
        changes = partition_changes_for(self._image(), unclean_for=self._unclean_for)
        if changes and self._refresh_liveness is not None:
            await self._refresh_liveness()
            changes = partition_changes_for(self._image(), unclean_for=self._unclean_for)
        for topic, topic_changes in changes.items():
            await self._write(epoch, topic, topic_changes, "broker liveness")

    async def elect_preferred(
        self, epoch: int, targets: Iterable[tuple[str, int]] | None
    ) -> dict[tuple[str, int], ErrorCode]:
        """Preferred-leader election for ``targets`` (None: every partition)."""

        def decide(partition: PartitionImage, live: set[int]) -> PartitionChange | ErrorCode:
            change = preferred_leader_change(partition, live)
            if change is not None:
                return change
            if partition.replicas and partition.leader == partition.replicas[0]:
                return ErrorCode.election_not_needed
            return ErrorCode.preferred_leader_not_available

        return await self._elect(epoch, targets, decide, "preferred leader election")

    async def rebalance_leaders(self, epoch: int) -> dict[tuple[str, int], ErrorCode]:
        """One auto leader rebalance: preferred-leader elections for the partitions of the
        brokers above the imbalance threshold (``imbalanced_partitions``)."""
        targets = imbalanced_partitions(self._image(), self._imbalance_percentage())
        if not targets:
            return {}
        return await self.elect_preferred(epoch, targets=targets)

    async def elect_unclean(
        self, epoch: int, targets: Iterable[tuple[str, int]] | None
    ) -> dict[tuple[str, int], ErrorCode]:
        """Unclean election: a live replica leads even when it is out of sync."""

        def decide(partition: PartitionImage, live: set[int]) -> PartitionChange | ErrorCode:
            if partition.leader in live:
                return ErrorCode.election_not_needed
            elected = elect_leader(partition, live, unclean=True)
            if elected is None or elected[0] < 0:
                return ErrorCode.eligible_leaders_not_available
            return PartitionChange(
                partition=partition.partition,
                leader=elected[0],
                isr=elected[1],
                expected_partition_epoch=partition.partition_epoch,
            )

        return await self._elect(epoch, targets, decide, "unclean leader election")

    async def _elect(
        self,
        epoch: int,
        targets: Iterable[tuple[str, int]] | None,
        decide: Callable[[PartitionImage, set[int]], PartitionChange | ErrorCode],
        reason: str,
    ) -> dict[tuple[str, int], ErrorCode]:
        """An election over ``targets`` (None: every partition): ``decide`` gives each
        partition's change or why it has none; the changes are written per topic, and a
        topic whose write is refused (the lease moved) answers NOT_CONTROLLER. A target
        that does not exist answers UNKNOWN_TOPIC_OR_PARTITION."""
        image = self._image()
        live = set(image.brokers)
        wanted = None if targets is None else set(targets)
        results: dict[tuple[str, int], ErrorCode] = {}
        by_topic: dict[str, list[PartitionChange]] = {}
        for topic in image.topics.values():
            for partition in topic.partitions.values():
                key = (topic.name, partition.partition)
                if wanted is not None and key not in wanted:
                    continue
                decided = decide(partition, live_replicas(image, live, topic.name, partition))
                if isinstance(decided, ErrorCode):
                    results[key] = decided
                else:
                    by_topic.setdefault(topic.name, []).append(decided)
                    results[key] = ErrorCode.none
        if wanted is not None:
            for key in wanted - set(results):
                results[key] = ErrorCode.unknown_topic_or_partition
        for topic, changes in by_topic.items():
            if not await self._write(epoch, topic, changes, reason):
                for change in changes:
                    results[(topic, change.partition)] = ErrorCode.not_controller
        return results

    async def alter_reassignments(
        self, epoch: int, requests: list[tuple[str, int, tuple[int, ...] | None]]
    ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """AlterPartitionReassignments: start, replace or cancel moves."""
        image = self._image()
        registered = set(image.registrations)
        results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        by_topic: dict[str, list[PartitionChange]] = {}
        for topic, index, target in requests:
            topic_image = image.topics.get(topic)
            partition = topic_image.partitions.get(index) if topic_image else None
            if partition is None:
                results[(topic, index)] = (
                    ErrorCode.unknown_topic_or_partition,
                    f"Partition {topic}-{index} does not exist.",
                )
                continue
            try:
                change = reassignment_change(partition, target, registered)
            except ReassignmentError as exc:
                results[(topic, index)] = (exc.error, str(exc))
                continue
            results[(topic, index)] = (ErrorCode.none, None)
            if change is not None:
                by_topic.setdefault(topic, []).append(change)
        for topic, changes in by_topic.items():
            if not await self._write(epoch, topic, changes, "reassignment"):
                for change in changes:
                    results[(topic, change.partition)] = (
                        ErrorCode.not_controller,
                        "the reassignment could not be written; retry",
                    )
        self.poke()
        return results

    async def alter_isr(
        self, epoch: int, topic: str, index: int, request: IsrChangeRequest
    ) -> tuple[ErrorCode, PartitionImage | None]:
        """Apply a leader's AlterPartition; the error and the partition afterwards."""
        image = self._image()
        topic_image = image.topics.get(topic)
        partition = topic_image.partitions.get(index) if topic_image else None
        if partition is None:
            return ErrorCode.unknown_topic_or_partition, None
        try:
            change = validate_isr_change(
                partition, request, live_replicas(image, set(image.brokers), topic, partition)
            )
        except IsrChangeError as exc:
            log.info("refusing ISR change of %s-%d: %s", topic, index, exc)
            return exc.error, partition
        try:
            updated = await self._store.alter_partitions(
                controller_epoch=epoch, name=topic, changes=[change]
            )
        except MetadataError as exc:
            return ErrorCode(exc.error_code), partition
        log.info("%s-%d ISR is now %s", topic, index, list(change.isr or ()))
        return ErrorCode.none, updated.partitions.get(index)

    async def _write(
        self, epoch: int, topic: str, changes: list[PartitionChange], why: str
    ) -> bool:
        try:
            await self._store.alter_partitions(controller_epoch=epoch, name=topic, changes=changes)
        except MetadataError as exc:
            log.warning("%s for %s not written: %s", why, topic, exc)
            return False
        for change in changes:
            log.info(
                "%s: %s-%d leader=%s isr=%s",
                why,
                topic,
                change.partition,
                change.leader if change.leader is not None else "unchanged",
                list(change.isr) if change.isr is not None else "unchanged",
            )
        return True

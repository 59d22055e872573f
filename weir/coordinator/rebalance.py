"""The rebalance cycle a classic group runs on: states, timers and the two phases.

Theory of operation
-------------------
``RebalanceCycle`` is the machinery half of Kafka's ``GroupMetadataManager`` for classic
groups; ``group.Group`` builds the request handling (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, offset-commit checks) on top of it.

* **State** moves only through ``_transition``, which checks ``state.VALID_PREVIOUS_STATES``
  and stamps the time (Kafka's ``currentStateTimestamp``, used for offset expiry).
* **Timers** (``timers.Timers``) are keyed like Kafka's: ``("heartbeat", member_id)`` per
  member or KIP-394 pending id, ``"join"`` for the join-phase deadline or initial delay,
  ``"sync"`` for the pending-sync deadline of a generation. Scheduling a key again replaces
  it; ``_fire`` dispatches a due one.
* **Join phase**: ``_prepare_rebalance`` (answers parked SyncGroups of an abandoned
  generation with REBALANCE_IN_PROGRESS, then either waits the initial delay or the
  rebalance timeout) → ``_complete_join_phase`` (drops dynamic members that did not rejoin,
  elects a leader among those that did, bumps the generation, selects the protocol, answers
  every parked JoinGroup, starts the pending-sync deadline).
* **Sync phase**: ``_propagate_assignment`` answers every parked SyncGroup.
* **Parked requests** are tickets on members (``join_ticket``/``sync_ticket``). Every path
  that drops a member or supersedes a request answers its tickets, so no request is left
  hanging. Answers and ``PersistGroup`` requests collect in ``_out`` during one public call
  (``_begin`` … ``_drain``); ``_settle`` hands the caller its own answer directly when its
  request completed within the same call.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from kio.schema.errors import ErrorCode

from weir.coordinator.config import GroupConfig
from weir.coordinator.member import Member, Protocols
from weir.coordinator.membership import Membership
from weir.coordinator.results import (
    Completion,
    GroupSnapshot,
    JoinCompletion,
    JoinResponse,
    Outcome,
    Pending,
    PersistGroup,
    SyncCompletion,
    SyncResponse,
)
from weir.coordinator.state import VALID_PREVIOUS_STATES, GroupState
from weir.coordinator.timers import Timers

__all__ = [
    "AwaitAssignment",
    "AwaitStaticJoin",
    "RebalanceCycle",
    "append_error_to_response_error",
    "random_uuid",
]

_E = ErrorCode
_S = GroupState
_R = TypeVar("_R", JoinResponse | Pending, SyncResponse | Pending)

_JOIN_TIMER = "join"
_SYNC_TIMER = "sync"


def _heartbeat_timer(member_id: str) -> tuple[str, str]:
    return ("heartbeat", member_id)


def random_uuid() -> str:
    return str(uuid.uuid4())


def append_error_to_response_error(error: ErrorCode) -> ErrorCode:
    """Kafka's ``appendGroupMetadataErrorToResponseError``: what a failed append tells clients.

    Every "not replicated (yet)" outcome becomes the retriable COORDINATOR_NOT_AVAILABLE.
    """
    if error in (
        _E.unknown_topic_or_partition,
        _E.not_enough_replicas,
        _E.not_enough_replicas_after_append,
        _E.request_timed_out,
    ):
        return _E.coordinator_not_available
    if error in (_E.not_leader_or_follower, _E.kafka_storage_error):
        return _E.not_coordinator
    if error in (_E.message_too_large, _E.record_list_too_large, _E.invalid_fetch_size):
        return _E.unknown_server_error
    return error


# -- timer payloads ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _HeartbeatExpiry:
    member_id: str


@dataclass(frozen=True, slots=True)
class _JoinExpiry:
    pass


@dataclass(frozen=True, slots=True)
class _InitialDelay:
    delay_ms: int
    remaining_ms: int


@dataclass(frozen=True, slots=True)
class _SyncExpiry:
    generation_id: int


_Timer = _HeartbeatExpiry | _JoinExpiry | _InitialDelay | _SyncExpiry

# -- what a persist is waiting for ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AwaitAssignment:
    """A leader's assignment waiting to be persisted."""

    generation_id: int
    assignment: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class AwaitStaticJoin:
    """A restarted static member's new id waiting to be persisted (KIP-345, no rebalance)."""

    generation_id: int
    ticket: int
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: Protocols
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    leader_before: str | None
    skip_assignment_supported: bool


_Waiter = AwaitAssignment | AwaitStaticJoin


class RebalanceCycle:
    """State, membership, timers and parked requests of one group, and the phase logic."""

    def __init__(
        self,
        group_id: str,
        *,
        now_ms: int,
        config: GroupConfig | None = None,
        new_uuid: Callable[[], str] = random_uuid,
    ) -> None:
        self.group_id = group_id
        self.config = config or GroupConfig()
        self._new_uuid = new_uuid
        self._state = _S.EMPTY
        self._previous_state = _S.DEAD
        self._state_timestamp_ms: int | None = now_ms
        self._generation_id = 0
        self._m = Membership()
        self._new_member_added = False
        self._timers: Timers[_Timer] = Timers()
        self._tickets = itertools.count(1)
        self._tokens = itertools.count(1)
        self._waiters: dict[int, _Waiter] = {}
        self._now_ms = now_ms
        self._out: list[Completion] = []

    def snapshot(self, assignment: Mapping[str, bytes] | None = None) -> GroupSnapshot:
        """The group as a ``GroupMetadataValue`` (optionally with assignments not yet set)."""
        return GroupSnapshot(
            group_id=self.group_id,
            protocol_type=self._m.protocol_type or "",
            generation_id=self._generation_id,
            protocol_name=self._m.protocol_name,
            leader=self._m.leader_id,
            current_state_timestamp_ms=(
                -1 if self._state_timestamp_ms is None else self._state_timestamp_ms
            ),
            members=self._m.snapshots(assignment),
        )

    # -- timers ----------------------------------------------------------------------------

    def _fire(self, payload: _Timer) -> None:
        if isinstance(payload, _HeartbeatExpiry):
            self._on_heartbeat_expiry(payload.member_id)
        elif isinstance(payload, _JoinExpiry):
            self._complete_join_phase()
        elif isinstance(payload, _InitialDelay):
            self._on_initial_delay(payload)
        else:
            self._on_sync_expiry(payload.generation_id)

    def _on_heartbeat_expiry(self, member_id: str) -> None:
        if self._state is _S.DEAD:
            return
        if member_id in self._m.pending_join:
            self._m.pending_join.discard(member_id)
            if self._state is _S.PREPARING_REBALANCE and self._m.has_all_joined():
                self._complete_join_phase()
            return
        member = self._m.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat:
            return
        self._remove(member_id)
        if self._state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join()
        elif self._state is _S.PREPARING_REBALANCE and self._m.has_all_joined():
            self._complete_join_phase()

    def _on_initial_delay(self, timer: _InitialDelay) -> None:
        if self._new_member_added and timer.remaining_ms != 0:
            # More members keep arriving: wait again, but never past the rebalance timeout.
            self._new_member_added = False
            delay = min(self.config.initial_rebalance_delay_ms, timer.remaining_ms)
            remaining = max(timer.remaining_ms - timer.delay_ms, 0)
            self._schedule(_JOIN_TIMER, delay, _InitialDelay(delay, remaining))
        else:
            self._complete_join_phase()

    def _on_sync_expiry(self, generation_id: int) -> None:
        if generation_id != self._generation_id:
            return
        if self._state not in (_S.COMPLETING_REBALANCE, _S.STABLE) or not self._m.pending_sync:
            return
        for member_id in sorted(self._m.pending_sync):
            self._remove(member_id)
        self._prepare_rebalance()

    # -- join phase ------------------------------------------------------------------------

    def _can_rebalance(self) -> bool:
        return self._state in VALID_PREVIOUS_STATES[_S.PREPARING_REBALANCE]

    def _maybe_prepare_rebalance_or_complete_join(self) -> None:
        if self._can_rebalance():
            self._prepare_rebalance()
        else:
            self._maybe_complete_join_phase()

    def _prepare_rebalance(self) -> None:
        if self._state is _S.COMPLETING_REBALANCE:
            # Parked SyncGroups of the abandoned generation must rejoin.
            self._reset_and_propagate_assignment(_E.rebalance_in_progress)
        self._m.pending_sync.clear()
        self._timers.cancel(_SYNC_TIMER)
        initial = self._state is _S.EMPTY
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(self._m.rebalance_timeout_ms - delay, 0)
            self._schedule(_JOIN_TIMER, delay, _InitialDelay(delay, remaining))
        self._transition(_S.PREPARING_REBALANCE)
        if not initial:
            if self._m.has_all_joined():
                self._complete_join_phase()
            else:
                self._schedule(_JOIN_TIMER, self._m.rebalance_timeout_ms, _JoinExpiry())

    def _maybe_complete_join_phase(self) -> None:
        if self._state is not _S.PREPARING_REBALANCE:
            return
        if self._previous_state is _S.EMPTY:
            return  # the initial rebalance waits out its delay
        if self._m.has_all_joined():
            self._complete_join_phase()

    def _complete_join_phase(self) -> None:
        self._timers.cancel(_JOIN_TIMER)
        for member in list(self._m.members.values()):
            if not member.awaiting_join and not member.is_static:
                self._remove(member.member_id)
        if self._state is _S.DEAD:
            return
        if not self._m.elect_joined_leader() and self._m.members:
            # Nobody rejoined (only absent static members are left): wait another round for
            # their sessions to expire.
            self._schedule(_JOIN_TIMER, self._m.rebalance_timeout_ms, _JoinExpiry())
            return
        self._init_next_generation()
        if self._state is _S.EMPTY:
            self._persist(self.snapshot(), None)
            return
        for member in self._m.members.values():
            self._complete_join(
                member,
                self._join_response(
                    member.member_id, with_members=self._m.leader_id == member.member_id
                ),
            )
            self._reschedule_heartbeat(member)
            member.is_new = False
            self._m.pending_sync.add(member.member_id)
        self._schedule(_SYNC_TIMER, self._m.rebalance_timeout_ms, _SyncExpiry(self._generation_id))

    def _init_next_generation(self) -> None:
        self._generation_id += 1
        if self._m.members:
            self._m.protocol_name = self._m.select_protocol()
            self._transition(_S.COMPLETING_REBALANCE)
        else:
            self._m.protocol_name = None
            self._transition(_S.EMPTY)
        self._m.pending_sync.clear()

    def _join_response(self, member_id: str, *, with_members: bool) -> JoinResponse:
        members = self._m.join_members() if with_members else ()
        return JoinResponse(
            error=_E.none,
            member_id=member_id,
            generation_id=self._generation_id,
            protocol_type=self._m.protocol_type,
            protocol_name=self._m.protocol_name,
            leader=self._m.leader_id or "",
            members=members,
        )

    # -- sync phase ------------------------------------------------------------------------

    def _reset_and_propagate_assignment(self, error: ErrorCode) -> None:
        for member in self._m.members.values():
            member.assignment = b""
        self._propagate_assignment(error)

    def _propagate_assignment(self, error: ErrorCode) -> None:
        ok = error is _E.none
        for member in self._m.members.values():
            if member.sync_ticket is None:
                continue
            self._complete_sync(
                member,
                SyncResponse(
                    error,
                    member.assignment,
                    self._m.protocol_type if ok else None,
                    self._m.protocol_name if ok else None,
                ),
            )
            # Sessions that lapsed while parked were excused; restart them from here.
            self._reschedule_heartbeat(member)

    def _remove_pending_sync(self, member_id: str) -> None:
        self._m.pending_sync.discard(member_id)
        if not self._m.pending_sync:
            self._timers.cancel(_SYNC_TIMER)

    # -- members and their parked requests -------------------------------------------------

    def _add_pending_member(self, member_id: str, session_timeout_ms: int) -> None:
        """KIP-394: remember a handed-out member id for one session timeout."""
        self._m.pending_join.add(member_id)
        self._schedule(_heartbeat_timer(member_id), session_timeout_ms, _HeartbeatExpiry(member_id))

    def _remove(self, member_id: str) -> None:
        """Drop a member (or a pending member id); its parked requests get UNKNOWN_MEMBER_ID."""
        member = self._m.remove(member_id)
        if member is not None:
            self._complete_join(member, JoinResponse(_E.unknown_member_id, ""))
            self._complete_sync(member, SyncResponse(_E.unknown_member_id))
        self._timers.cancel(_heartbeat_timer(member_id))

    def _replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> Member:
        old, new = self._m.replace_static(group_instance_id, old_member_id, new_member_id)
        # Fence the previous incarnation at once if it is still waiting on us.
        self._complete_join(old, JoinResponse(_E.fenced_instance_id, old_member_id))
        self._complete_sync(old, SyncResponse(_E.fenced_instance_id))
        self._timers.cancel(_heartbeat_timer(old_member_id))
        return new

    def _update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        ticket: int | None,
    ) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if ticket is not None and member.join_ticket is not None:
            # A newer JoinGroup replaces a parked one; answer the stale one so it is not lost.
            self._out.append(
                JoinCompletion(
                    member.join_ticket, JoinResponse(_E.rebalance_in_progress, member.member_id)
                )
            )
        member.join_ticket = ticket

    def _complete_join(self, member: Member, response: JoinResponse) -> None:
        if member.join_ticket is not None:
            self._out.append(JoinCompletion(member.join_ticket, response))
            member.join_ticket = None

    def _complete_sync(self, member: Member, response: SyncResponse) -> None:
        if member.sync_ticket is not None:
            self._out.append(SyncCompletion(member.sync_ticket, response))
            member.sync_ticket = None

    # -- plumbing --------------------------------------------------------------------------

    def _transition(self, target: GroupState) -> None:
        if self._state not in VALID_PREVIOUS_STATES[target]:
            raise AssertionError(
                f"group {self.group_id}: illegal transition {self._state.value} -> {target.value}"
            )
        self._previous_state = self._state
        self._state = target
        self._state_timestamp_ms = self._now_ms

    def _reschedule_heartbeat(self, member: Member, timeout_ms: int | None = None) -> None:
        member.last_heartbeat_ms = self._now_ms
        self._schedule(
            _heartbeat_timer(member.member_id),
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            _HeartbeatExpiry(member.member_id),
        )

    def _schedule(self, key: Hashable, delay_ms: int, payload: _Timer) -> None:
        # At least 1 ms ahead, so a timer never fires within the call that scheduled it and
        # tick() always terminates, even with zero delays configured.
        self._timers.schedule(key, self._now_ms + max(delay_ms, 1), payload)

    def _persist(self, snapshot: GroupSnapshot, waiter: _Waiter | None) -> None:
        token = next(self._tokens)
        if waiter is not None:
            self._waiters[token] = waiter
        self._out.append(PersistGroup(token, snapshot))

    def _become_dead(self) -> None:
        self._transition(_S.DEAD)
        self._timers.clear()
        self._waiters.clear()
        self._m.pending_join.clear()
        self._m.pending_sync.clear()

    def _begin(self, now_ms: int) -> None:
        self._now_ms = now_ms
        self._out = []

    def _drain(self) -> list[Completion]:
        out, self._out = self._out, []
        return out

    def _settle(self, reply: _R) -> Outcome[_R]:
        """Answer directly when the caller's own parked request already completed."""
        completions = self._drain()
        if isinstance(reply, Pending):
            for index, completion in enumerate(completions):
                if (
                    isinstance(completion, JoinCompletion | SyncCompletion)
                    and completion.ticket == reply.ticket
                ):
                    del completions[index]
                    return Outcome(cast(_R, completion.response), tuple(completions))
        return Outcome(reply, tuple(completions))

"""One consumer group under Kafka's classic rebalance protocol, as pure logic.

Theory of operation
-------------------
``Group`` is Kafka's ``ClassicGroup`` plus the classic half of ``GroupMetadataManager``
(the JoinGroup / SyncGroup / Heartbeat / LeaveGroup handling and its timers), rewritten so
that nothing blocks and nothing reads a clock. Every public method takes ``now_ms`` and
returns values (see ``results``): the caller's own answer, or ``Pending(ticket)`` when the
request must wait, plus the ``Completion`` values the call produced for *other* parked
requests and for the log.

States (``state.GroupState``, transitions checked against a table)::

    Empty ─▶ PreparingRebalance ─▶ CompletingRebalance ─▶ Stable
                  ▲       └─▶ Empty                          │
                  └──────────────────────────────────────────┘   any ─▶ Dead

* **Join phase** (PreparingRebalance). A JoinGroup parks (``Pending``). The phase completes
  when every known member has rejoined and no KIP-394 pending member is outstanding, or when
  the rebalance timeout (the largest ``rebalance_timeout_ms`` of the members) passes; then
  dynamic members that did not rejoin are removed, a leader is chosen among those that did,
  the generation is bumped, the protocol is selected (``select_protocol``: every member votes
  for its most preferred protocol among those all members support; most votes wins) and all
  parked joins complete (the leader alone gets the member list with metadata).
  The *first* rebalance of an Empty group waits ``group.initial.rebalance.delay.ms`` and
  waits again, up to the rebalance timeout, while new members keep arriving.
* **Sync phase** (CompletingRebalance). SyncGroups park. The leader's SyncGroup carries the
  assignments; the group emits ``PersistGroup`` and, once the wiring reports the append with
  ``persisted(token)``, stores the assignments, answers every parked SyncGroup and becomes
  Stable. Members that send no SyncGroup within the rebalance timeout are removed and a new
  rebalance starts.
* **Stable.** Heartbeats refresh sessions. A new member, a member with changed protocols, a
  leader rejoin, a leave, an expired session or ``force_rebalance`` starts a new join phase;
  members learn of it from REBALANCE_IN_PROGRESS on their next heartbeat.
* **Static members** (KIP-345) keep their ``group_instance_id`` across restarts. A restarted
  instance (JoinGroup with an empty member id and a known instance id) takes over the old
  member id's place and assignment. In Stable, when the group's selected protocol would stay
  the same, there is no rebalance: the new member id is persisted and the member gets its
  previous assignment from its SyncGroup. (Kafka checks the *selected protocol*, not the raw
  metadata: a restarted cooperative consumer's metadata always differs, since it carries owned
  partitions and a generation; clients rejoin by themselves when their subscription changed.)
  The old member id is fenced: its parked requests and any later request answer
  FENCED_INSTANCE_ID.

This module handles the requests; the phase machinery they drive (transitions, timers,
completing the join and sync phases, answering parked requests) is ``rebalance.RebalanceCycle``
and the member bookkeeping is ``membership.Membership``.

Timers (session expiry per member, the join-phase deadline, the initial delay, the
pending-sync deadline) live in a ``Timers`` table. ``tick(now_ms)`` fires the due ones in
deadline order; ``next_deadline()`` tells the asyncio layer when to call it next. A timer is
always scheduled at least 1 ms after the call that schedules it, so one ``tick`` terminates.

Invariant: a partition is never assigned to two members at once
----------------------------------------------------------------
The coordinator only hands out a generation's assignments in SyncGroup responses of that
generation, and generation N+1 exists only after the join phase completed, which requires
every member of generation N to have either rejoined or been removed (a removed member's
requests are answered UNKNOWN_MEMBER_ID). With an eager assignor (range, roundrobin, sticky)
a consumer revokes all its partitions *before* sending JoinGroup, so by the time any
generation N+1 assignment exists, no generation N member still owns a partition. Requests
carrying generation N (Heartbeat, SyncGroup, OffsetCommit) are refused with
ILLEGAL_GENERATION, so a straggler learns it must rejoin and cannot commit over the new owner.
A member removed for not rejoining within the rebalance timeout has, by the same clock
(``max.poll.interval.ms`` is the rebalance timeout), already given its partitions up on the
client side. Static members that did not rejoin are kept (Kafka does the same) and are
removed if they send no SyncGroup within the rebalance timeout.

With the cooperative-sticky assignor members keep their owned partitions through the
rebalance and list them in their subscription. The coordinator does nothing different: the
leader's assignor gives a partition that must move to nobody in this generation, its previous
owner revokes it after SyncGroup and rejoins, and the second rebalance assigns the now-free
partition. Ownership never overlaps, provided the assignor follows that rule (Kafka's does).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from kio.schema.errors import ErrorCode

from weir.coordinator.config import GroupConfig
from weir.coordinator.consumer_protocol import CONSUMER_PROTOCOL_TYPE
from weir.coordinator.member import Member, Protocols
from weir.coordinator.rebalance import (
    AwaitAssignment,
    AwaitStaticJoin,
    RebalanceCycle,
    append_error_to_response_error,
    random_uuid,
)
from weir.coordinator.results import (
    Completion,
    GroupDescription,
    GroupSnapshot,
    JoinCompletion,
    JoinResponse,
    LeaveMemberResponse,
    LeaveResponse,
    MemberIdentity,
    Outcome,
    Pending,
    SyncResponse,
)
from weir.coordinator.state import GroupState
from weir.dataclass_util import copy_fields

__all__ = ["Group", "append_error_to_response_error"]

_E = ErrorCode
_S = GroupState

# JoinGroup v4+ (KIP-394) makes a new dynamic member fetch a member id first; v9+ (KIP-814)
# lets a rejoining static leader skip the assignment.
_REQUIRES_KNOWN_MEMBER_ID_VERSION = 4
_SUPPORTS_SKIP_ASSIGNMENT_VERSION = 9


class Group(RebalanceCycle):
    """A classic consumer group: membership, generations, assignments and their timers."""

    # -- read side -------------------------------------------------------------------------

    @property
    def state(self) -> GroupState:
        return self._state

    @property
    def generation_id(self) -> int:
        return self._generation_id

    @property
    def protocol_type(self) -> str | None:
        return self._m.protocol_type

    @property
    def protocol_name(self) -> str | None:
        return self._m.protocol_name

    @property
    def leader_id(self) -> str | None:
        return self._m.leader_id

    @property
    def state_timestamp_ms(self) -> int | None:
        """When the group entered its current state (Kafka's ``currentStateTimestamp``);
        None for a group loaded from a record too old to carry it."""
        return self._state_timestamp_ms

    @property
    def members(self) -> Mapping[str, Member]:
        """Members by id, read-only (the ``Member`` objects belong to the group)."""
        return MappingProxyType(self._m.members)

    @property
    def pending_member_ids(self) -> frozenset[str]:
        """KIP-394 member ids handed out with MEMBER_ID_REQUIRED and not yet joined."""
        return frozenset(self._m.pending_join)

    @property
    def rebalance_timeout_ms(self) -> int:
        """The largest rebalance timeout any member asked for."""
        return self._m.rebalance_timeout_ms

    @property
    def is_empty(self) -> bool:
        return self._state is _S.EMPTY

    @property
    def uses_consumer_protocol(self) -> bool:
        return self._m.protocol_type == CONSUMER_PROTOCOL_TYPE

    def static_member_id(self, group_instance_id: str) -> str | None:
        return self._m.static.get(group_instance_id)

    def next_deadline(self) -> int | None:
        """The earliest ``now_ms`` at which ``tick`` has work; None when nothing is scheduled."""
        return self._timers.next_deadline()

    def select_protocol(self) -> str:
        """Kafka's ``selectProtocol``: most votes among protocols every member supports."""
        return self._m.select_protocol()

    def subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribe to; None when unknown."""
        return self._m.subscribed_topics()

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Kafka's rule: when the subscriptions are unknown, a consumer group counts as
        subscribed (so its offsets are neither deleted nor expired by mistake)."""
        topics = self.subscribed_topics()
        if topics is None:
            return self.uses_consumer_protocol
        return topic in topics

    def describe(self) -> GroupDescription:
        """The DescribeGroups view; metadata, assignments and protocol only when Stable."""
        if self._state is _S.DEAD:
            return GroupDescription(self.group_id, _S.DEAD.value, "", "", ())
        stable = self._state is _S.STABLE
        return GroupDescription(
            group_id=self.group_id,
            state=self._state.value,
            protocol_type=self._m.protocol_type or "",
            protocol_name=(self._m.protocol_name or "") if stable else "",
            members=self._m.descriptions(with_data=stable),
        )

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def from_snapshot(
        cls,
        snapshot: GroupSnapshot,
        *,
        now_ms: int,
        config: GroupConfig | None = None,
        new_uuid: Callable[[], str] = random_uuid,
    ) -> Group:
        """Rebuild a group from its last metadata record (Kafka's group loading).

        A group with members comes back Stable, otherwise Empty; every member's session
        restarts at ``now_ms``, as Kafka's ``onLoaded`` reschedules heartbeats.
        """
        group = cls(snapshot.group_id, now_ms=now_ms, config=config, new_uuid=new_uuid)
        group._generation_id = snapshot.generation_id
        group._m.protocol_type = snapshot.protocol_type or None
        group._m.protocol_name = snapshot.protocol_name
        timestamp = snapshot.current_state_timestamp_ms
        group._state_timestamp_ms = timestamp if timestamp >= 0 else None
        if snapshot.members and snapshot.protocol_name is None:
            raise ValueError(f"group {snapshot.group_id} has members but no protocol")
        for m in snapshot.members:
            member = copy_fields(
                Member,
                m,
                protocol_type=snapshot.protocol_type,
                protocols=((snapshot.protocol_name or "", m.subscription),),
            )
            group._m.members[m.member_id] = member
            if m.group_instance_id is not None:
                group._m.static[m.group_instance_id] = m.member_id
            group._reschedule_heartbeat(member)
        if group._m.members:
            group._state = _S.STABLE
            leader = snapshot.leader
            group._m.leader_id = (
                leader if leader in group._m.members else next(iter(group._m.members))
            )
            if len(group._m.members) > group.config.max_size:
                # Kafka rebalances an over-capacity group on load so it can shed members.
                group._prepare_rebalance()
        group._out = []
        return group

    # -- JoinGroup -------------------------------------------------------------------------

    def join(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        api_version: int,
        now_ms: int,
    ) -> Outcome[JoinResponse | Pending]:
        """Handle a JoinGroup. JoinGroup v0 has no rebalance timeout: pass the session timeout."""
        self._begin(now_ms)
        request = _JoinRequest(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=tuple((str(name), bytes(meta)) for name, meta in protocols),
            api_version=api_version,
        )
        return self._settle(self._join(request))

    def _join(self, req: _JoinRequest) -> JoinResponse | Pending:
        if not self.group_id:
            return JoinResponse(_E.invalid_group_id, req.member_id)
        if not (
            self.config.min_session_timeout_ms
            <= req.session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            return JoinResponse(_E.invalid_session_timeout, req.member_id)
        if not self._accept_joining_member(req.member_id):
            self._remove(req.member_id)
            self._maybe_complete_join_phase()
            return JoinResponse(_E.group_max_size_reached, "")
        if req.member_id == "":
            return self._join_new_member(req)
        return self._join_existing_member(req)

    def _accept_joining_member(self, member_id: str) -> bool:
        member = self._m.members.get(member_id)
        if self._state in (_S.EMPTY, _S.DEAD):
            return True
        if self._state is _S.PREPARING_REBALANCE:
            # Counting awaiting members (not all members) lets the last rejoiners be the ones
            # turned away when group.max.size was lowered.
            return (member is not None and member.awaiting_join) or (
                self._m.awaiting_join_count() < self.config.max_size
            )
        return member is not None or len(self._m.members) < self.config.max_size

    def _join_new_member(self, req: _JoinRequest) -> JoinResponse | Pending:
        if self._state is _S.DEAD:
            return JoinResponse(_E.coordinator_not_available, "")
        if not self._supports(req):
            return JoinResponse(_E.inconsistent_group_protocol, "")
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_member_id = f"{prefix}-{self._new_uuid()}"
        if req.group_instance_id is not None:
            old_member_id = self._m.static.get(req.group_instance_id)
            if old_member_id is not None:
                return self._rejoin_static_member(req, old_member_id, new_member_id)
            return self._add_member_and_rebalance(req, new_member_id)
        if req.api_version >= _REQUIRES_KNOWN_MEMBER_ID_VERSION:
            # KIP-394: hand out the id first, so a client that times out and retries does not
            # leave a defunct member behind. The id is forgotten after one session timeout.
            self._add_pending_member(new_member_id, req.session_timeout_ms)
            return JoinResponse(_E.member_id_required, new_member_id)
        return self._add_member_and_rebalance(req, new_member_id)

    def _join_existing_member(self, req: _JoinRequest) -> JoinResponse | Pending:
        member_id = req.member_id
        if self._state is _S.DEAD:
            return JoinResponse(_E.coordinator_not_available, member_id)
        if not self._supports(req):
            return JoinResponse(_E.inconsistent_group_protocol, member_id)
        if member_id in self._m.pending_join and req.group_instance_id is None:
            return self._add_member_and_rebalance(req, member_id)
        error = self._m.validate(member_id, req.group_instance_id)
        if error is not None:
            return JoinResponse(error, member_id)
        member = self._m.members[member_id]
        if self._state is _S.PREPARING_REBALANCE:
            return self._update_member_and_rebalance(member, req)
        if self._state is _S.COMPLETING_REBALANCE:
            if not member.matches(req.protocols):
                return self._update_member_and_rebalance(member, req)
            # Same metadata: the member most likely lost our JoinGroup response; resend it.
            return self._join_response(member_id, with_members=self._m.leader_id == member_id)
        if self._state is _S.STABLE:
            if self._m.leader_id == member_id or not member.matches(req.protocols):
                # A leader's JoinGroup always rebalances: that is how a consumer leader
                # reacts to topic metadata changes its members' metadata does not show.
                return self._update_member_and_rebalance(member, req)
            return self._join_response(member_id, with_members=False)
        return JoinResponse(_E.unknown_member_id, member_id)

    def _add_member_and_rebalance(self, req: _JoinRequest, member_id: str) -> Pending:
        ticket = next(self._tickets)
        # The request's member id is "" or one the coordinator handed out; ``member_id`` is
        # the one this member gets.
        member = copy_fields(Member, req, member_id=member_id, join_ticket=ticket, is_new=True)
        if self._state is _S.PREPARING_REBALANCE and self._previous_state is _S.EMPTY:
            self._new_member_added = True
        self._m.add(member)
        # A new member cannot heartbeat while its JoinGroup is parked; bound its wait instead.
        self._reschedule_heartbeat(member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join()
        return Pending(ticket)

    def _update_member_and_rebalance(self, member: Member, req: _JoinRequest) -> Pending:
        ticket = next(self._tickets)
        self._update_member(
            member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, ticket
        )
        self._maybe_prepare_rebalance_or_complete_join()
        return Pending(ticket)

    def _rejoin_static_member(
        self, req: _JoinRequest, old_member_id: str, new_member_id: str
    ) -> Pending:
        assert req.group_instance_id is not None
        leader_before = self._m.leader_id
        member = self._replace_static_member(req.group_instance_id, old_member_id, new_member_id)
        self._reschedule_heartbeat(member)
        old_protocols = member.protocols
        old_rebalance_timeout_ms = member.rebalance_timeout_ms
        old_session_timeout_ms = member.session_timeout_ms
        ticket = next(self._tickets)
        self._update_member(
            member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, ticket
        )
        if self._state is _S.STABLE:
            if self._m.protocol_name == self.select_protocol():
                # KIP-345: no rebalance. Persist the new member id first, so a coordinator
                # failover cannot resurrect the old id and fence the live instance.
                self._persist(
                    self.snapshot(),
                    AwaitStaticJoin(
                        generation_id=self._generation_id,
                        ticket=ticket,
                        group_instance_id=req.group_instance_id,
                        old_member_id=old_member_id,
                        new_member_id=new_member_id,
                        old_protocols=old_protocols,
                        old_rebalance_timeout_ms=old_rebalance_timeout_ms,
                        old_session_timeout_ms=old_session_timeout_ms,
                        leader_before=leader_before,
                        skip_assignment_supported=(
                            req.api_version >= _SUPPORTS_SKIP_ASSIGNMENT_VERSION
                        ),
                    ),
                )
            else:
                self._maybe_prepare_rebalance_or_complete_join()
        elif self._state is _S.COMPLETING_REBALANCE:
            # The leader may already be assigning to the old member id; only a new round
            # gives the new id an assignment.
            self._prepare_rebalance()
        else:
            self._maybe_complete_join_phase()
        return Pending(ticket)

    def _finish_static_join(self, waiter: AwaitStaticJoin, error: ErrorCode) -> None:
        member = self._m.members.get(waiter.new_member_id)
        if (
            member is None
            or member.join_ticket != waiter.ticket
            or self._state is not _S.STABLE
            or self._generation_id != waiter.generation_id
        ):
            # A rebalance started meanwhile; it answers the parked JoinGroup itself.
            return
        if error is not _E.none:
            self._update_member(
                member,
                waiter.old_protocols,
                waiter.old_rebalance_timeout_ms,
                waiter.old_session_timeout_ms,
                None,
            )
            old = self._replace_static_member(
                waiter.group_instance_id, waiter.new_member_id, waiter.old_member_id
            )
            self._reschedule_heartbeat(old)
            self._out.append(
                JoinCompletion(
                    waiter.ticket,
                    JoinResponse(
                        error=append_error_to_response_error(error),
                        member_id="",
                        generation_id=self._generation_id,
                        protocol_type=self._m.protocol_type,
                        protocol_name=self._m.protocol_name,
                        leader=waiter.leader_before or "",
                    ),
                )
            )
            return
        if waiter.skip_assignment_supported:
            is_leader = self._m.leader_id == member.member_id
            # KIP-814: a restarted leader gets the members but must not reassign.
            response = replace(
                self._join_response(member.member_id, with_members=is_leader),
                skip_assignment=is_leader,
            )
        else:
            # Older clients: name the previous leader id, so a restarted leader does not see
            # itself as leader and run a pointless assignment the Stable group would ignore.
            response = JoinResponse(
                error=_E.none,
                member_id=member.member_id,
                generation_id=self._generation_id,
                protocol_type=self._m.protocol_type,
                protocol_name=self._m.protocol_name,
                leader=waiter.leader_before or "",
            )
        self._complete_join(member, response)

    # -- SyncGroup -------------------------------------------------------------------------

    def sync(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        now_ms: int,
    ) -> Outcome[SyncResponse | Pending]:
        """Handle a SyncGroup (``protocol_type``/``protocol_name`` are None before v5).

        A parked SyncGroup completes when the leader's assignment is persisted: the leader's
        own SyncGroup is therefore always ``Pending`` and comes with a ``PersistGroup``.
        """
        self._begin(now_ms)
        error = self._member_error(member_id, group_instance_id, generation_id)
        if error is None:
            error = self._sync_phase_error(protocol_type, protocol_name)
        if error is not None:
            return self._settle(SyncResponse(error))
        return self._settle(self._sync_member(self._m.members[member_id], assignments))

    def _sync_phase_error(
        self, protocol_type: str | None, protocol_name: str | None
    ) -> ErrorCode | None:
        """A known member's SyncGroup is refused when it names another protocol than the
        group's, or while the group is still preparing the rebalance."""
        if _inconsistent(protocol_type, self._m.protocol_type) or _inconsistent(
            protocol_name, self._m.protocol_name
        ):
            return _E.inconsistent_group_protocol
        if self._state is _S.PREPARING_REBALANCE:
            return _E.rebalance_in_progress
        return None

    def _member_error(
        self, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> ErrorCode | None:
        """The checks a Heartbeat and a SyncGroup share: a live group, this member (its static
        instance id included) and the current generation."""
        if not self.group_id:
            return _E.invalid_group_id
        if self._state is _S.DEAD:
            return _E.coordinator_not_available
        error = self._m.validate(member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != self._generation_id:
            return _E.illegal_generation
        if self._state is _S.EMPTY:
            return _E.unknown_member_id
        return None

    def _sync_member(
        self, member: Member, assignments: Mapping[str, bytes]
    ) -> SyncResponse | Pending:
        """A valid SyncGroup: the assignment when Stable, else park (the leader persists)."""
        member_id = member.member_id
        self._remove_pending_sync(member_id)
        if self._state is _S.STABLE:
            return SyncResponse(
                _E.none, member.assignment, self._m.protocol_type, self._m.protocol_name
            )
        # CompletingRebalance: park until the leader's assignment is stored.
        ticket = next(self._tickets)
        # A newer SyncGroup replaces a parked one; answer the stale one so it is not lost.
        self._complete_sync(member, SyncResponse(_E.rebalance_in_progress))
        member.sync_ticket = ticket
        if self._m.leader_id == member_id:
            assignment = {mid: bytes(assignments.get(mid, b"")) for mid in self._m.members}
            self._persist(
                self.snapshot(assignment), AwaitAssignment(self._generation_id, assignment)
            )
        return Pending(ticket)

    # -- Heartbeat -------------------------------------------------------------------------

    def heartbeat(
        self, *, member_id: str, group_instance_id: str | None, generation_id: int, now_ms: int
    ) -> ErrorCode:
        """Handle a Heartbeat: refresh the session, or tell the member to rejoin."""
        self._begin(now_ms)
        error = self._member_error(member_id, group_instance_id, generation_id)
        if error is not None:
            return error
        self._reschedule_heartbeat(self._m.members[member_id])
        if self._state is _S.PREPARING_REBALANCE:
            return _E.rebalance_in_progress
        # CompletingRebalance included: a member that has its JoinGroup response may
        # heartbeat while it waits to sync (current Kafka answers NONE there).
        return _E.none

    # -- LeaveGroup ------------------------------------------------------------------------

    def leave(self, members: Sequence[MemberIdentity], *, now_ms: int) -> Outcome[LeaveResponse]:
        """Handle a LeaveGroup (v3+ batch; wrap a v0-v2 member id in one ``MemberIdentity``).

        An empty ``member_id`` with a ``group_instance_id`` is the admin removal of a static
        member. Any successful leave starts a rebalance (or completes a join phase that was
        only waiting for the leavers).
        """
        self._begin(now_ms)
        if not self.group_id:
            return Outcome(LeaveResponse(_E.invalid_group_id))
        if self._state is _S.DEAD:
            return Outcome(LeaveResponse(_E.coordinator_not_available))
        results: list[LeaveMemberResponse] = []
        for ident in members:
            results.append(
                LeaveMemberResponse(ident.member_id, ident.group_instance_id, self._leave(ident))
            )
        if any(r.error is _E.none for r in results):
            if self._state in (_S.STABLE, _S.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join()
            elif self._state is _S.PREPARING_REBALANCE:
                self._maybe_complete_join_phase()
        return Outcome(LeaveResponse(_E.none, tuple(results)), tuple(self._drain()))

    def _leave(self, ident: MemberIdentity) -> ErrorCode:
        if ident.member_id == "":
            gid = ident.group_instance_id
            member_id = self._m.static.get(gid) if gid is not None else None
            if member_id is None:
                return _E.unknown_member_id
            self._remove(member_id)
            return _E.none
        if ident.member_id in self._m.pending_join:
            self._remove(ident.member_id)
            return _E.none
        error = self._m.validate(ident.member_id, ident.group_instance_id)
        if error is not None:
            return error
        self._remove(ident.member_id)
        return _E.none

    # -- operator actions ------------------------------------------------------------------

    def force_rebalance(self, now_ms: int) -> list[Completion]:
        """Start a rebalance now (``POST /api/groups/<group>/rebalance/``).

        Members learn of it from REBALANCE_IN_PROGRESS on their next heartbeat and rejoin;
        those that do not rejoin within the rebalance timeout are removed. A group that is
        Empty, Dead or already rebalancing is left alone.
        """
        self._begin(now_ms)
        if self._state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._prepare_rebalance()
        return self._drain()

    def validate_delete(self) -> ErrorCode:
        """DeleteGroups' check: only an Empty group may be deleted."""
        if self._state is _S.DEAD:
            return _E.group_id_not_found
        if self._state is not _S.EMPTY:
            return _E.non_empty_group
        return _E.none

    def delete(self, now_ms: int) -> ErrorCode:
        """Mark an Empty group Dead (the wiring then writes its tombstones)."""
        self._begin(now_ms)
        error = self.validate_delete()
        if error is _E.none:
            self._become_dead()
        return error

    def unload(self, now_ms: int) -> list[Completion]:
        """This broker stopped coordinating the group: answer every parked request with
        NOT_COORDINATOR (clients rediscover the coordinator) and go Dead."""
        self._begin(now_ms)
        for member in self._m.members.values():
            if member.join_ticket is not None:
                self._complete_join(member, JoinResponse(_E.not_coordinator, member.member_id))
            if member.sync_ticket is not None:
                self._complete_sync(member, SyncResponse(_E.not_coordinator))
        if self._state is not _S.DEAD:
            self._become_dead()
        return self._drain()

    # -- offsets support -------------------------------------------------------------------

    def validate_offset_commit(
        self,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        now_ms: int,
        transactional: bool = False,
    ) -> ErrorCode:
        """Kafka's ``validateOffsetCommit`` for OffsetCommit v1+ and TxnOffsetCommit
        (``transactional``); a valid OffsetCommit from a member of a Stable or rebalancing
        group also refreshes its session, as in Kafka.

        A transactional commit without member id and generation (TxnOffsetCommit v0-v2, or a
        producer that does not pass its consumer's group metadata) is accepted in any state,
        and none is refused during CompletingRebalance: the transaction, not the rebalance,
        decides whether its offsets count (Kafka's ``ClassicGroup.validateOffsetCommit``)."""
        self._begin(now_ms)
        if self._state is _S.DEAD:
            return _E.coordinator_not_available
        if generation_id < 0 and self._state is _S.EMPTY:
            # The admin client or a consumer using manual assignment: offsets only.
            return _E.none
        if generation_id >= 0 or member_id or group_instance_id is not None:
            error = self._m.validate(member_id, group_instance_id)
            if error is not None:
                return error
            if generation_id != self._generation_id:
                return _E.illegal_generation
        elif not transactional and self._state is not _S.EMPTY:
            return _E.unknown_member_id
        if transactional:
            return _E.none
        if self._state is _S.COMPLETING_REBALANCE:
            return _E.rebalance_in_progress
        member = self._m.members.get(member_id)
        if member is not None:
            self._reschedule_heartbeat(member)
        return _E.none

    # -- persistence acknowledgements ------------------------------------------------------

    def persisted(
        self, token: int, *, now_ms: int, error: ErrorCode = ErrorCode.none
    ) -> list[Completion]:
        """The append asked for by ``PersistGroup(token)`` finished with ``error``."""
        self._begin(now_ms)
        waiter = self._waiters.pop(token, None)
        if isinstance(waiter, AwaitAssignment):
            if (
                self._state is _S.COMPLETING_REBALANCE
                and waiter.generation_id == self._generation_id
            ):
                if error is not _E.none:
                    self._reset_and_propagate_assignment(append_error_to_response_error(error))
                    self._maybe_prepare_rebalance_or_complete_join()
                else:
                    for member in self._m.members.values():
                        member.assignment = waiter.assignment.get(member.member_id, b"")
                    self._propagate_assignment(_E.none)
                    self._transition(_S.STABLE)
        elif isinstance(waiter, AwaitStaticJoin):
            self._finish_static_join(waiter, error)
        return self._drain()

    # -- timers ----------------------------------------------------------------------------

    def tick(self, now_ms: int) -> list[Completion]:
        """Fire every timer due at ``now_ms`` (in deadline order) and return what resulted."""
        self._begin(now_ms)
        while (due := self._timers.pop_due(now_ms)) is not None:
            self._fire(due[1])
        return self._drain()

    def _supports(self, req: _JoinRequest) -> bool:
        return self._m.supports_protocols(
            req.protocol_type, req.protocol_names, group_is_empty=self._state is _S.EMPTY
        )


@dataclass(frozen=True, slots=True)
class _JoinRequest:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    api_version: int

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current

"""Who is in a group: the member bookkeeping half of Kafka's ``ClassicGroup``.

Theory of operation
-------------------
``Membership`` holds the members (in join order, which is also the order leaders are picked
in when one leaves), the static ``group.instance.id`` → member id map, the KIP-394 member ids
handed out but not yet joined, the members that still owe a SyncGroup, the leader, the
group's protocol type and its selected protocol. It answers the questions the state machine
asks (is this member id valid for that instance id, has everyone rejoined, which protocol
wins, which topics are subscribed) and renders members for responses and records.

It knows nothing of states, timers or parked requests: ``Group`` decides *when* to add,
remove or replace a member and answers the removed member's parked requests itself.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping

from kio.schema.errors import ErrorCode

from weir.coordinator.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_subscription,
)
from weir.coordinator.member import Member
from weir.coordinator.results import JoinMember, MemberDescription, MemberSnapshot
from weir.dataclass_util import copy_fields

__all__ = ["Membership"]


class Membership:
    """Members, static ids, pending ids, the leader and the protocol of one group."""

    __slots__ = (
        "leader_id",
        "members",
        "pending_join",
        "pending_sync",
        "protocol_name",
        "protocol_type",
        "static",
    )

    def __init__(self) -> None:
        self.members: dict[str, Member] = {}
        self.static: dict[str, str] = {}
        self.pending_join: set[str] = set()
        """KIP-394 member ids answered with MEMBER_ID_REQUIRED and not joined yet."""
        self.pending_sync: set[str] = set()
        """Members of the current generation that have not sent SyncGroup yet."""
        self.leader_id: str | None = None
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None

    # -- changes -------------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static:
                raise ValueError(f"static member {member.group_instance_id} is already a member")
            self.static[member.group_instance_id] = member.member_id
        if not self.members:
            # The first member sets the group's protocol type (again, after the group emptied).
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_join.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        """Forget a member or a pending member id; the next member in join order leads."""
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)
        return member

    def replace_static(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> tuple[Member, Member]:
        """A restarted static member takes over: same everything, new member id; the old
        member's parked requests stay with the old member (the caller answers them)."""
        old = self.members.pop(old_member_id)
        new = dataclasses.replace(
            old, member_id=new_member_id, join_ticket=None, sync_ticket=None, is_new=False
        )
        self.members[new_member_id] = new
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync:
            self.pending_sync.discard(old_member_id)
            self.pending_sync.add(new_member_id)
        self.static[group_instance_id] = new_member_id
        return old, new

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick the first member that did (Kafka's
        ``maybeElectNewJoinedLeader``); False when nobody rejoined or there is no leader."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    # -- questions -----------------------------------------------------------------------

    def validate(self, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
        """Kafka's ``validateMember``: a known instance id must map to this member id."""
        if group_instance_id is not None:
            known = self.static.get(group_instance_id)
            if known is None:
                return ErrorCode.unknown_member_id
            if known != member_id:
                return ErrorCode.fenced_instance_id
        if member_id not in self.members:
            return ErrorCode.unknown_member_id
        return None

    def supports_protocols(
        self, protocol_type: str, names: frozenset[str], *, group_is_empty: bool
    ) -> bool:
        """Could a member with these protocols join? An Empty group takes any non-empty
        offer; otherwise the type must match and one protocol must be common to all."""
        if group_is_empty:
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        return any(all(name in m.protocol_names for m in self.members.values()) for name in names)

    def select_protocol(self) -> str:
        """Kafka's ``selectProtocol``: most votes among protocols every member supports."""
        if not self.members:
            raise ValueError("cannot select a protocol for a group without members")
        candidates = frozenset.intersection(*(m.protocol_names for m in self.members.values()))
        votes = Counter(member.vote(candidates) for member in self.members.values())
        # Counter keeps first-vote order, so a tie goes to the protocol voted for first.
        return max(votes, key=lambda name: votes[name])

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_joined(self) -> bool:
        """Every member is parked in JoinGroup and no KIP-394 id is outstanding."""
        return self.awaiting_join_count() == len(self.members) and not self.pending_join

    @property
    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest any member asked for."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def subscribed_topics(self) -> frozenset[str] | None:
        """Topics the members subscribe to; None when unknown (not a consumer group, no
        protocol selected yet, or metadata that is not a consumer subscription)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            metadata = member.metadata(self.protocol_name)
            if metadata is None:
                return None
            try:
                topics.update(decode_subscription(metadata).topics)
            except ConsumerProtocolError:
                return None
        return frozenset(topics)

    # -- renderings ----------------------------------------------------------------------

    def _metadata(self, member: Member) -> bytes:
        name = self.protocol_name
        return (member.metadata(name) or b"") if name is not None else b""

    def join_members(self) -> tuple[JoinMember, ...]:
        """The member list a leader's JoinGroup response carries."""
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, self._metadata(m))
            for m in self.members.values()
        )

    def snapshots(self, assignment: Mapping[str, bytes] | None) -> tuple[MemberSnapshot, ...]:
        """Members as ``GroupMetadataValue`` stores them (``assignment`` overrides theirs)."""
        return tuple(
            copy_fields(
                MemberSnapshot,
                m,
                subscription=self._metadata(m),
                assignment=m.assignment if assignment is None else assignment.get(m.member_id, b""),
            )
            for m in self.members.values()
        )

    def descriptions(self, *, with_data: bool) -> tuple[MemberDescription, ...]:
        """Members as DescribeGroups shows them; metadata and assignment only ``with_data``."""
        return tuple(
            copy_fields(
                MemberDescription,
                m,
                metadata=self._metadata(m) if with_data else b"",
                assignment=m.assignment if with_data else b"",
            )
            for m in self.members.values()
        )

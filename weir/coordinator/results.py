"""Values the group state machine returns: responses, parked-request markers and effects.

Theory of operation
-------------------
Every ``Group`` method answers with values, never with callbacks or futures:

* an immediate response (``JoinResponse``, ``SyncResponse``, ``LeaveResponse``, an
  ``ErrorCode`` for Heartbeat), or ``Pending(ticket)`` when the request must wait (a JoinGroup
  until the join phase completes, a SyncGroup until the leader's assignment is stored);
* a tuple of ``Completion`` values the call caused: responses for *other* parked requests
  (``JoinCompletion``/``SyncCompletion``, matched by ticket) and ``PersistGroup``, a request to
  append the group's metadata record to ``__consumer_offsets``.

Responses mirror the Kafka response fields one to one (Kafka's null protocol type/name is
``None``; the handler maps it to each API version's wire form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from kio.schema.errors import ErrorCode

__all__ = [
    "Completion",
    "GroupDescription",
    "GroupSnapshot",
    "JoinCompletion",
    "JoinMember",
    "JoinResponse",
    "LeaveMemberResponse",
    "LeaveResponse",
    "MemberDescription",
    "MemberIdentity",
    "MemberSnapshot",
    "Outcome",
    "Pending",
    "PersistGroup",
    "SyncCompletion",
    "SyncResponse",
]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class JoinMember:
    """One entry of the JoinGroup response's member list (sent to the leader only)."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResponse:
    """A JoinGroup response."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: tuple[JoinMember, ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResponse:
    """A SyncGroup response."""

    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True, slots=True)
class MemberIdentity:
    """One member named by a LeaveGroup request (v3+ batches them)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveMemberResponse:
    """Per-member LeaveGroup result."""

    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveResponse:
    """A LeaveGroup response: a top-level error and, for v3+, one result per member."""

    error: ErrorCode
    members: tuple[LeaveMemberResponse, ...] = ()


@dataclass(frozen=True, slots=True)
class Pending:
    """The request is parked; its response arrives later as a completion with this ticket."""

    ticket: int


@dataclass(frozen=True, slots=True)
class JoinCompletion:
    """The response for a parked JoinGroup."""

    ticket: int
    response: JoinResponse


@dataclass(frozen=True, slots=True)
class SyncCompletion:
    """The response for a parked SyncGroup."""

    ticket: int
    response: SyncResponse


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    """A member as Kafka's ``GroupMetadataValue`` stores it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    """The member's metadata for the group's selected protocol."""
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A group as Kafka's ``GroupMetadataValue`` stores it (what a new coordinator loads)."""

    group_id: str
    protocol_type: str
    """``""`` for a group that has none."""
    generation_id: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp_ms: int
    """-1 when unknown."""
    members: tuple[MemberSnapshot, ...] = ()


@dataclass(frozen=True, slots=True)
class PersistGroup:
    """Append ``snapshot`` as the group's metadata record, then call ``Group.persisted``.

    ``Group.persisted(token, error=..., now_ms=...)`` must be called once the append is
    acknowledged (or failed): a leader's SyncGroup, and a static member's rejoin while the group
    is Stable, are only answered then, as in Kafka. Other persists (a generation that ended
    with no members) need no answer, but calling ``persisted`` for them is harmless.
    """

    token: int
    snapshot: GroupSnapshot


Completion = JoinCompletion | SyncCompletion | PersistGroup


@dataclass(frozen=True, slots=True)
class Outcome(Generic[R]):
    """A request's own answer plus everything else the request caused."""

    reply: R
    completions: tuple[Completion, ...] = ()


@dataclass(frozen=True, slots=True)
class MemberDescription:
    """A member as DescribeGroups shows it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    """The selected protocol's metadata; empty unless the group is Stable (as in Kafka)."""
    assignment: bytes
    """Empty unless the group is Stable (as in Kafka)."""


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A group as DescribeGroups shows it."""

    group_id: str
    state: str
    protocol_type: str
    protocol_name: str
    """The selected protocol; empty unless the group is Stable (as in Kafka)."""
    members: tuple[MemberDescription, ...]

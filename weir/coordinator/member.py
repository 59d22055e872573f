"""One member of a classic group, as the coordinator tracks it between requests.

Theory of operation
-------------------
Kafka's ``ClassicGroupMember``: identity (member id, optional static ``group_instance_id``,
client id and host), the timeouts it asked for, the protocols it supports in preference order
with their metadata, the assignment the leader gave it, and two parked requests at most: a
JoinGroup waiting for the join phase (``join_ticket``) and a SyncGroup waiting for the leader
(``sync_ticket``). Unlike the values in ``results``, a member is mutable state owned by its
``Group``; nothing outside the group holds one.

``has_satisfied_heartbeat`` is Kafka's rule for an expiring session: an established member
that is parked in JoinGroup or SyncGroup cannot heartbeat (its client waits on the response),
so the parked request counts as a heartbeat; a brand-new member gets no such grace.

A member's identity and timeouts travel under the same field names through its JoinGroup
request, the ``Member``, its ``GroupMetadataValue`` entry (``MemberSnapshot``) and its
DescribeGroups entry; ``weir.dataclass_util.copy_fields`` carries them from one to the next.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["Member", "Protocols"]

Protocols = tuple[tuple[str, bytes], ...]
"""``(protocol name, metadata)`` pairs in the member's preference order."""


@dataclass(slots=True)
class Member:
    """A group member."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    last_heartbeat_ms: int = 0
    join_ticket: int | None = None
    sync_ticket: int | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_ticket is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_ticket is not None

    @property
    def has_satisfied_heartbeat(self) -> bool:
        if self.is_new:
            return False
        return self.awaiting_join or self.awaiting_sync

    @property
    def protocol_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.protocols)

    def metadata(self, protocol_name: str) -> bytes | None:
        """The member's metadata for ``protocol_name``, or None if it does not support it."""
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return None

    def matches(self, protocols: Protocols) -> bool:
        """Same protocols, same order, same metadata (Kafka's ``matches``)."""
        return self.protocols == protocols

    def vote(self, candidates: Iterable[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        allowed = set(candidates)
        for name, _ in self.protocols:
            if name in allowed:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(allowed)}")

"""A fake clock and a driver that plays the asyncio layer's part for one ``Group``.

The driver keeps every completed parked response by ticket, records ``PersistGroup``
requests and (unless told otherwise) acknowledges them at once, like a log append that
succeeds immediately.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from weir.coordinator import (
    Completion,
    Group,
    GroupConfig,
    JoinCompletion,
    JoinResponse,
    LeaveResponse,
    MemberIdentity,
    Pending,
    PersistGroup,
    SyncCompletion,
    SyncResponse,
)
from weir.coordinator.consumer_protocol import Subscription, encode_subscription

START_MS = 1_700_000_000_000
SESSION_MS = 10_000
REBALANCE_MS = 30_000


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription(topics=topics, version=0))


DEFAULT_PROTOCOLS: tuple[tuple[str, bytes], ...] = (("range", subscription("orders")),)


class Driver:
    """Drives one group with a fake clock."""

    def __init__(
        self,
        group_id: str = "payments",
        *,
        config: GroupConfig | None = None,
        auto_persist: bool = True,
    ) -> None:
        self.now = START_MS
        counter = itertools.count(1)
        self.group = Group(
            group_id,
            now_ms=self.now,
            config=config or GroupConfig(),
            new_uuid=lambda: f"uuid{next(counter)}",
        )
        self.auto_persist = auto_persist
        self.responses: dict[int, JoinResponse | SyncResponse] = {}
        self.persists: list[PersistGroup] = []

    # -- time ------------------------------------------------------------------------------

    def advance(self, ms: int) -> None:
        self.now += ms
        self.absorb(self.group.tick(self.now))

    def run_until_idle(self, limit_ms: int) -> None:
        """Tick at every deadline up to ``now + limit_ms`` (what the asyncio loop does)."""
        end = self.now + limit_ms
        while (deadline := self.group.next_deadline()) is not None and deadline <= end:
            self.now = max(self.now, deadline)
            self.absorb(self.group.tick(self.now))
        self.now = end

    def until_resolved(self, replies: Sequence[JoinResponse | Pending]) -> list[JoinResponse]:
        """Jump from deadline to deadline until every reply is answered."""
        while any(self.resolved(reply) is None for reply in replies):
            deadline = self.group.next_deadline()
            assert deadline is not None, "pending replies but nothing scheduled"
            self.now = max(self.now, deadline)
            self.absorb(self.group.tick(self.now))
        return [self.join_response(reply) for reply in replies]

    # -- plumbing --------------------------------------------------------------------------

    def absorb(self, completions: Sequence[Completion]) -> None:
        for completion in completions:
            if isinstance(completion, JoinCompletion | SyncCompletion):
                assert completion.ticket not in self.responses, "ticket completed twice"
                self.responses[completion.ticket] = completion.response
            else:
                self.persists.append(completion)
                if self.auto_persist:
                    self.absorb(self.group.persisted(completion.token, now_ms=self.now))

    def resolved(
        self, reply: JoinResponse | SyncResponse | Pending
    ) -> JoinResponse | SyncResponse | None:
        if isinstance(reply, Pending):
            return self.responses.get(reply.ticket)
        return reply

    def join_response(self, reply: JoinResponse | Pending) -> JoinResponse:
        response = self.resolved(reply)
        assert isinstance(response, JoinResponse), f"join still pending: {reply}"
        return response

    def sync_response(self, reply: SyncResponse | Pending) -> SyncResponse:
        response = self.resolved(reply)
        assert isinstance(response, SyncResponse), f"sync still pending: {reply}"
        return response

    # -- requests --------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        *,
        instance_id: str | None = None,
        client_id: str = "consumer",
        protocols: Sequence[tuple[str, bytes]] = DEFAULT_PROTOCOLS,
        protocol_type: str = "consumer",
        session_ms: int = SESSION_MS,
        rebalance_ms: int = REBALANCE_MS,
        api_version: int = 9,
    ) -> JoinResponse | Pending:
        outcome = self.group.join(
            member_id=member_id,
            group_instance_id=instance_id,
            client_id=client_id,
            client_host=f"/10.0.0.{len(self.group.members) + 1}",
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            api_version=api_version,
            now_ms=self.now,
        )
        self.absorb(outcome.completions)
        return outcome.reply

    def join_new(
        self, client_id: str = "consumer", **kwargs: Any
    ) -> tuple[str, JoinResponse | Pending]:
        """KIP-394: first JoinGroup gets MEMBER_ID_REQUIRED, the second really joins."""
        first = self.join("", client_id=client_id, **kwargs)
        assert isinstance(first, JoinResponse)
        assert first.error is ErrorCode.member_id_required
        return first.member_id, self.join(first.member_id, client_id=client_id, **kwargs)

    def joined(self, *client_ids: str) -> list[str]:
        """One member per client id through the join phase (generation 1), not yet synced;
        their member ids in join order."""
        joins = [self.join_new(client_id=client_id) for client_id in client_ids]
        self.until_resolved([reply for _, reply in joins])
        return [member_id for member_id, _ in joins]

    def sync(
        self,
        member_id: str,
        generation_id: int,
        assignments: Mapping[str, bytes] | None = None,
        *,
        instance_id: str | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> SyncResponse | Pending:
        outcome = self.group.sync(
            member_id=member_id,
            group_instance_id=instance_id,
            generation_id=generation_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments or {},
            now_ms=self.now,
        )
        self.absorb(outcome.completions)
        return outcome.reply

    def heartbeat(
        self, member_id: str, generation_id: int, *, instance_id: str | None = None
    ) -> ErrorCode:
        return self.group.heartbeat(
            member_id=member_id,
            group_instance_id=instance_id,
            generation_id=generation_id,
            now_ms=self.now,
        )

    def leave(self, *members: MemberIdentity) -> LeaveResponse:
        outcome = self.group.leave(members, now_ms=self.now)
        self.absorb(outcome.completions)
        return outcome.reply

    def force_rebalance(self) -> None:
        self.absorb(self.group.force_rebalance(self.now))

    # -- scenarios -------------------------------------------------------------------------

    def stable_group(self, count: int, **join_kwargs: Any) -> tuple[list[str], int]:
        """``count`` members joined (KIP-394 flow), past the initial delay, synced; the
        leader assigns each member ``b"assignment-<member id>"``."""
        member_ids: list[str] = []
        replies: list[JoinResponse | Pending] = []
        for index in range(count):
            member_id, reply = self.join_new(client_id=f"consumer-{index}", **join_kwargs)
            member_ids.append(member_id)
            replies.append(reply)
        joins = self.until_resolved(replies)
        generation = joins[0].generation_id
        leader = joins[0].leader
        assignments = {m: f"assignment-{m}".encode() for m in member_ids}
        sync_replies = {leader: self.sync(leader, generation, assignments)}
        for member_id in member_ids:
            if member_id != leader:
                sync_replies[member_id] = self.sync(member_id, generation)
        for member_id, sync_reply in sync_replies.items():
            assert self.sync_response(sync_reply).assignment == assignments[member_id]
        return member_ids, generation

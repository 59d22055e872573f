"""Consumer-group coordinator: Kafka's classic group protocol and offset storage, pure logic.

Theory of operation
-------------------
Nothing in this package performs I/O, reads a clock or imports asyncio. The broker's asyncio
layer owns, per ``__consumer_offsets`` partition it leads, a ``dict[str, Group]`` and an
``OffsetStore`` (both rebuilt with ``records.replay`` when it becomes leader), and feeds them:

* Requests: ``Group.join`` / ``sync`` / ``heartbeat`` / ``leave``, ``OffsetStore.commit`` /
  ``fetch`` / ``delete``; each takes ``now_ms`` and returns values.
* Parked requests: a JoinGroup or SyncGroup that must wait returns ``Pending(ticket)``. Its
  response arrives later as a ``JoinCompletion``/``SyncCompletion`` with that ticket, from
  whichever call completes it (another member's request, ``tick``, ``persisted``).
* Writes: ``PersistGroup`` asks for the group's metadata record (``records.encode_group_metadata``)
  to be appended; report the result with ``Group.persisted(token, ...)``. Offset writes are
  the ``OffsetCommitRecord`` values an ``OffsetStore`` call returns; ``OffsetStore.apply``
  them once appended. A TxnOffsetCommit's are the producer's transactional batch:
  ``add_pending`` them once in the log, ``complete_transaction`` at the producer's marker.
* Time: ``Group.next_deadline()`` is the earliest ``now_ms`` at which ``Group.tick`` has work;
  sleep until the minimum over all groups, then tick. Offsets expire with
  ``OffsetStore.expire`` every ``offsets.retention.check.interval.ms``.

Modules: ``group`` (request handling, the public ``Group``), ``rebalance`` (the phase
machinery ``Group`` runs on), ``membership`` and ``member`` (who is in a group), ``state``
(the transition table), ``timers``, ``results`` (the values), ``offsets``, ``records``
(``__consumer_offsets`` formats, ``replay``, ``partition_for``), ``consumer_protocol``
(subscription/assignment payloads), ``config``.
"""

from weir.coordinator.config import GroupConfig, OffsetConfig
from weir.coordinator.group import Group
from weir.coordinator.offsets import (
    CommitOutcome,
    DeleteOutcome,
    ExpiryOutcome,
    FetchedOffset,
    OffsetAndMetadata,
    OffsetCommitRecord,
    OffsetStore,
    PartitionCommit,
    PartitionResult,
    PendingOffset,
)
from weir.coordinator.records import (
    GroupMetadataRecord,
    TxnMarker,
    TxnRecord,
    decode,
    encode,
    encode_group_metadata,
    encode_group_tombstone,
    encode_offset_commit,
    partition_for,
    replay,
)
from weir.coordinator.results import (
    Completion,
    GroupDescription,
    GroupSnapshot,
    JoinCompletion,
    JoinMember,
    JoinResponse,
    LeaveMemberResponse,
    LeaveResponse,
    MemberDescription,
    MemberIdentity,
    MemberSnapshot,
    Outcome,
    Pending,
    PersistGroup,
    SyncCompletion,
    SyncResponse,
)
from weir.coordinator.state import GroupState

__all__ = [
    "CommitOutcome",
    "Completion",
    "DeleteOutcome",
    "ExpiryOutcome",
    "FetchedOffset",
    "Group",
    "GroupConfig",
    "GroupDescription",
    "GroupMetadataRecord",
    "GroupSnapshot",
    "GroupState",
    "JoinCompletion",
    "JoinMember",
    "JoinResponse",
    "LeaveMemberResponse",
    "LeaveResponse",
    "MemberDescription",
    "MemberIdentity",
    "MemberSnapshot",
    "OffsetAndMetadata",
    "OffsetCommitRecord",
    "OffsetConfig",
    "OffsetStore",
    "Outcome",
    "PartitionCommit",
    "PartitionResult",
    "Pending",
    "PendingOffset",
    "PersistGroup",
    "SyncCompletion",
    "SyncResponse",
    "TxnMarker",
    "TxnRecord",
    "decode",
    "encode",
    "encode_group_metadata",
    "encode_group_tombstone",
    "encode_offset_commit",
    "partition_for",
    "replay",
]

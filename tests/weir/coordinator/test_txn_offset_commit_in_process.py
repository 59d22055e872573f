"""TxnOffsetCommit and OffsetFetch handlers in-process, over a real group coordinator and logs.

As ``tests/weir/test_handlers_in_process.py`` does: a real ``ReplicaManager`` with its logs
under ``tmp_path``, a ``MetadataView`` over a ``MetadataCache`` tailing the suite's Redis
(isolated by ``cluster_id``); this broker is the controller and leads every partition, and a
real ``GroupCoordinator`` loads the ``__consumer_offsets`` shards it leads. The handlers are
called with kio requests as the server calls them. Markers are written as the WriteTxnMarkers
handler writes them: ``Log.append_control_marker`` on the offsets partition, then
``GroupCoordinator.complete_transaction``. The coordinator's clock is a fake one the tests
share with the group driver of ``tests/weir/coordinator/harness.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequest as OffsetFetchRequestV8,
)
from kio.schema.offset_fetch.v8.request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kio.schema.txn_offset_commit.v3.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

from tests.weir.coordinator.harness import Driver
from tests.weir.single_broker import (
    BROKER_ID,
    SingleBroker,
    connection,
    eventually,
    now_ms,
    request,
    single_broker,
)
from weir.client import encode_request
from weir.coordinator_topic import read_log
from weir.group_coordinator import OFFSETS_TOPIC, GroupCoordinator
from weir.handlers import offsets, supported_versions
from weir.handlers._authz import Access
from weir.metadata_view import MetadataView
from weir.protocol.api_keys import ApiKey
from weir.protocol.codec import decode_request, encode_response
from weir.replica_manager import ReplicaManager
from weir.security.acl import (
    AclBinding,
    AclIndex,
    AclOperation,
    AclPermission,
    Authorizer,
    PatternType,
    ResourceType,
)

E = ErrorCode
TOPIC = "orders"
OFFSETS_PARTITIONS = 2
GROUP = "payments"
PID = 7000
EPOCH = 0


@dataclass
class Parts:
    broker: SingleBroker
    clock: list[int] = field(default_factory=lambda: [now_ms()])

    @property
    def coordinators(self) -> list[Any]:
        return self.broker.coordinators

    @property
    def view(self) -> MetadataView:
        return self.broker.view

    @property
    def replicas(self) -> ReplicaManager:
        return self.broker.replicas

    async def coordinator(self) -> GroupCoordinator:
        """A group coordinator that has loaded every ``__consumer_offsets`` partition."""
        coordinator = GroupCoordinator(
            view=self.view,
            replicas=self.replicas,
            create_topic=self.broker.admin.auto_create_topic,
            time_ms=lambda: self.clock[0],
        )
        self.coordinators.append(coordinator)
        coordinator.on_metadata()
        await eventually(lambda: all(s.loaded for s in coordinator.shards.values()))
        assert len(coordinator.shards) == OFFSETS_PARTITIONS
        return coordinator

    def marker(self, coordinator: GroupCoordinator, producer_id: int, *, commit: bool) -> None:
        """What WriteTxnMarkers does on the leader of the group's offsets partition."""
        index = coordinator.partition_of(GROUP)
        partition = self.replicas.get(OFFSETS_TOPIC, index)
        assert partition is not None
        partition.log.append_control_marker(
            producer_id=producer_id,
            producer_epoch=EPOCH,
            commit=commit,
            coordinator_epoch=0,
            leader_epoch=partition.leader_epoch,
        )
        coordinator.complete_transaction(index, producer_id, commit)


@pytest.fixture
async def parts(redis_server: str, cluster_id: str, tmp_path: Path) -> AsyncIterator[Parts]:
    async with single_broker(
        redis_url=redis_server, cluster_id=cluster_id, data_dir=tmp_path / "data"
    ) as broker:
        await broker.create_topic(TOPIC, 3)
        await broker.create_topic(
            OFFSETS_TOPIC,
            OFFSETS_PARTITIONS,
            **{"cleanup.policy": "compact", "min.insync.replicas": "1"},
        )
        yield Parts(broker)


async def txn_commit(
    parts: Parts,
    groups: GroupCoordinator,
    commits: dict[int, int],
    *,
    producer_id: int = PID,
    producer_epoch: int = EPOCH,
    generation_id: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
    access: Access | None = None,
) -> dict[int, ErrorCode]:
    """A TxnOffsetCommit v3 of ``{partition: offset}`` of TOPIC; the errors by partition."""
    body = TxnOffsetCommitRequest(
        transactional_id="txn-1",
        group_id=GROUP,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
        topics=(
            TxnOffsetCommitRequestTopic(
                name=TOPIC,
                partitions=tuple(
                    TxnOffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_metadata=""
                    )
                    for p, o in commits.items()
                ),
            ),
        ),
    )
    response = await offsets.handle_txn_offset_commit(
        connection(),
        request(ApiKey.TXN_OFFSET_COMMIT, 3, body),
        metadata=parts.view,
        access=access or Access(),
        groups=groups,
    )
    (topic,) = response.topics
    assert topic.name == TOPIC
    return {p.partition_index: p.error_code for p in topic.partitions}


async def fetch(
    groups: GroupCoordinator, *, require_stable: bool, version: int = 7
) -> dict[int, tuple[int, ErrorCode]]:
    """OffsetFetch of TOPIC's partitions 0-2: (offset, error) by partition."""
    if version >= 8:
        body: Any = OffsetFetchRequestV8(
            groups=(
                OffsetFetchRequestGroup(
                    group_id=GROUP,
                    topics=(OffsetFetchRequestTopics(name=TOPIC, partition_indexes=(0, 1, 2)),),
                ),
            ),
            require_stable=require_stable,
        )
    else:
        body = OffsetFetchRequest(
            group_id=GROUP,
            topics=(OffsetFetchRequestTopic(name=TOPIC, partition_indexes=(0, 1, 2)),),
            require_stable=require_stable,
        )
    response = await offsets.handle_offset_fetch(
        connection(), request(ApiKey.OFFSET_FETCH, version, body), access=Access(), groups=groups
    )
    answer = response.groups[0] if version >= 8 else response
    assert answer.error_code == E.none
    (topic,) = answer.topics
    return {p.partition_index: (p.committed_offset, p.error_code) for p in topic.partitions}


def visible(answer: dict[int, tuple[int, ErrorCode]]) -> dict[int, int]:
    return {p: offset for p, (offset, _) in answer.items()}


UNSTABLE = (-1, E.unstable_offset_commit)


def test_txn_offset_commit_is_advertised_v0_to_v3() -> None:
    assert supported_versions()[ApiKey.TXN_OFFSET_COMMIT] == (0, 3)


async def test_every_advertised_version_crosses_the_wire(parts: Parts) -> None:
    """v0-v2 carry no group metadata; each version decodes, commits and encodes an answer."""
    groups = await parts.coordinator()
    for version in range(4):
        schema = importlib.import_module(f"kio.schema.txn_offset_commit.v{version}.request")
        extra = (
            {"generation_id": -1, "member_id": "", "group_instance_id": None}
            if version >= 3
            else {}
        )
        body = schema.TxnOffsetCommitRequest(
            transactional_id="txn-1",
            group_id=GROUP,
            producer_id=100 + version,
            producer_epoch=EPOCH,
            topics=(
                schema.TxnOffsetCommitRequestTopic(
                    name=TOPIC,
                    partitions=(
                        schema.TxnOffsetCommitRequestPartition(
                            partition_index=version % 3,
                            committed_offset=10 + version,
                            committed_metadata=None,
                        ),
                    ),
                ),
            ),
            **extra,
        )
        decoded = decode_request(encode_request(body, 9, "wire")[4:], supported_versions())
        assert decoded.api_version == version
        response = await offsets.handle_txn_offset_commit(
            connection(), decoded, metadata=parts.view, access=Access(), groups=groups
        )
        assert response.topics[0].partitions[0].error_code == E.none
        assert encode_response(ApiKey.TXN_OFFSET_COMMIT, version, 9, response)
        parts.marker(groups, 100 + version, commit=True)
    assert visible(await fetch(groups, require_stable=True)) == {0: 13, 1: 11, 2: 12}


async def test_pending_offsets_are_invisible_until_commit_and_visible_after(parts: Parts) -> None:
    groups = await parts.coordinator()
    assert await txn_commit(parts, groups, {0: 5, 1: 6}) == {0: E.none, 1: E.none}
    assert visible(await fetch(groups, require_stable=False)) == {0: -1, 1: -1, 2: -1}
    assert await fetch(groups, require_stable=True) == {0: UNSTABLE, 1: UNSTABLE, 2: (-1, E.none)}
    assert (await fetch(groups, require_stable=True, version=8))[0] == UNSTABLE

    # The offsets are the producer's transactional batch in __consumer_offsets.
    index = groups.partition_of(GROUP)
    partition = parts.replicas.get(OFFSETS_TOPIC, index)
    assert partition is not None
    batches = [b for b in read_log(partition) if b.records]
    assert [(b.producer_id, b.transactional) for b in batches] == [(PID, True)]
    assert partition.log.first_unstable_offset() is not None

    parts.marker(groups, PID, commit=True)
    answer = await fetch(groups, require_stable=True)
    assert answer == {0: (5, E.none), 1: (6, E.none), 2: (-1, E.none)}
    markers = [b.marker for b in read_log(partition) if b.marker is not None]
    assert [(m.commit, m.coordinator_epoch) for m in markers] == [(True, 0)]


async def test_abort_drops_the_pending_offsets(parts: Parts) -> None:
    groups = await parts.coordinator()
    assert await txn_commit(parts, groups, {0: 5}) == {0: E.none}
    parts.marker(groups, PID, commit=True)
    assert await txn_commit(parts, groups, {0: 9, 1: 9}) == {0: E.none, 1: E.none}
    parts.marker(groups, PID, commit=False)
    assert await fetch(groups, require_stable=True) == {
        0: (5, E.none),
        1: (-1, E.none),
        2: (-1, E.none),
    }


async def test_generation_member_and_instance_are_checked(parts: Parts) -> None:
    groups = await parts.coordinator()
    shard = groups.shard_for(GROUP)
    driver = Driver(GROUP)
    driver.now = parts.clock[0]
    (member,), generation = driver.stable_group(1)
    parts.clock[0] = driver.now
    shard.groups[GROUP] = driver.group

    ok = await txn_commit(parts, groups, {0: 1}, generation_id=generation, member_id=member)
    assert ok == {0: E.none}
    stale = await txn_commit(parts, groups, {0: 2}, generation_id=generation - 1, member_id=member)
    assert stale == {0: E.illegal_generation}
    stranger = await txn_commit(parts, groups, {0: 3}, generation_id=generation, member_id="x")
    assert stranger == {0: E.unknown_member_id}
    unknown_static = await txn_commit(
        parts, groups, {0: 4}, generation_id=generation, member_id=member, instance_id="host-a"
    )
    assert unknown_static == {0: E.unknown_member_id}
    parts.marker(groups, PID, commit=True)
    # Only the accepted commit was written.
    assert visible(await fetch(groups, require_stable=True)) == {0: 1, 1: -1, 2: -1}


async def test_zombie_producer_epoch_is_refused(parts: Parts) -> None:
    groups = await parts.coordinator()
    assert await txn_commit(parts, groups, {0: 5}, producer_epoch=3) == {0: E.none}
    assert await txn_commit(parts, groups, {0: 6}, producer_epoch=2) == {
        0: E.invalid_producer_epoch
    }


async def test_unknown_partition_and_acls(parts: Parts) -> None:
    groups = await parts.coordinator()
    assert await txn_commit(parts, groups, {0: 1, 7: 1}) == {
        0: E.none,
        7: E.unknown_topic_or_partition,
    }

    def allow(rtype: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(
            rtype, name, PatternType.LITERAL, "User:ANONYMOUS", "*", op, AclPermission.ALLOW
        )

    txn_write = allow(ResourceType.TRANSACTIONAL_ID, "txn-1", AclOperation.WRITE)
    group_read = allow(ResourceType.GROUP, GROUP, AclOperation.READ)
    topic_read = allow(ResourceType.TOPIC, TOPIC, AclOperation.READ)

    def access(*bindings: AclBinding) -> Access:
        return Access(Authorizer(AclIndex(bindings)))

    cases = [
        (access(group_read, topic_read), E.transactional_id_authorization_failed),
        (access(txn_write, topic_read), E.group_authorization_failed),
        (access(txn_write, group_read), E.topic_authorization_failed),
        (access(txn_write, group_read, topic_read), E.none),
    ]
    for granted, error in cases:
        assert await txn_commit(parts, groups, {1: 3}, access=granted) == {1: error}


async def test_reload_from_disk_with_committed_aborted_and_open_transactions(
    parts: Parts,
) -> None:
    groups = await parts.coordinator()
    assert await txn_commit(parts, groups, {0: 10}, producer_id=1) == {0: E.none}
    parts.marker(groups, 1, commit=True)
    assert await txn_commit(parts, groups, {1: 20}, producer_id=2) == {1: E.none}
    parts.marker(groups, 2, commit=False)
    assert await txn_commit(parts, groups, {2: 30}, producer_id=3) == {2: E.none}
    before = await fetch(groups, require_stable=True)
    assert before == {0: (10, E.none), 1: (-1, E.none), 2: UNSTABLE}

    # Restart: the coordinator and the replicas go; logs are recovered from the data dir.
    await groups.stop()
    parts.coordinators.clear()
    parts.replicas.close()
    parts.broker.replicas = ReplicaManager(
        broker_id=BROKER_ID,
        data_dir=parts.broker.data_dir,
        time_ms=now_ms,
        log_config_for=parts.view.log_config,
    )
    parts.broker.apply_image(parts.broker.cache.image)
    reloaded = await parts.coordinator()
    assert await fetch(reloaded, require_stable=True) == before
    assert visible(await fetch(reloaded, require_stable=False)) == {0: 10, 1: -1, 2: -1}
    # The open transaction completes on the new coordinator.
    parts.marker(reloaded, 3, commit=True)
    assert visible(await fetch(reloaded, require_stable=True)) == {0: 10, 1: -1, 2: 30}
    assert GROUP in reloaded.shard_for(GROUP).groups

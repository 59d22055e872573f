"""Kafka handlers called in-process with real broker parts and no broker process.

The parts are the real ones -- a ``ReplicaManager`` with its logs under ``tmp_path``, a
``MetadataView`` over a ``MetadataCache`` that tails a real Redis (the suite's shared
``redis_server``, isolated by ``cluster_id``), the topic admin, group coordinator and
controller parts -- wired as ``Broker`` wires them, and the handlers come out of
``weir.handlers.registry``. Each test calls ``handler(ctx, request)`` with kio request
objects, exactly as ``KafkaServer`` does after decoding a frame, and checks the kio
response: produce a batch built with ``weir.protocol.batch_builder`` and fetch it back,
list its offsets, describe the cluster. No socket is opened and no process started.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v9.request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)

from tests.weir.requests import fetch_body
from tests.weir.single_broker import BROKER_ID, connection, now_ms, request, single_broker
from weir.controller import Controller
from weir.credential_store import ScramCredentialStore
from weir.group_coordinator import GroupCoordinator
from weir.handlers import list_offsets, produce, registry
from weir.handlers._authz import Access
from weir.metadata_view import MetadataView
from weir.protocol.api_keys import ApiKey
from weir.protocol.batch_builder import build_batch
from weir.protocol.codec import Request
from weir.protocol.inflate import iter_records
from weir.quotas import QuotaManager
from weir.replica_manager import ReplicaManager
from weir.replication.isr_manager import IsrManager
from weir.replication.throttle import ReplicationThrottle
from weir.security.acl_store import AclCache
from weir.server import Handler
from weir.topic_admin import TopicAdmin
from weir.transaction_coordinator import TransactionCoordinator
from weir.txn_markers import MarkerChannel

TOPIC = "events"


@dataclass
class Parts:
    """The broker parts under test, and the dispatch table built from them."""

    view: MetadataView
    replicas: ReplicaManager
    admin: TopicAdmin
    handlers: dict[int, Handler]


@pytest.fixture
async def parts(redis_server: str, cluster_id: str, tmp_path: Path) -> AsyncIterator[Parts]:
    async with single_broker(
        redis_url=redis_server, cluster_id=cluster_id, data_dir=tmp_path / "data"
    ) as broker:
        view, replicas, admin, lease = broker.view, broker.replicas, broker.admin, broker.lease
        controller = Controller(
            store=broker.store,
            image=lambda: broker.cache.image,
            epoch=lambda: lease.epoch,
            unclean_for=lambda topic: False,
            auto_rebalance=lambda: False,
            rebalance_interval_s=lambda: 300.0,
            time_s=time.monotonic,
        )
        handlers, _ = registry(
            metadata=view,
            replicas=replicas,
            authorizer=None,
            groups=GroupCoordinator(
                view=view, replicas=replicas, create_topic=admin.auto_create_topic, time_ms=now_ms
            ),
            transactions=TransactionCoordinator(
                view=view,
                replicas=replicas,
                create_topic=admin.auto_create_topic,
                allocate_producer_ids=broker.store.allocate_producer_ids,
                send_markers=MarkerChannel(broker_id=BROKER_ID, view=view, security=None),
                time_ms=now_ms,
            ),
            controller=controller,
            channel=broker.channel,
            admin=admin,
            isr=IsrManager(
                broker_id=BROKER_ID,
                replicas=replicas,
                config=lambda: view.config,
                time_ms=now_ms,
                lease=lease,
                controller=controller,
                channel=broker.channel,
            ),
            throttle=ReplicationThrottle(
                broker_id=BROKER_ID,
                replicas=replicas,
                topic_config=view.topic_config,
                config=lambda: view.config,
                now_s=time.monotonic,
            ),
            acls=AclCache(cluster_id=cluster_id),
            credentials=ScramCredentialStore(broker.redis, cluster_id=cluster_id),
            allocate_producer_id=broker.store.allocate_producer_id,
            time_ms=now_ms,
        )
        await broker.create_topic(TOPIC, 2)
        yield Parts(view=view, replicas=replicas, admin=admin, handlers=handlers)


def produce_request(records: bytes, *, index: int = 0, acks: int = -1) -> Request:
    body = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=timedelta(seconds=5),
        topic_data=(
            TopicProduceData(
                name=TOPIC,
                partition_data=(PartitionProduceData(index=index, records=records),),
            ),
        ),
    )
    return request(ApiKey.PRODUCE, 9, body)


def fetch_request(offset: int, *, index: int = 0) -> Request:
    return request(ApiKey.FETCH, 12, fetch_body(TOPIC, offset, partition=index))


def region_bytes(records: Any) -> bytes:
    """The bytes a fetch response would sendfile: its file regions, read back."""
    return b"".join(
        os.pread(region.file.fileno(), region.size, region.position) for region in records.regions
    )


async def test_produce_then_fetch_returns_the_batch(parts: Parts) -> None:
    ctx = connection()
    batch = build_batch([(b"k1", b"hello"), (None, b"world")], timestamp_ms=now_ms())

    produced = await parts.handlers[ApiKey.PRODUCE](ctx, produce_request(bytes(batch)))
    answer = produced.responses[0].partition_responses[0]
    assert (answer.error_code, answer.base_offset) == (ErrorCode.none, 0)

    fetched = await parts.handlers[ApiKey.FETCH](ctx, fetch_request(0))
    data = fetched.responses[0].partitions[0]
    assert data.error_code == ErrorCode.none
    assert data.high_watermark == 2
    records = [(r.key, r.value) for r in iter_records(region_bytes(data.records))]
    assert records == [(b"k1", b"hello"), (None, b"world")]


async def test_second_batch_gets_the_next_offsets(parts: Parts) -> None:
    ctx = connection()
    for expected_base in (0, 3):
        batch = build_batch([(None, b"a"), (None, b"b"), (None, b"c")], timestamp_ms=now_ms())
        produced = await parts.handlers[ApiKey.PRODUCE](ctx, produce_request(bytes(batch)))
        assert produced.responses[0].partition_responses[0].base_offset == expected_base
    fetched = await parts.handlers[ApiKey.FETCH](ctx, fetch_request(3))
    data = fetched.responses[0].partitions[0]
    values = [r.value for r in iter_records(region_bytes(data.records))]
    assert values == [b"a", b"b", b"c"]


async def test_produce_to_an_unknown_partition_is_refused(parts: Parts) -> None:
    batch = build_batch([(None, b"x")], timestamp_ms=now_ms())
    produced = await parts.handlers[ApiKey.PRODUCE](
        connection(), produce_request(bytes(batch), index=9)
    )
    answer = produced.responses[0].partition_responses[0]
    assert answer.error_code == ErrorCode.unknown_topic_or_partition


async def test_produce_handler_takes_only_its_parts(parts: Parts) -> None:
    """The handler function itself, called with keyword parts and no registry."""
    batch = build_batch([(None, b"direct")], timestamp_ms=now_ms())
    produced = await produce.handle(
        connection(),
        produce_request(bytes(batch), index=1, acks=1),
        metadata=parts.view,
        replicas=parts.replicas,
        access=Access(),
        quotas=QuotaManager(),
        time_ms=now_ms,
    )
    answer = produced.responses[0].partition_responses[0]
    assert (answer.error_code, answer.base_offset) == (ErrorCode.none, 0)


async def test_list_offsets_reports_earliest_and_latest(parts: Parts) -> None:
    ctx = connection()
    batch = build_batch([(None, b"1"), (None, b"2")], timestamp_ms=now_ms())
    await parts.handlers[ApiKey.PRODUCE](ctx, produce_request(bytes(batch)))

    def ask(timestamp: int) -> Request:
        body = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=(
                ListOffsetsTopic(
                    name=TOPIC,
                    partitions=(
                        ListOffsetsPartition(
                            partition_index=0, current_leader_epoch=-1, timestamp=timestamp
                        ),
                    ),
                ),
            ),
        )
        return request(ApiKey.LIST_OFFSETS, 7, body)

    latest = await parts.handlers[ApiKey.LIST_OFFSETS](ctx, ask(list_offsets.LATEST))
    earliest = await parts.handlers[ApiKey.LIST_OFFSETS](ctx, ask(list_offsets.EARLIEST))
    assert latest.topics[0].partitions[0].error_code == ErrorCode.none
    assert latest.topics[0].partitions[0].offset == 2
    assert earliest.topics[0].partitions[0].offset == 0


async def test_metadata_describes_the_topic_and_this_broker(parts: Parts) -> None:
    body = MetadataRequest(
        topics=(
            MetadataRequestTopic(topic_id=None, name=TOPIC),
            MetadataRequestTopic(topic_id=None, name="missing"),
        ),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    response = await parts.handlers[ApiKey.METADATA](
        connection(), request(ApiKey.METADATA, 12, body)
    )
    assert [b.node_id for b in response.brokers] == [BROKER_ID]
    assert response.cluster_id == parts.view.cluster_id
    found, missing = response.topics
    assert found.error_code == ErrorCode.none
    assert found.topic_id == parts.view.topic_views()[TOPIC].topic_id
    assert found.topic_id != uuid.UUID(int=0)
    assert [(p.partition_index, p.leader_id) for p in found.partitions] == [
        (0, BROKER_ID),
        (1, BROKER_ID),
    ]
    assert missing.error_code == ErrorCode.unknown_topic_or_partition


async def test_metadata_auto_creates_through_the_topic_admin(parts: Parts) -> None:
    """Auto-creation goes through TopicAdmin on the lease holder: the new topic is written
    to the metadata log, reaches the view through the cache, and is answered."""
    body = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name="created-on-demand"),),
        allow_auto_topic_creation=True,
        include_topic_authorized_operations=False,
    )
    response = await parts.handlers[ApiKey.METADATA](
        connection(), request(ApiKey.METADATA, 12, body)
    )
    (topic,) = response.topics
    assert (topic.name, topic.error_code) == ("created-on-demand", ErrorCode.none)
    # num.partitions defaults to 1, led here; the replica is open locally.
    assert [(p.partition_index, p.leader_id) for p in topic.partitions] == [(0, BROKER_ID)]
    assert parts.replicas.get("created-on-demand", 0) is not None


async def test_parked_fetch_of_many_partitions_is_completed_by_a_produce_to_one(
    parts: Parts,
) -> None:
    """Kafka's DelayedFetch: a record appended to any partition of a parked fetch answers it
    (fetch.min.bytes 1), with that record, long before its hour-long max wait."""
    ctx = connection()
    both = fetch_body(TOPIC, 0, max_wait_ms=3_600_000)
    wanted = replace(
        both.topics[0],
        partitions=tuple(
            replace(both.topics[0].partitions[0], partition=index) for index in (0, 1)
        ),
    )
    fetch = request(ApiKey.FETCH, 12, replace(both, topics=(wanted,)))
    waiting = asyncio.create_task(parts.handlers[ApiKey.FETCH](ctx, fetch))
    for _ in range(5):
        await asyncio.sleep(0)
    assert not waiting.done()  # parked: nothing to read yet

    batch = build_batch([(None, b"to partition 1")], timestamp_ms=now_ms())
    await parts.handlers[ApiKey.PRODUCE](ctx, produce_request(bytes(batch), index=1))

    fetched = await waiting  # the test's 300 s timeout fails it if only the max wait ends it
    by_index = {p.partition_index: p for p in fetched.responses[0].partitions}
    assert by_index[0].records == b""
    assert [r.value for r in iter_records(region_bytes(by_index[1].records))] == [b"to partition 1"]

"""A broker tuned for group tests: no initial rebalance delay, short sessions allowed.

``group_broker`` is an in-process broker (``tests/weir/inprocess.py``) shared by a module;
the members may still be processes of their own (``member_process.py``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)

from tests.weir.inprocess import ThreadedBroker, threaded_broker

GROUP_CONFIGS = [
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
    # Expiry runs often, so offsets committed with a short retention_time go within seconds.
    "offsets.retention.check.interval.ms=300",
]


def offset_commit(
    group: str, topic: str, offset: int, *, generation: int = -1, member_id: str = ""
) -> OffsetCommitRequest:
    """OffsetCommit v8 of ``offset`` for partition 0 of ``topic``; by default as a client
    outside the group's generations does (a simple consumer's manual commit)."""
    partition = OffsetCommitRequestPartition(
        partition_index=0,
        committed_offset=offset,
        committed_leader_epoch=-1,
        committed_metadata=None,
    )
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        topics=(OffsetCommitRequestTopic(name=topic, partitions=(partition,)),),
    )


@pytest.fixture(scope="module")
def group_broker(
    redis_server: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedBroker]:
    directory = tmp_path_factory.mktemp("group-broker")
    with threaded_broker(
        data_dir=directory / "broker-1", redis_url=redis_server, configs=GROUP_CONFIGS
    ) as broker:
        yield broker

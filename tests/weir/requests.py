"""kio request bodies the runtime tests send to brokers, with Kafka clients' usual fields.

One builder per request the tests build in several places, so each test names only the
fields it is about.
"""

from __future__ import annotations

from datetime import timedelta

from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic


def fetch_body(
    topic: str,
    offset: int,
    *,
    partition: int = 0,
    max_bytes: int = 1 << 20,
    partition_max_bytes: int = 1 << 20,
    min_bytes: int = 1,
    max_wait_ms: int = 10,
) -> FetchRequest:
    """A consumer's sessionless Fetch v12 of one partition from ``offset``."""
    return FetchRequest(
        cluster_id=None,
        replica_id=-1,
        max_wait=timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            FetchTopic(
                topic=topic,
                partitions=(
                    FetchPartition(
                        partition=partition,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=partition_max_bytes,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )

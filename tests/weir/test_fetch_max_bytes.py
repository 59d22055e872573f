"""fetch.max.bytes: the broker caps every Fetch response, whatever the request asks for.

Kafka's ``KafkaApis``: the response limit is ``min(request max_bytes, fetch.max.bytes)``,
``min_bytes`` is capped to it too, and the first batch is returned whole even when it alone
is larger (KIP-74), so no consumer is ever stuck. An in-process broker started with a small
``fetch.max.bytes`` answers a Fetch over the wire (Weir's own client, kio frames).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.weir.clients.helpers import create_topic
from tests.weir.cluster.conftest import raw_request
from tests.weir.inprocess import ThreadedBroker, threaded_broker
from tests.weir.requests import fetch_body
from weir.protocol.records import iter_batches

LIMIT = 1024
ASKED = 10 << 20  # what the client asks for: far above the broker's limit
TOPIC = "fetch-limit"


@pytest.fixture
def broker(redis_server: str, tmp_path: Path) -> Iterator[ThreadedBroker]:
    with threaded_broker(
        data_dir=tmp_path / "broker-1",
        redis_url=redis_server,
        configs=(f"fetch.max.bytes={LIMIT}",),
    ) as started:
        yield started


def _fetch(broker: ThreadedBroker, offset: int, *, min_bytes: int = 1, wait_ms: int = 0) -> bytes:
    body = fetch_body(
        TOPIC,
        offset,
        max_bytes=ASKED,
        partition_max_bytes=ASKED,
        min_bytes=min_bytes,
        max_wait_ms=wait_ms,
    )
    (topic,) = raw_request(broker.port, body, timeout=15).responses
    (partition,) = topic.partitions
    return bytes(partition.records or b"")


def _produce_batches(broker: ThreadedBroker, sizes: list[int]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for size in sizes:  # one batch each: flushed before the next
        producer.produce(TOPIC, value=b"x" * size, partition=0)
        assert producer.flush(15) == 0


def test_a_fetch_response_is_capped_by_fetch_max_bytes(broker: ThreadedBroker) -> None:
    create_topic(broker.bootstrap, TOPIC)
    _produce_batches(broker, [400, 400, 400, 400, 3000])
    records = _fetch(broker, 0)
    sizes = [header.size for _, header in iter_batches(records)]
    assert len(sizes) == 2 and sum(sizes) <= LIMIT < sum(sizes) + sizes[0]
    # A batch larger than the limit still comes back whole, alone.
    (big,) = [header for _, header in iter_batches(_fetch(broker, 4))]
    assert big.size > LIMIT and big.base_offset == 4


def test_min_bytes_above_fetch_max_bytes_is_capped_to_it(broker: ThreadedBroker) -> None:
    """Uncapped, this fetch would park for its whole max_wait (longer than the client's
    timeout): the one batch on the log, larger than LIMIT, satisfies the capped min_bytes."""
    create_topic(broker.bootstrap, TOPIC)
    _produce_batches(broker, [3000])
    records = _fetch(broker, 0, min_bytes=ASKED, wait_ms=60_000)
    assert [h.base_offset for _, h in iter_batches(records)] == [0]

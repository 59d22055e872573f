"""The command channel (housekeeping commands) under bad input and silent brokers: every
command gets an answer or the run an error line, never a hang, and a broker keeps serving
after nonsense."""

from __future__ import annotations

import json
import time

import pytest

from brokers.ops.housekeeping import run_retention
from controlplane.cluster import ClusterGateway
from tests.weir.cluster.conftest import BROKER_IDS, Cluster
from tests.weir.housekeeping.conftest import inventory, produce_records

pytestmark = pytest.mark.integration


def test_bad_commands_get_an_error_and_the_broker_keeps_serving(
    hk_cluster: Cluster, gw: ClusterGateway, unique
) -> None:
    topic = hk_cluster.create_topic(unique("plain"))
    broker_id = hk_cluster.leader(topic)
    channel = gw.commands(timeout_s=15)
    bad: list[tuple[str, object]] = [
        ("shred", {}),
        ("inventory", {"topics": "not-a-list"}),
        ("delete_records_before", {"partitions": "all"}),
        ("delete_records_before", {"partitions": [{"topic": topic, "partition": -1, "offset": 0}]}),
        ("delete_records_before", {"partitions": [{"topic": topic, "partition": 0, "offset": 99}]}),
        ("compact", {"topic": topic, "partition": 0}),
        ("compact", {"topic": "no-such-topic", "partition": 0}),
        ("compact", {"topic": topic, "partition": 0, "now_ms": "soon"}),
    ]
    answers = []
    for command, args in bad:
        reply = channel.request({broker_id: (command, args)})[broker_id]  # type: ignore[dict-item]
        answers.append(reply)
    # Offset 99 above the HW is refused per partition, not for the whole command.
    refused = answers.pop(4)
    assert refused.ok
    (item,) = refused.result["partitions"]
    assert "above the high watermark" in item["error"]
    for (command, _), reply in zip([b for i, b in enumerate(bad) if i != 4], answers, strict=True):
        assert not reply.ok and reply.error, (command, reply)
    assert "unknown command 'shred'" in answers[0].error
    assert "not compact" in answers[4].error

    # Args that are not JSON at all, straight onto the stream.
    reply_to = gw.keys.command_reply(unique("raw"))
    gw.redis.xadd(
        gw.keys.broker_commands(broker_id),
        {"id": "raw", "command": "inventory", "args": "{not json", "reply_to": reply_to},
    )
    popped = gw.redis.blpop([reply_to], timeout=4)
    assert popped is not None
    answer = json.loads(popped[1])
    assert answer["ok"] is False and answer["broker_id"] == broker_id

    # Still serving: housekeeping and Kafka.
    assert inventory(gw, broker_id, topic)["log_end_offset"] == 0
    produce_records(hk_cluster, topic, [(None, b"still here", None)])
    assert [v for _, _, v in hk_cluster.read_all(topic)] == [b"still here"]


def test_an_unknown_broker_is_an_error_at_once(gw: ClusterGateway) -> None:
    channel = gw.commands(timeout_s=30)
    reply = channel.request({99: ("inventory", {})})[99]
    assert (reply.ok, reply.error) == (False, "broker is not alive")


def test_a_silent_broker_is_an_error_not_a_hang(
    hk_cluster: Cluster, gw: ClusterGateway, unique
) -> None:
    topic = hk_cluster.create_topic(unique("silent"))
    silent = BROKER_IDS[-1]
    hk_cluster.pause(silent)
    try:
        result = run_retention(gw=gw, topics=[topic], timeout_s=1.5)
        # One more command that expires while the broker sleeps.
        expiring = gw.commands(timeout_s=0.3)
        reply_to = expiring.send(silent, "inventory", {"topics": [topic]})
        time.sleep(0.5)
    finally:
        hk_cluster.resume(silent)
    assert f"broker {silent}: inventory failed: no answer before the run's deadline" in (
        result.errors
    )
    # Awake, it serves new commands (in stream order, so the expired one came first) and
    # dropped the expired one unanswered: its sender gave up long ago.
    assert inventory(gw, silent, topic)["partition"] == 0
    assert not gw.redis.exists(reply_to)

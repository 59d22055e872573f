"""``/api/topics/<t>/partitions/<p>/messages/`` (browse) and ``.../messages/search/`` (chunked
search) against the shared cluster, with records produced by confluent-kafka; and the partition
tail behind the dashboard's live socket."""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from rest_framework.test import APIClient

from controlplane.errors import BadRequest, NotFound
from tests.controlplane.lag_helpers import produce_records
from tests.weir.cluster.conftest import Cluster
from topics import messages
from topics.messages import PartitionTail

pytestmark = pytest.mark.django_db

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def url(topic: str, partition: int | str = 0, search: bool = False) -> str:
    base = f"/api/topics/{topic}/partitions/{partition}/messages/"
    return base + "search/" if search else base


def offsets(response: Any) -> list[int]:
    assert response.status_code == 200, response.json()
    return [r["offset"] for r in response.json()["records"]]


TopicHolding = Callable[..., str]


@pytest.fixture
def topic_holding(cp_cluster: Cluster, unique: Callable[[str], str]) -> TopicHolding:
    """Makes a new topic whose partition 0 holds ``records`` (``produce_records`` dicts)."""

    def make(records: list[dict[str, Any]], *, partitions: int = 1) -> str:
        topic = cp_cluster.create_topic(unique("messages"), partitions=partitions)
        produce_records(cp_cluster, topic, records)
        return topic

    return make


@pytest.fixture
def ten(topic_holding: TopicHolding) -> str:
    """A topic whose partition 0 holds offsets 0..9, one second apart from T0 (and whose
    partition 1 is empty)."""
    records = [{"value": f"record-{i}".encode(), "timestamp": T0 + i * 1000} for i in range(10)]
    return topic_holding(records, partitions=2)


def test_browse_from_the_end_the_beginning_an_offset_and_a_timestamp_in_both_orders(
    viewer: APIClient, ten: str
) -> None:
    page = viewer.get(url(ten)).json()
    assert [r["offset"] for r in page["records"]] == list(range(9, -1, -1))
    assert (page["log_start_offset"], page["high_watermark"], page["order"]) == (0, 10, "newest")
    assert offsets(viewer.get(url(ten), {"limit": 3})) == [9, 8, 7]
    assert offsets(viewer.get(url(ten), {"limit": 3, "order": "oldest"})) == [7, 8, 9]
    beginning = {"from": "beginning", "order": "oldest", "limit": 3}
    assert offsets(viewer.get(url(ten), beginning)) == [0, 1, 2]
    assert offsets(viewer.get(url(ten), {"offset": 4, "order": "oldest", "limit": 3})) == [4, 5, 6]
    assert offsets(viewer.get(url(ten), {"offset": 4, "limit": 3})) == [4, 3, 2]
    # The high watermark itself is a valid position: nothing after it, the last ones before.
    assert offsets(viewer.get(url(ten), {"offset": 10, "order": "oldest"})) == []
    assert offsets(viewer.get(url(ten), {"offset": 10, "limit": 2})) == [9, 8]
    at_five = datetime.datetime.fromtimestamp((T0 + 5000) / 1000, tz=datetime.UTC)
    iso = at_five.isoformat().replace("+00:00", "Z")
    assert offsets(viewer.get(url(ten), {"timestamp": iso, "order": "oldest", "limit": 2})) == [
        5,
        6,
    ]
    # Newest first from a time: the records before it.
    assert offsets(viewer.get(url(ten), {"timestamp": iso, "limit": 2})) == [4, 3]
    assert offsets(viewer.get(url(ten), {"timestamp": str(T0 + 7500), "order": "oldest"})) == [
        8,
        9,
    ]
    later = {"timestamp": str(T0 + 60_000), "order": "oldest"}
    assert offsets(viewer.get(url(ten), later)) == []
    record = viewer.get(url(ten), {"limit": 1}).json()["records"][0]
    assert record["timestamp"] == T0 + 9000
    assert record["timestamp_type"] == "CreateTime"
    assert record["value"]["format"] == "text"
    assert record["value"]["text"] == "record-9"
    # An empty partition answers an empty page, not an error.
    empty = viewer.get(url(ten, 1)).json()
    assert (empty["records"], empty["start"], empty["end"]) == ([], 0, 0)


def test_values_render_as_pretty_json_text_or_hex_and_base64_with_key_and_headers(
    viewer: APIClient, topic_holding: TopicHolding
) -> None:
    topic = topic_holding(
        [
            {
                "key": b"order-1",
                "value": b'{"id":1,"items":[1,2],"name":"caf\xc3\xa9"}',
                "headers": [("trace", b"abc"), ("raw", b"\x00\xff"), ("none", None)],
            },
            {"key": b"\x00\x01", "value": b"\x00\x01\x02\xff"},
            {"value": None},
            {"value": "plain text, with ünïcode".encode()},
        ],
    )
    records = viewer.get(url(topic), {"order": "oldest"}).json()["records"]
    first, binary, tombstone, text = records
    assert first["key"]["format"] == "text" and first["key"]["text"] == "order-1"
    assert first["value"]["format"] == "json"
    assert (
        first["value"]["text"]
        == '{\n  "id": 1,\n  "items": [\n    1,\n    2\n  ],\n  "name": "café"\n}'
    )
    headers = {h["key"]: h["value"] for h in first["headers"]}
    assert headers["trace"]["text"] == "abc"
    assert headers["raw"]["format"] == "binary" and headers["raw"]["hex"] == "00 ff"
    assert headers["none"] is None
    assert binary["value"] == {
        "format": "binary",
        "size": 4,
        "truncated": False,
        "text": None,
        "hex": "00 01 02 ff",
        "base64": "AAEC/w==",
    }
    assert binary["key"]["hex"] == "00 01"
    assert tombstone["value"] is None and tombstone["key"] is None
    assert text["value"]["format"] == "text" and text["value"]["text"] == "plain text, with ünïcode"


def test_search_walks_the_range_in_chunks_and_finds_key_and_value_substrings(
    viewer: APIClient, topic_holding: TopicHolding
) -> None:
    topic = topic_holding(
        [
            {
                "key": f"user-{i % 3}".encode(),
                "value": (b"has a NEEDLE here" if i in (3, 17, 25) else f"hay {i}".encode()),
            }
            for i in range(30)
        ],
    )
    found: list[int] = []
    start: int | None = 0
    calls = 0
    while start is not None:
        params = {"q": "needle", "start": start, "end": 30, "chunk": 10}
        chunk = viewer.get(url(topic, search=True), params).json()
        calls += 1
        assert chunk["scanned"] == (30 if chunk["done"] else chunk["next"]) - start
        found += [m["offset"] for m in chunk["matches"]]
        start = chunk["next"]
    assert (found, calls) == ([3, 17, 25], 3)
    # Defaults: the whole partition (it is smaller than the bound), values.
    whole = viewer.get(url(topic, search=True), {"q": "user-2", "field": "key"}).json()
    assert whole["done"] and (whole["start"], whole["end"]) == (0, 30)
    assert [m["offset"] for m in whole["matches"]] == list(range(2, 30, 3))
    assert viewer.get(url(topic, search=True), {"q": "user-2"}).json()["matches"] == []


@pytest.mark.parametrize(
    ("path", "params", "status", "words"),
    [
        ("", {"offset": 11}, 400, ["offset 11 is out of range", "holds offsets 0 to 9"]),
        ("", {"timestamp": "yesterday"}, 400, ["timestamp 'yesterday'", "ISO-8601"]),
        ("", {"timestamp": "-5"}, 400, ["before 1970"]),
        ("", {"limit": 501}, 400, ["limit", "500"]),
        ("", {"limit": 0}, 400, ["limit"]),
        ("", {"order": "sideways"}, 400, ["order"]),
        ("", {"offset": 1, "timestamp": "1000"}, 400, ["offset or timestamp"]),
        ("", {"offset": 1, "from": "end"}, 400, ["from"]),
        ("", {"offset": "x"}, 400, ["offset"]),
        ("partition:7", {}, 404, ["partition 7", "has 2 partitions"]),
        ("partition:x", {}, 404, ["must be an integer"]),
        ("topic:missing", {}, 404, ["not found"]),
        ("search", {}, 400, ["q"]),
        ("search", {"q": "a", "field": "headers"}, 400, ["field"]),
        ("search", {"q": "a", "end": 11}, 400, ["past the high watermark", "0 to 9"]),
        ("search", {"q": "a", "start": 5, "end": 2}, 400, ["start 5 is after end 2"]),
        ("search", {"q": "a", "chunk": 0}, 400, ["chunk"]),
    ],
)
def test_bad_input_answers_4xx_with_a_message_naming_the_problem(
    viewer: APIClient, ten: str, path: str, params: dict[str, Any], status: int, words: list[str]
) -> None:
    topic, partition, search = ten, "0", False
    if path.startswith("partition:"):
        partition = path.split(":", 1)[1]
    elif path.startswith("topic:"):
        topic = f"{ten}-{path.split(':', 1)[1]}"
    elif path == "search":
        search = True
    response = viewer.get(url(topic, partition, search), params)
    assert response.status_code == status, response.content
    body = response.json()
    assert body["error_code"] == status
    for word in words:
        assert word in body["message"]


def test_search_refuses_a_range_wider_than_the_bound(ten: str) -> None:
    # A partition that long is not worth producing: the bound is checked on the selector.
    wide = messages.MAX_SEARCH_RANGE + 1
    bounds = messages.PartitionBounds(
        topic=ten, partition=0, log_start_offset=0, high_watermark=wide
    )
    with (
        mock.patch.object(messages, "partition_bounds", return_value=bounds),
        pytest.raises(BadRequest, match=f"spans {wide} offsets; search at most"),
    ):
        messages.message_search(topic=ten, partition=0, query="a", start=0, end=wide)


def test_anonymous_callers_get_401(anonymous: APIClient, ten: str) -> None:
    assert anonymous.get(url(ten)).status_code == 401
    assert anonymous.get(url(ten, search=True), {"q": "a"}).status_code == 401


def test_partition_tail_returns_only_records_produced_after_it_opened(
    cp_cluster: Cluster, ten: str
) -> None:
    tail = PartitionTail(topic=ten, partition=0)
    try:
        assert tail.position == 10
        produce_records(cp_cluster, ten, [{"value": b"after-1"}, {"value": b"after-2"}])
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + 15
        while len(seen) < 2 and time.monotonic() < deadline:
            seen += tail.poll(timeout=0.5)
        assert [(r["offset"], r["value"]["text"]) for r in seen] == [
            (10, "after-1"),
            (11, "after-2"),
        ]
        assert tail.position == 12
    finally:
        tail.close()
    assert tail.poll() == []
    with pytest.raises(NotFound):
        PartitionTail(topic=f"{ten}-missing", partition=0)


def test_large_keys_and_values_are_cut_for_display_but_report_their_full_size() -> None:
    text = messages.render_bytes(("€" * messages.SHOWN_BYTES).encode())
    assert text is not None
    # The cut falls inside a three-byte character: it is dropped, the rest is still text.
    assert (text["format"], text["truncated"], text["size"]) == (
        "text",
        True,
        3 * messages.SHOWN_BYTES,
    )
    assert messages.SHOWN_BYTES % 3 != 0
    assert text["text"] == "€" * (messages.SHOWN_BYTES // 3)
    binary = messages.render_bytes(b"\xff" * 100_000)
    assert binary is not None
    assert (binary["format"], binary["truncated"], binary["size"]) == ("binary", True, 100_000)
    assert binary["hex"] == " ".join(["ff"] * messages.SHOWN_BINARY_BYTES)
    assert messages.render_bytes(b"") == {
        "format": "text",
        "size": 0,
        "truncated": False,
        "text": "",
        "hex": None,
        "base64": None,
    }

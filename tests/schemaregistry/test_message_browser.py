"""The message browser decodes records in Confluent's framing through the registry: a value
written by a schema-aware producer reads as JSON named by its schema, and bytes that only look
framed stay bytes."""

from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from confluent_kafka import Producer
from rest_framework.test import APIClient

from schemaregistry.registry import registry
from tests.schemaregistry.test_rest_proxy import topic as topic  # the fixture
from tests.weir.inprocess import ThreadedBroker
from weir.registry import serde

pytestmark = pytest.mark.django_db

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string"}],
    }
)


def records(viewer: APIClient, topic: str) -> list[dict[str, Any]]:
    answer = viewer.get(f"/api/topics/{topic}/partitions/0/messages/?from=beginning&order=oldest")
    assert answer.status_code == 200, answer.json()
    return answer.json()["records"]


def test_framed_values_read_as_json_named_by_their_schema_and_lookalikes_stay_bytes(
    registry_broker: ThreadedBroker, viewer: APIClient, topic: str
) -> None:
    found = registry()
    schema_id = found.register(f"{topic}-value", ORDER)["id"]
    framed = serde.serialize(schema_id, found.parsed(schema_id), {"id": 7, "note": "seven"})
    unknown_id = struct.pack(">bI", 0, 2_000_000_000) + b"\x0e\x0aseven"
    producer = Producer({"bootstrap.servers": registry_broker.bootstrap})
    producer.produce(topic, key=b"k", value=framed, partition=0)
    producer.produce(topic, key=b"k", value=unknown_id, partition=0)
    assert producer.flush(30) == 0

    decoded, lookalike = records(viewer, topic)
    value = decoded["value"]
    assert value["format"] == "json" and json.loads(value["text"]) == {"id": 7, "note": "seven"}
    assert value["schema"] == {"id": schema_id, "type": "AVRO", "subjects": [f"{topic}-value"]}
    assert value["size"] == len(framed)
    assert lookalike["value"]["format"] == "binary" and "schema" not in lookalike["value"]

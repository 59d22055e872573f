"""``/api/quotas/`` against the shared 3-broker cluster: changes go through the brokers'
AlterClientQuotas (a broker asked directly describes them), a real producer's usage and
throttling show up per broker, viewers read but cannot change, bad input is a 400 with the
brokers' own message (checked before any request), and every change is audited.

Entities use unique user and client names, so nothing here throttles another test's clients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode
from rest_framework.test import APIClient

from brokers.quotas import quota_describe_request
from controlplane.models import AuditEntry
from tests.weir.cluster.conftest import Cluster, raw_request, wait_until

pytestmark = pytest.mark.django_db

URL = "/api/quotas/"


def _on_broker(cluster: Cluster, broker_id: int, entity: list[tuple[str, Any]]) -> dict:
    """The entity's values as one broker describes them (empty when it has none)."""
    response = raw_request(cluster[broker_id].port, quota_describe_request(entity))
    assert response.error_code == ErrorCode.none, response.error_message
    return {v.key: v.value for entry in response.entries for v in entry.values}


def test_set_replace_remove_round_trip_through_the_brokers(
    cp_cluster: Cluster, operator: APIClient, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    user = unique("quota-user")
    entity = [("users", user), ("clients", None)]
    body = {"user": user, "client_id": "<default>", "values": {"producer_byte_rate": 1048576}}
    created = operator.post(URL, body, format="json")
    assert created.status_code == 200, created.content
    assert created.json() == {
        "entity": f"users/{user}/clients/<default>",
        "user": user,
        "client_id": "<default>",
        "values": {"producer_byte_rate": 1048576.0},
    }
    wait_until(
        lambda: _on_broker(cp_cluster, 3, entity) == {"producer_byte_rate": 1048576.0},
        10,
        "broker 3 does not describe the new quota",
    )

    added = operator.post(
        URL,
        {"user": user, "client_id": "<default>", "values": {"request_percentage": 12.5}},
        format="json",
    )
    assert added.json()["values"] == {"producer_byte_rate": 1048576.0, "request_percentage": 12.5}
    listed = viewer.get(URL)
    assert listed.status_code == 200
    (mine,) = [q for q in listed.json()["quotas"] if q["user"] == user]
    assert mine == {
        "entity": f"users/{user}/clients/<default>",
        "user": user,
        "client_id": "<default>",
        "values": {"producer_byte_rate": 1048576.0, "request_percentage": 12.5},
        "usage": [],
    }

    replaced = operator.put(
        URL,
        {"user": user, "client_id": "<default>", "values": {"consumer_byte_rate": 2048}},
        format="json",
    )
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["values"] == {"consumer_byte_rate": 2048.0}

    one = operator.delete(f"{URL}?user={user}&client_id=<default>&key=consumer_byte_rate")
    assert one.status_code == 200, one.content
    assert one.json() == {
        "entity": f"users/{user}/clients/<default>",
        "removed": ["consumer_byte_rate"],
    }
    wait_until(
        lambda: _on_broker(cp_cluster, 3, entity) == {},
        10,
        "broker 3 still describes the removed quota",
    )
    assert not [q for q in viewer.get(URL).json()["quotas"] if q["user"] == user]
    gone = operator.delete(f"{URL}?user={user}&client_id=<default>")
    assert gone.status_code == 404
    assert f"no quota is set for users/{user}/clients/<default>" in gone.json()["message"]

    audited = AuditEntry.objects.filter(path=URL, username="operator-user")
    assert sorted(audited.values_list("method", flat=True)) == [
        "DELETE",
        "DELETE",
        "POST",
        "POST",
        "PUT",
    ]
    assert {e.action for e in audited} == {"quotas"}


def test_a_producers_usage_and_throttling_show_per_broker(
    cp_cluster: Cluster, operator: APIClient, viewer: APIClient, unique: Callable[[str], str]
) -> None:
    client_id, topic = unique("quota-app"), unique("quota-topic")
    cp_cluster.create_topic(topic)
    # 20 KB at once against 1 KB/s: over the quota on the first request (Kafka counts a new
    # client's rate over at least quota.window.num - 1 windows), so it is throttled.
    made = operator.post(
        URL, {"client_id": client_id, "values": {"producer_byte_rate": 1024}}, format="json"
    )
    assert made.status_code == 200, made.content
    throttles: list[float] = []
    producer = Producer(
        {
            "bootstrap.servers": cp_cluster.bootstrap(),
            "client.id": client_id,
            "throttle_cb": lambda event: throttles.append(event.throttle_time),
        }
    )
    for _ in range(20):
        producer.produce(topic, b"x" * 1000)
    assert producer.flush(30) == 0
    producer.poll(0.5)

    def usage() -> dict | None:
        (mine,) = [q for q in viewer.get(URL).json()["quotas"] if q["client_id"] == client_id]
        rows = [u for u in mine["usage"] if u["type"] == "Produce" and u["throttled_requests"]]
        return rows[0] if rows else None

    try:
        row = wait_until(usage, 15, "no throttled Produce usage row for the client")
    finally:
        assert operator.delete(f"{URL}?client_id={client_id}").status_code == 200
    assert row["broker_id"] == cp_cluster.leader(topic)
    assert (row["user"], row["client_id"], row["quota"]) == ("", client_id, 1024.0)
    assert row["rate"] > 1024
    assert row["throttle_time_max_ms"] > 0
    assert throttles, "the client reported no throttle time"


def test_viewers_read_but_may_not_change_quotas(viewer: APIClient, anonymous: APIClient) -> None:
    assert anonymous.get(URL).status_code == 401
    body = {"client_id": "c", "values": {"producer_byte_rate": 1}}
    for method in ("post", "put"):
        refused = getattr(viewer, method)(URL, body, format="json")
        assert refused.status_code == 403
        assert "needs the operator role" in refused.json()["message"]
    assert viewer.delete(f"{URL}?client_id=c").status_code == 403
    assert AuditEntry.objects.filter(path=URL, status_code=403).count() == 3


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"user": "u", "values": {"producer_byte_rat": 10}}, "Invalid configuration key"),
        ({"user": "u", "values": {"producer_byte_rate": -5}}, "must be a positive value"),
        ({"user": "u", "values": {"consumer_byte_rate": 1.5}}, "must be a Long value"),
        ({"user": "u", "values": {"producer_byte_rate": "fast"}}, "valid number"),
        ({"user": "u", "remove": ["bogus"]}, "Invalid configuration key bogus"),
        ({"user": "u"}, "nothing to change"),
        ({"values": {"producer_byte_rate": 10}}, "needs a user and/or a client_id"),
        ({"user": "", "values": {"producer_byte_rate": 10}}, "user: This field may not be blank"),
        ({"client-id": "c", "values": {"producer_byte_rate": 10}}, "client-id: unknown field"),
        (["not", "an", "object"], "must be a JSON object"),
    ],
)
def test_bad_input_is_a_400_naming_the_problem(
    operator: APIClient, body: object, message: str
) -> None:
    refused = operator.post(URL, body, format="json")
    assert refused.status_code == 400, refused.content
    assert message in refused.json()["message"]


def test_bad_delete_is_a_400_naming_the_problem(operator: APIClient) -> None:
    unknown = operator.delete(f"{URL}?client=c")
    assert unknown.status_code == 400
    assert "unknown query parameter client" in unknown.json()["message"]
    bad_key = operator.delete(f"{URL}?client_id=c&key=bogus_rate")
    assert "Invalid configuration key bogus_rate" in bad_key.json()["message"]
    nothing = operator.delete(URL)
    assert "needs a user and/or a client_id" in nothing.json()["message"]

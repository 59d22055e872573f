"""``/api/scram-users/`` against the shared 3-broker cluster: changes go through the brokers'
Describe/AlterUserScramCredentials (seen by a Kafka AdminClient), no secret is ever returned or
audited, bad input is a 400 naming the field, and only admins may read or change users."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from controlplane.models import AuditEntry
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.django_db

URL = "/api/scram-users/"


def _on_brokers(cluster: Cluster, user: str) -> dict[str, int]:
    """mechanism → iterations as the brokers describe ``user`` (empty when it has none)."""
    from confluent_kafka import KafkaException

    admin = cluster.admin()  # the client must live until the answer
    try:
        found = admin.describe_user_scram_credentials([user])[user].result(10)
    except KafkaException as exc:
        assert exc.args[0].name() == "RESOURCE_NOT_FOUND", exc
        return {}
    return {
        info.mechanism.name.replace("_", "-"): info.iterations
        for info in found.scram_credential_infos
    }


def test_upsert_list_change_and_delete_reach_the_brokers_without_secrets(
    cp_cluster: Cluster, admin: APIClient, unique: Callable[[str], str]
) -> None:
    user = unique("svc")
    created = admin.post(
        URL, {"name": user, "mechanism": "scram-sha-256", "password": "pw-one"}, format="json"
    )
    assert created.status_code == 200, created.content
    assert created.json() == {
        "name": user,
        "mechanisms": [{"mechanism": "SCRAM-SHA-256", "iterations": 4096}],
    }
    second = admin.post(
        URL,
        {"name": user, "mechanism": "SCRAM-SHA-512", "password": "pw-two", "iterations": 8192},
        format="json",
    )
    assert second.status_code == 200, second.content
    assert _on_brokers(cp_cluster, user) == {"SCRAM-SHA-256": 4096, "SCRAM-SHA-512": 8192}

    listed = admin.get(URL)
    assert listed.status_code == 200
    mine = next(u for u in listed.json() if u["name"] == user)
    assert mine["mechanisms"] == [
        {"mechanism": "SCRAM-SHA-256", "iterations": 4096},
        {"mechanism": "SCRAM-SHA-512", "iterations": 8192},
    ]
    assert b"pw-" not in listed.content

    # A new password (and iteration count) for an existing credential is an upsert.
    changed = admin.post(
        URL,
        {"name": user, "mechanism": "SCRAM-SHA-256", "password": "pw-3", "iterations": 5000},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    assert _on_brokers(cp_cluster, user)["SCRAM-SHA-256"] == 5000

    one = admin.delete(f"{URL}{user}/?mechanism=SCRAM-SHA-256")
    assert one.status_code == 200, one.content
    assert one.json() == {"name": user, "deleted": ["SCRAM-SHA-256"]}
    assert _on_brokers(cp_cluster, user) == {"SCRAM-SHA-512": 8192}
    rest = admin.delete(f"{URL}{user}/")
    assert rest.json() == {"name": user, "deleted": ["SCRAM-SHA-512"]}
    assert _on_brokers(cp_cluster, user) == {}
    gone = admin.delete(f"{URL}{user}/")
    assert gone.status_code == 404
    assert user in gone.json()["message"]

    entries = AuditEntry.objects.filter(path__startswith=URL).order_by("id")
    assert [(e.method, e.status_code) for e in entries] == [
        ("POST", 200),
        ("POST", 200),
        ("POST", 200),
        ("DELETE", 200),
        ("DELETE", 200),
        ("DELETE", 404),
    ]
    assert all("pw-" not in e.request_body for e in entries)
    assert '"password": "***"' in entries[0].request_body
    assert entries[3].action == "scram-users-detail"
    assert entries[3].target == f"name={user}"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"mechanism": "SCRAM-SHA-256", "password": "x"}, "name"),
        ({"name": "a/b", "mechanism": "SCRAM-SHA-256", "password": "x"}, "name"),
        ({"name": "carol", "mechanism": "MD5", "password": "x"}, "mechanism"),
        ({"name": "carol", "mechanism": "SCRAM-SHA-256"}, "password"),
        (
            {"name": "carol", "mechanism": "SCRAM-SHA-256", "password": "x", "iterations": 10},
            "iterations",
        ),
        (
            {"name": "carol", "mechanism": "SCRAM-SHA-256", "password": "x", "iterations": 10**6},
            "iterations",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(
    cp_cluster: Cluster, admin: APIClient, body: dict, field: str
) -> None:
    response = admin.post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["message"].startswith(field), response.json()


def test_bad_delete_mechanism_and_non_object_body_are_400(
    cp_cluster: Cluster, admin: APIClient
) -> None:
    response = admin.delete(f"{URL}carol/?mechanism=MD5")
    assert response.status_code == 400
    assert "mechanism" in response.json()["message"]
    listed = admin.post(URL, ["carol"], format="json")
    assert listed.status_code == 400
    assert "JSON object" in listed.json()["message"]


def test_only_admins_read_or_change_scram_users(
    cp_cluster: Cluster, viewer: APIClient, operator: APIClient, anonymous: APIClient
) -> None:
    body = {"name": "mallory", "mechanism": "SCRAM-SHA-256", "password": "x"}
    for client in (viewer, operator):
        assert client.get(URL).status_code == 403
        refused = client.post(URL, body, format="json")
        assert refused.status_code == 403
        assert "needs the admin role" in refused.json()["message"]
        assert client.delete(f"{URL}mallory/").status_code == 403
    assert anonymous.get(URL).status_code == 401
    assert _on_brokers(cp_cluster, "mallory") == {}

"""REST Proxy v3 ACLs (list with filters, create, batch create, delete) against the shared
3-broker cluster: changes are visible to a Kafka AdminClient, roles are enforced (operator reads,
admin writes), bad input is a 400 naming the field, and every change is audited."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AclBindingFilter
from django.conf import settings
from rest_framework.test import APIClient

from controlplane.models import AuditEntry
from tests.weir.cluster.conftest import Cluster

pytestmark = pytest.mark.django_db


def _acls() -> str:
    return f"/kafka/v3/clusters/{settings.WEIR_CLUSTER_ID}/acls"


def _acl(topic: str, principal: str = "User:alice", operation: str = "READ") -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": principal,
        "host": "*",
        "operation": operation,
        "permission": "ALLOW",
    }


def _on_brokers(cluster: Cluster, topic: str) -> set[tuple[str, str]]:
    flt = AclBindingFilter("TOPIC", topic, "ANY", None, None, "ANY", "ANY")
    admin = cluster.admin()  # the client must live until the answer
    found = admin.describe_acls(flt).result(10)
    return {(b.principal, b.operation.name) for b in found}


def test_create_list_filter_batch_delete_round_trip_visible_on_brokers(
    cp_cluster: Cluster, admin: APIClient, unique: Callable[[str], str]
) -> None:
    topic = unique("acl-topic")
    created = admin.post(_acls(), _acl(topic), format="json")
    assert created.status_code == 201, created.content
    batch = admin.post(
        f"{_acls()}:batch",
        {"data": [_acl(topic, "User:bob", "WRITE"), _acl(topic, "User:bob", "DESCRIBE")]},
        format="json",
    )
    assert batch.status_code == 204, batch.content
    assert _on_brokers(cp_cluster, topic) == {
        ("User:alice", "READ"),
        ("User:bob", "WRITE"),
        ("User:bob", "DESCRIBE"),
    }

    listed = admin.get(_acls(), {"resource_type": "TOPIC", "resource_name": topic})
    assert listed.status_code == 200
    body = listed.json()
    assert body["kind"] == "KafkaAclList"
    assert len(body["data"]) == 3
    alice = next(a for a in body["data"] if a["principal"] == "User:alice")
    assert alice == {
        "kind": "KafkaAcl",
        "metadata": alice["metadata"],
        "cluster_id": settings.WEIR_CLUSTER_ID,
        **_acl(topic),
    }
    assert "/acls?" in alice["metadata"]["self"]
    only_bob = admin.get(_acls(), {"resource_name": topic, "principal": "User:bob"}).json()
    assert {a["operation"] for a in only_bob["data"]} == {"WRITE", "DESCRIBE"}

    deleted = admin.delete(f"{_acls()}?resource_name={topic}&principal=User:bob")
    assert deleted.status_code == 200, deleted.content
    assert {a["operation"] for a in deleted.json()["data"]} == {"WRITE", "DESCRIBE"}
    assert _on_brokers(cp_cluster, topic) == {("User:alice", "READ")}
    admin.delete(f"{_acls()}?resource_name={topic}")
    assert _on_brokers(cp_cluster, topic) == set()

    audited = list(AuditEntry.objects.filter(path__startswith=_acls()).order_by("id"))
    assert [(e.method, e.status_code) for e in audited] == [
        ("POST", 201),
        ("POST", 204),
        ("DELETE", 200),
        ("DELETE", 200),
    ]
    assert topic in audited[0].request_body


def test_viewer_cannot_read_and_operator_cannot_change_acls(
    cp_cluster: Cluster, viewer: APIClient, operator: APIClient
) -> None:
    assert viewer.get(_acls()).status_code == 403
    assert operator.get(_acls()).status_code == 200
    assert operator.post(_acls(), _acl("t"), format="json").status_code == 403
    batch = operator.post(f"{_acls()}:batch", {"data": [_acl("t")]}, format="json")
    assert batch.status_code == 403
    assert operator.delete(f"{_acls()}?resource_name=t").status_code == 403
    assert AuditEntry.objects.filter(path__startswith=_acls(), status_code=403).count() == 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("resource_type", "TABLE"),
        ("pattern_type", "MATCH"),
        ("operation", "FLY"),
        ("permission", "MAYBE"),
        ("principal", "alice"),
        ("host", ""),
    ],
)
def test_bad_acl_body_is_400_naming_the_field(
    cp_cluster: Cluster, admin: APIClient, field: str, value: str
) -> None:
    response = admin.post(_acls(), {**_acl("t"), field: value}, format="json")
    assert response.status_code == 400
    assert response.json()["error_code"] == 400
    assert field in response.json()["message"]


def test_bad_batch_and_bad_filters_are_400_naming_the_field(
    cp_cluster: Cluster, admin: APIClient
) -> None:
    empty = admin.post(f"{_acls()}:batch", {"data": []}, format="json")
    assert empty.status_code == 400 and "data" in empty.json()["message"]
    bad = admin.get(_acls(), {"operation": "FLY"})
    assert bad.status_code == 400 and "operation" in bad.json()["message"]
    bad_delete = admin.delete(f"{_acls()}?permission=MAYBE")
    assert bad_delete.status_code == 400 and "permission" in bad_delete.json()["message"]


def test_unknown_cluster_is_404(admin: APIClient) -> None:
    assert admin.get("/kafka/v3/clusters/nope/acls").status_code == 404

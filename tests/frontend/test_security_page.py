"""The security page in the browser: an admin adds, filters and removes an ACL and creates,
re-passwords and deletes a SCRAM user, each change checked with a Kafka AdminClient against
the brokers; API errors reach the form; viewers and operators get no entry and a 403."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AclBindingFilter
from playwright.sync_api import Page, expect

from tests.controlplane_fixtures import Dashboard
from tests.frontend.dialogs import confirm
from tests.weir.cluster.conftest import Cluster


def acls_on_brokers(cluster: Cluster, principal: str) -> set[tuple[str, str, str]]:
    flt = AclBindingFilter("ANY", None, "ANY", principal, None, "ANY", "ANY")
    admin = cluster.admin()  # the client must live until the answer
    return {
        (b.name, b.operation.name, b.permission_type.name)
        for b in admin.describe_acls(flt).result(10)
    }


def scram_on_brokers(cluster: Cluster, user: str) -> dict[str, int]:
    admin = cluster.admin()
    try:
        found = admin.describe_user_scram_credentials([user])[user].result(10)
    except KafkaException as exc:
        assert exc.args[0].name() == "RESOURCE_NOT_FOUND", exc
        return {}
    return {i.mechanism.name.replace("_", "-"): i.iterations for i in found.scram_credential_infos}


def test_admin_adds_filters_and_removes_an_acl(
    page_as: Callable[[str], Page], cp_cluster: Cluster, shot: Callable[[Page, str], Path]
) -> None:
    suffix = uuid.uuid4().hex[:8]
    principal, topic = f"User:app-{suffix}", f"orders-{suffix}"
    page = page_as("admin")
    page.goto("/")
    page.locator('nav.side a[data-nav="security"]').click()
    expect(page).to_have_url(re.compile(r"/security/$"))
    expect(page.locator("#acl-count")).to_have_text(re.compile(r"^\d+ ACLs?$"))

    page.click("#acl-add-toggle")
    page.fill("#acl-principal", "app")  # no TYPE: the API's message is shown
    page.fill("#acl-resource-name", topic)
    page.click("#acl-submit")
    confirm(page, "Add this ACL?")
    expect(page.locator("#acl-error")).to_contain_text("principal: must be TYPE:NAME")
    expect(page.locator(".toast.error", has_text="must be TYPE:NAME")).to_be_visible()

    page.fill("#acl-principal", principal)
    page.select_option("#acl-operation", "WRITE")
    page.click("#acl-submit")
    confirm(page, "Add this ACL?")
    expect(page.locator(".toast.ok", has_text="ACL added")).to_be_visible()
    row = page.locator(f'#acls-table tr[data-principal="{principal}"]')
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(2)).to_have_text("WRITE")
    expect(row.locator("td").nth(5)).to_have_text(topic)
    assert acls_on_brokers(cp_cluster, principal) == {(topic, "WRITE", "ALLOW")}

    page.fill("#acl-filter-principal", principal)
    page.click("#acl-filter-apply")
    expect(page.locator("#acls-table tbody tr")).to_have_count(1)
    expect(page.locator("#acl-count")).to_have_text("1 ACL")
    shot(page, "security")
    page.fill("#acl-filter-principal", f"User:nobody-{suffix}")
    page.click("#acl-filter-apply")
    expect(page.locator("#acls-table tbody")).to_contain_text("No ACL matches the filter.")
    page.fill("#acl-filter-principal", principal)
    page.click("#acl-filter-apply")

    row.locator("button.acl-remove").click()
    confirm(page, "Remove this ACL?")
    expect(page.locator(".toast.ok", has_text="1 ACL removed")).to_be_visible()
    expect(row).to_have_count(0)
    assert acls_on_brokers(cp_cluster, principal) == set()


def test_admin_creates_repasswords_and_deletes_a_scram_user(
    page_as: Callable[[str], Page], cp_cluster: Cluster
) -> None:
    user = f"svc-{uuid.uuid4().hex[:8]}"
    page = page_as("admin")
    page.goto("/security/")
    expect(page.locator("#scram-count")).to_have_text(re.compile(r"^\d+ users?$"))

    page.fill("#scram-name", user)
    page.select_option("#scram-mechanism", "SCRAM-SHA-512")
    page.fill("#scram-password", "first-secret")
    page.fill("#scram-iterations", "10")  # below Kafka's minimum: the API says so
    page.click("#scram-submit")
    confirm(page, f"Create SCRAM user {user}?")
    expect(page.locator("#scram-error")).to_contain_text("iterations")
    assert scram_on_brokers(cp_cluster, user) == {}

    page.fill("#scram-iterations", "8192")
    page.click("#scram-submit")
    confirm(page, f"Create SCRAM user {user}?")
    expect(page.locator(".toast.ok", has_text=f"SCRAM user {user} created")).to_be_visible()
    row = page.locator(f'#scram-table tr[data-user="{user}"]')
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(1)).to_have_text("SCRAM-SHA-512")
    expect(row.locator("td").nth(2)).to_have_text("8,192")
    expect(page.locator("#scram-password")).to_have_value("")
    assert scram_on_brokers(cp_cluster, user) == {"SCRAM-SHA-512": 8192}

    row.locator("button.scram-change").click()
    expect(page.locator("#scram-name")).to_have_value(user)
    page.fill("#scram-password", "second-secret")
    page.fill("#scram-iterations", "4096")
    page.click("#scram-submit")
    confirm(page, f"Change {user}'s password?")
    expect(page.locator(".toast.ok", has_text=f"Password of {user} changed")).to_be_visible()
    expect(row.locator("td").nth(2)).to_have_text("4,096")
    assert scram_on_brokers(cp_cluster, user) == {"SCRAM-SHA-512": 4096}
    assert "secret" not in page.content()

    row.locator("button.scram-delete").click()
    confirm(page, f"Delete {user}'s SCRAM-SHA-512 credential?", typed=user)
    expect(
        page.locator(".toast.ok", has_text=f"SCRAM-SHA-512 credential of {user} deleted")
    ).to_be_visible()
    expect(row).to_have_count(0)
    assert scram_on_brokers(cp_cluster, user) == {}


def test_viewers_and_operators_get_no_security_entry_and_a_403(
    page_as: Callable[[str], Page], dashboard: Dashboard
) -> None:
    for role in ("viewer", "operator"):
        page = page_as(role)
        page.goto("/")
        expect(page.locator('nav.side a[data-nav="topics"]')).to_have_count(1)
        expect(page.locator('nav.side a[data-nav="security"]')).to_have_count(0)
        response = page.goto("/security/")
        assert response is not None and response.status == 403
        expect(page.locator("main")).to_contain_text("This page needs the admin role.")
        expect(page.locator("#acls-table")).to_have_count(0)

"""The security page (``/security/``, admins only): the cluster's ACLs and SCRAM users.

Everything on it is the REST API's: the browser lists, adds and removes ACLs with
``/kafka/v3/clusters/{id}/acls`` and SCRAM users with ``/api/scram-users/``, and shows those
endpoints' error messages as they are. The page itself renders no Kafka data, so it loads even
when the brokers are slow, and says so in the tables when a call fails. Non-admins get no
navigation entry (``frontend.context.ADMIN_ONLY``) and a 403 here.
"""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path

from brokers.rest.acls import OPERATIONS, PATTERN_TYPES, PERMISSIONS, RESOURCE_TYPES
from controlplane.roles import ADMIN
from controlplane.scram_users import DEFAULT_ITERATIONS, MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS
from frontend.pages.base import Page

__all__ = ["urlpatterns"]


class SecurityPage(Page):
    template_name = "frontend/security/index.html"
    assets = ("topics.css", "security.js")
    title = "Security"
    role = ADMIN

    def page_context(self, **kwargs: Any) -> dict[str, Any]:
        return dict(
            resource_types=RESOURCE_TYPES,
            pattern_types=PATTERN_TYPES,
            operations=OPERATIONS,
            permissions=PERMISSIONS,
            mechanisms=MECHANISMS,
            default_iterations=DEFAULT_ITERATIONS,
            min_iterations=MIN_ITERATIONS,
            max_iterations=MAX_ITERATIONS,
        )


urlpatterns: list[URLPattern] = [
    path("security/", SecurityPage.as_view(), name="dashboard-security"),
]

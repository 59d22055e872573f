"""Template context for every dashboard page: navigation, the user's role, the cluster."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from controlplane.roles import ADMIN, OPERATOR, has_role, role_of

__all__ = ["ADMIN_ONLY", "NAV", "dashboard"]

# (key, label, url) of the navigation bar, in order.
NAV: tuple[tuple[str, str, str], ...] = (
    ("overview", "Overview", "/"),
    ("brokers", "Brokers", "/brokers/"),
    ("topics", "Topics", "/topics/"),
    ("groups", "Consumer groups", "/groups/"),
    ("mirrors", "Mirrors", "/mirrors/"),
    ("schemas", "Schemas", "/schemas/"),
    ("dlq", "Dead letters", "/dlq/"),
    ("reassignments", "Reassignments", "/reassignments/"),
    ("jobs", "Jobs", "/jobs/"),
    ("analytics", "Analytics", "/analytics/"),
    ("quotas", "Quotas", "/quotas/"),
    ("coordination", "Coordination", "/coordination/"),
    ("security", "Security", "/security/"),
)
# Entries only admins see (their pages answer 403 to everyone else).
ADMIN_ONLY = frozenset({"security"})


def dashboard(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    is_admin = has_role(user, ADMIN)
    return {
        "nav_items": tuple(item for item in NAV if is_admin or item[0] not in ADMIN_ONLY),
        "role": role_of(user),
        "can_operate": has_role(user, OPERATOR),
        "is_admin": is_admin,
        "cluster_id": settings.WEIR_CLUSTER_ID,
    }

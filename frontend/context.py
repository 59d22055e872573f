"""Template context for every dashboard page: navigation, the user's role, the cluster."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest

from controlplane.roles import ADMIN, OPERATOR, has_role, role_of

__all__ = ["NAV", "dashboard"]

# (key, label, url) of the navigation bar, in order.
NAV = (
    ("overview", "Overview", "/"),
    ("brokers", "Brokers", "/brokers/"),
    ("topics", "Topics", "/topics/"),
    ("groups", "Consumer groups", "/groups/"),
    ("reassignments", "Reassignments", "/reassignments/"),
    ("jobs", "Jobs", "/jobs/"),
    ("analytics", "Analytics", "/analytics/"),
)


def dashboard(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {
        "nav_items": NAV,
        "role": role_of(user),
        "can_operate": has_role(user, OPERATOR),
        "is_admin": has_role(user, ADMIN),
        "cluster_id": settings.WEIR_CLUSTER_ID,
    }

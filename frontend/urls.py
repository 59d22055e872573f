"""Dashboard routes: every page module's ``urlpatterns`` (mounted at the site root)."""

from __future__ import annotations

from django.urls import URLPattern

from frontend.pages import (
    analytics,
    auth,
    brokers,
    coordination,
    dlq,
    groups,
    jobs,
    messages,
    mirrors,
    overview,
    quotas,
    reassignments,
    schemas,
    security,
    topics,
)

urlpatterns: list[URLPattern] = [
    *auth.urlpatterns,
    *overview.urlpatterns,
    *brokers.urlpatterns,
    *topics.urlpatterns,
    *messages.urlpatterns,
    *groups.urlpatterns,
    *mirrors.urlpatterns,
    *schemas.urlpatterns,
    *dlq.urlpatterns,
    *reassignments.urlpatterns,
    *jobs.urlpatterns,
    *analytics.urlpatterns,
    *quotas.urlpatterns,
    *coordination.urlpatterns,
    *security.urlpatterns,
]

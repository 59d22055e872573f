"""Dashboard routes: every page module's ``urlpatterns`` (mounted at the site root)."""

from __future__ import annotations

from django.urls import URLPattern

from frontend.pages import auth, brokers, groups, messages, overview, reassignments, topics

urlpatterns: list[URLPattern] = [
    *auth.urlpatterns,
    *overview.urlpatterns,
    *brokers.urlpatterns,
    *topics.urlpatterns,
    *messages.urlpatterns,
    *groups.urlpatterns,
    *reassignments.urlpatterns,
]

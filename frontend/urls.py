"""Dashboard routes: every page module's ``urlpatterns`` (mounted at the site root)."""

from __future__ import annotations

from django.urls import URLPattern

from frontend.pages import auth, overview

urlpatterns: list[URLPattern] = [*auth.urlpatterns, *overview.urlpatterns]

"""Dashboard pages: groups (filled in by the groups work)."""

from __future__ import annotations

from django.urls import URLPattern

__all__ = ["urlpatterns"]

urlpatterns: list[URLPattern] = []

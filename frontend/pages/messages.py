"""Dashboard pages: messages (filled in by the messages work)."""

from __future__ import annotations

from django.urls import URLPattern

__all__ = ["urlpatterns"]

urlpatterns: list[URLPattern] = []

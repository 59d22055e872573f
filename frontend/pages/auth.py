"""Log in and out of the dashboard (Django's session views with Weir's template)."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import URLPattern, path

__all__ = ["urlpatterns"]

urlpatterns: list[URLPattern] = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="frontend/login.html", redirect_authenticated_user=True
        ),
        name="dashboard-login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="dashboard-logout"),
]

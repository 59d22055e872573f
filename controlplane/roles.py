"""Roles: viewer, operator, admin (Django groups of those names), and the API's permission.

Viewers read; operators also operate (produce, reset offsets, rebalance, reassign, elect);
admins also create and delete topics and manage users. A superuser is an admin. A view says
which role each HTTP method needs with ``roles = {"POST": ADMIN, ...}``; without an entry,
safe methods need ``viewer`` and everything else ``operator``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from rest_framework.permissions import SAFE_METHODS, BasePermission

__all__ = ["ADMIN", "OPERATOR", "ROLES", "VIEWER", "RolePermission", "has_role", "role_of"]

VIEWER = "viewer"
OPERATOR = "operator"
ADMIN = "admin"
ROLES = (VIEWER, OPERATOR, ADMIN)
_RANK = {name: rank for rank, name in enumerate(ROLES)}


def role_of(user: AbstractBaseUser | AnonymousUser | None) -> str | None:
    """The strongest role ``user`` holds, or None."""
    if user is None or not user.is_authenticated or not user.is_active:
        return None
    if getattr(user, "is_superuser", False):
        return ADMIN
    names = set(user.groups.values_list("name", flat=True))  # type: ignore[union-attr]
    held = [name for name in ROLES if name in names]
    return held[-1] if held else None


def has_role(user: Any, needed: str) -> bool:
    have = role_of(user)
    return have is not None and _RANK[have] >= _RANK[needed]


def required_role(view: Any, method: str) -> str:
    explicit = getattr(view, "roles", None) or {}
    if method in explicit:
        return explicit[method]
    return VIEWER if method in SAFE_METHODS else OPERATOR


class RolePermission(BasePermission):
    """Authenticated users whose role covers the method; 401 for anonymous, 403 otherwise."""

    message = "You do not have permission to perform this action."

    def has_permission(self, request: Any, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False  # DRF turns this into 401 with a WWW-Authenticate challenge
        needed = required_role(view, request.method)
        if has_role(request.user, needed):
            return True
        have = role_of(request.user) or "no role"
        self.message = (
            f"{request.method} {request.path} needs the {needed} role; "
            f"user {request.user.get_username()!r} has {have}"
        )
        return False

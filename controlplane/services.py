"""Writes on users, roles and tokens (HackSoft style: keyword-only, typed, one job each)."""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction
from rest_framework.authtoken.models import Token

from controlplane.errors import Conflict, NotFound, Unprocessable
from controlplane.roles import ROLES

__all__ = ["ensure_role_groups", "token_rotate", "user_create", "user_delete", "user_update"]


def ensure_role_groups() -> None:
    """The three role groups exist (a migration creates them; this repairs a database)."""
    for name in ROLES:
        Group.objects.get_or_create(name=name)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise Unprocessable(f"role must be one of {', '.join(ROLES)}, got {role!r}")


@transaction.atomic
def user_create(*, username: str, password: str, role: str, email: str = "") -> User:
    _check_role(role)
    if User.objects.filter(username=username).exists():
        raise Conflict(f"user {username!r} already exists")
    user = User.objects.create_user(username=username, password=password, email=email)
    ensure_role_groups()
    user.groups.set([Group.objects.get(name=role)])
    return user


@transaction.atomic
def user_update(
    *,
    username: str,
    role: str | None = None,
    password: str | None = None,
    is_active: bool | None = None,
) -> User:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"user {username!r} does not exist")
    if role is not None:
        _check_role(role)
        ensure_role_groups()
        user.groups.set([Group.objects.get(name=role)])
    if password is not None:
        user.set_password(password)
    if is_active is not None:
        user.is_active = is_active
    user.save()
    return user


def user_delete(*, username: str) -> None:
    deleted, _ = User.objects.filter(username=username).delete()
    if not deleted:
        raise NotFound(f"user {username!r} does not exist")


def token_rotate(*, user: User) -> Token:
    """A new API token for ``user`` (the old one stops working)."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)

"""``manage.py ensure-admin``: make sure an admin account exists and say how to log in.

``make run`` calls it after ``migrate``. The first run creates the user (default ``admin``)
with the password from ``WEIR_ADMIN_PASSWORD`` or a generated one, written to
``--password-file`` (mode 600) so later runs can print it again. An existing account is left
as it is (its password is never reset behind the operator's back).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from controlplane.roles import ADMIN
from controlplane.services import ensure_role_groups


class Command(BaseCommand):
    help = "Create the admin account if it does not exist and print how to log in."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin", help="account name (default admin)")
        parser.add_argument(
            "--password-file",
            default="data/admin-password",
            help="where a generated password is kept (default data/admin-password)",
        )
        parser.add_argument(
            "--url", default="http://127.0.0.1:8000", help="the web app's address, for the message"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        if not username.strip():
            raise CommandError("--username must not be empty")
        password_file = Path(options["password_file"])
        ensure_role_groups()
        user = User.objects.filter(username=username).first()
        if user is None:
            password = os.environ.get("WEIR_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
            user = User.objects.create_superuser(username=username, password=password, email="")
            from django.contrib.auth.models import Group

            user.groups.add(Group.objects.get(name=ADMIN))
            if "WEIR_ADMIN_PASSWORD" not in os.environ:
                password_file.parent.mkdir(parents=True, exist_ok=True)
                password_file.write_text(password + "\n")
                password_file.chmod(0o600)
            self.stdout.write(f"created admin account {username!r}")
        url = options["url"].rstrip("/")
        if "WEIR_ADMIN_PASSWORD" in os.environ:
            where = "the password in WEIR_ADMIN_PASSWORD"
        elif password_file.exists():
            where = f"password {password_file.read_text().strip()} (kept in {password_file})"
        else:
            where = "the password you set for it"
        self.stdout.write(
            f"Dashboard: log in at {url}/ as {username!r} with {where}.\n"
            f"API: curl -u {username}:<password> {url}/api/me/  ·  docs: {url}/api/docs/  ·  "
            f"REST proxy: {url}/kafka/v3/clusters"
        )

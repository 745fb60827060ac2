"""Create the first admin user once, and print its login (used by ``make run``); ``--reset``
issues a new password for it when the old one is lost."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.models import CouncilMember


def _keep(path: Path, username: str, password: str) -> None:
    """The login in RABS_ADMIN_CREDENTIALS_FILE, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    os.chmod(path, 0o600)
    path.write_text(json.dumps({"username": username, "password": password}))


class Command(BaseCommand):
    help = (
        "Create the 'admin' superuser with a generated password if no superuser exists, keep "
        "the login in RABS_ADMIN_CREDENTIALS_FILE (var/, mode 600) and print it. --reset: give "
        "the admin (or --username) a new generated password, kept and printed the same way."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset",
            action="store_true",
            help="issue a new password for the admin user (the old one stops working)",
        )
        parser.add_argument(
            "--username",
            default="",
            help="with --reset: the superuser to reset (default: admin, or the only superuser)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.RABS_ADMIN_CREDENTIALS_FILE)
        if options["reset"]:
            self._reset(path, options["username"])
            return
        user_model = get_user_model()
        if not user_model.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            user = user_model.objects.create_superuser(
                username="admin", email="admin@rabs.local", password=password
            )
            # The first admin can also decide approvals, including escalated ones.
            user.groups.add(*Group.objects.filter(name__in=["reviewers", "senior_reviewers"]))
            # …and holds the council's first seat: constitutional changes are proposals from
            # the start (seat more members by proposal; docs/council.md).
            if not CouncilMember.objects.exists():
                CouncilMember.objects.create(user=user)
            _keep(path, "admin", password)
        if path.exists():
            login = json.loads(path.read_text())
            self.stdout.write(
                f"Admin login: {login['username']} / {login['password']}  "
                "(change it in the admin; this file only remembers the last one issued here)"
            )
        else:
            self.stdout.write(
                "An admin user already exists; use its own password. Lost it? "
                "`manage.py ensure_admin --reset` issues a new one."
            )

    def _reset(self, path: Path, username: str) -> None:
        superusers = get_user_model().objects.filter(is_superuser=True)
        if username:
            user = superusers.filter(username=username).first()
            if user is None:
                raise CommandError(f"no superuser named {username!r}")
        else:
            user = superusers.filter(username="admin").first()
            if user is None:
                found = list(superusers[:2])
                if len(found) != 1:
                    raise CommandError(
                        "no superuser named 'admin'; name the one to reset with --username"
                        if found
                        else "no superuser yet: run `manage.py ensure_admin` without --reset"
                    )
                user = found[0]
        password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.is_active = True
        user.save(update_fields=["password", "is_active"])
        _keep(path, user.get_username(), password)
        self.stdout.write(
            f"Admin login: {user.get_username()} / {password}  "
            "(a new password: the old one no longer works; kept in "
            f"{path}, readable by you only)"
        )

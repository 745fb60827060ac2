"""Create the first admin user once, and print its login (used by ``make run``)."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from brainframe.models import CouncilMember


class Command(BaseCommand):
    help = (
        "Create the 'admin' superuser with a generated password if no superuser exists, keep "
        "the login in RABS_ADMIN_CREDENTIALS_FILE (var/, mode 600) and print it."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(settings.RABS_ADMIN_CREDENTIALS_FILE)
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
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"username": "admin", "password": password}))
            os.chmod(path, 0o600)
        if path.exists():
            login = json.loads(path.read_text())
            self.stdout.write(
                f"Admin login: {login['username']} / {login['password']}  "
                "(change it in the admin; this file only remembers the first one)"
            )
        else:
            self.stdout.write("An admin user already exists; use its own password.")

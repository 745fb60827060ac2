"""Create (or bring up to date) the read replica's read-only role and its grants."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.services.registry.replica import ReplicaSetupError, replica_grants_sync


class Command(BaseCommand):
    help = (
        "Make the replica's read-only role (RABS_REPLICA_ROLE) exist, start read-only and read "
        "exactly the replica views staff exposed. Run on the primary; the standby replays it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--password-env",
            help="An environment variable holding the role's password (a deployment's replica "
            "is reached over the network; the embedded one over its socket needs none).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        password = None
        if options.get("password_env"):
            password = os.environ.get(options["password_env"], "")
            if not password:
                raise CommandError(f"{options['password_env']} is unset or empty")
        try:
            done = replica_grants_sync(password=password)
        except ReplicaSetupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{done['role']} may read: {', '.join(done['views']) or 'nothing'}")

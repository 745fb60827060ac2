"""Load ACL policies from a YAML file (documents separated by ``---``): all or none, each
checked as the admin checks it, errors with their line in the file (docs/access.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from brainframe.safety.policy.acl import AclDocumentError
from brainframe.services.access.acl import acl_load


class Command(BaseCommand):
    help = "Load ACL policies from a YAML file (created or updated by name; all or none)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="a YAML file of policies separated by ---")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            text = path.read_text()
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror}") from exc
        try:
            result = acl_load(text)
        except AclDocumentError as exc:
            raise CommandError(
                f"{path}: nothing loaded:\n" + "\n".join(f"  {line}" for line in exc.lines())
            ) from exc
        for label, names in (
            ("created", result.created),
            ("updated", result.updated),
            ("unchanged", result.unchanged),
        ):
            if names:
                self.stdout.write(f"{label}: {', '.join(names)}")

"""Print the ACL policies as one YAML file (``acl_load`` reads it back; docs/access.md)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brainframe.services.access.acl import acl_dump


class Command(BaseCommand):
    help = "Print the active ACL policies as YAML, highest priority first."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="inactive policies too")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(acl_dump(include_inactive=options["all"]), ending="")

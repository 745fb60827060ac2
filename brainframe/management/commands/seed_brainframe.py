"""Load the demo data (buckets, directives, agents, tools, policies, notes, tasks), or with
``--baseline`` only what a deployment governs with from the start (reviewer groups and roles,
buckets, prime directives, constitution, model prices)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brainframe.services.seed import seed_brainframe


class Command(BaseCommand):
    help = "Create any missing demo rows. Safe to run again: existing rows are left as they are."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--baseline",
            action="store_true",
            help="only the reviewer groups and roles, context buckets, prime directives, "
            "constitution and model prices: no demo agents, tools, policies, notes or tasks",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        created = seed_brainframe(baseline_only=options["baseline"])
        if not any(created.values()):
            self.stdout.write("Demo data already present; nothing to add.")
            return
        summary = ", ".join(f"{count} {kind}" for kind, count in created.items() if count)
        self.stdout.write(self.style.SUCCESS(f"Created {summary}."))

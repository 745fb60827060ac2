"""Load the demo data (buckets, directives, agents, tools, policies, notes, tasks)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from brainframe.services.seed import seed_brainframe


class Command(BaseCommand):
    help = "Create any missing demo rows. Safe to run again: existing rows are left as they are."

    def handle(self, *args: Any, **options: Any) -> None:
        created = seed_brainframe()
        if not any(created.values()):
            self.stdout.write("Demo data already present; nothing to add.")
            return
        summary = ", ".join(f"{count} {kind}" for kind, count in created.items() if count)
        self.stdout.write(self.style.SUCCESS(f"Created {summary}."))

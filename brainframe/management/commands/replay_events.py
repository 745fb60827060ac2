"""Rebuild a materialized view of the event log (docs/events.md): kanban, plans, alignment."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from brainframe.management.moments import since_moment
from brainframe.services.eventlog.views import VIEWS, view_replay


class Command(BaseCommand):
    help = "Rebuild a view (kanban, plans, agents, alignment) from the event log and the audit."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--view", required=True, choices=sorted(VIEWS))
        parser.add_argument("--since", help="a date or ISO time: only rows touched since then")

    def handle(self, *args: Any, **options: Any) -> None:
        since = since_moment(options["since"]) if options["since"] else None
        started = time.monotonic()
        written = view_replay(options["view"], since=since)
        self.stdout.write(
            f"{options['view']}: {written} row(s) rebuilt in {time.monotonic() - started:.2f}s"
        )

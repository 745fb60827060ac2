"""Rebuild a materialized view of the event log (docs/events.md): ``kanban`` or ``plans``."""

from __future__ import annotations

import time
from datetime import datetime
from datetime import time as dtime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from brainframe.services.views import VIEWS, view_replay


def _since(text: str) -> datetime:
    moment = parse_datetime(text)
    if moment is None:
        day = parse_date(text)
        if day is None:
            raise CommandError(f"--since: not a date or time: {text!r}")
        moment = datetime.combine(day, dtime.min)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


class Command(BaseCommand):
    help = "Rebuild a view (kanban, plans) from the event log: all of it, or what changed since."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--view", required=True, choices=sorted(VIEWS))
        parser.add_argument("--since", help="a date or ISO time: only rows touched since then")

    def handle(self, *args: Any, **options: Any) -> None:
        since = _since(options["since"]) if options["since"] else None
        started = time.monotonic()
        written = view_replay(options["view"], since=since)
        self.stdout.write(
            f"{options['view']}: {written} row(s) rebuilt in {time.monotonic() - started:.2f}s"
        )
